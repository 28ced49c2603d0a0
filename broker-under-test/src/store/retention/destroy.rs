//! The two-phase destroy of a CommitLog file (`MappedFile.destroy` over `ReferenceResource`,
//! retention reference A6).
//!
//! RocketMQ counts readers by hand (`hold`/`release`); here every reader holds an
//! `Arc<MappedFile>` for the length of its read, so the readers are the strong count minus the
//! owners. Phase one marks the file unavailable (reads of it find nothing from then on) and
//! remembers when; the file is deleted once no reader holds it, or, after
//! `destroyMapedFileIntervalForcibly`, even though one does. RocketMQ then unmaps under the
//! reader's feet; we only unlink: the mapping goes when the last reader drops its `Arc`, which
//! is memory-safe and, since reads are short, just as prompt.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::epoch_millis;
use crate::store::mapped_file::MappedFile;

/// `destroy(intervalForcibly)`: true when the file is gone from disk (the caller then drops it
/// from the file queue). `owners` is how many `Arc`s are not readers (the queue's, the
/// caller's snapshot).
pub(crate) fn destroy(file: &Arc<MappedFile>, owners: usize, interval_forcibly: Duration) -> bool {
    let begin = Instant::now();
    let now = epoch_millis();
    let first = file.shut_down(now);
    let readers = Arc::strong_count(file).saturating_sub(owners);
    let forced = now - first >= interval_forcibly.as_millis() as i64;
    let name = file.path().display();
    if readers > 0 && !forced {
        eprintln!("destroy mapped file[REF:{readers}] {name} Failed. cleanupOver: false");
        return false;
    }
    let outcome = match std::fs::remove_file(file.path()) {
        Ok(()) => "OK".to_owned(),
        Err(e) => format!("Failed ({e})"),
    };
    eprintln!(
        "delete file[REF:{readers}] {name} {outcome}, W:{} M:{}, {}",
        file.wrote(),
        file.flushed(),
        begin.elapsed().as_millis()
    );
    // Like RocketMQ, a failed unlink still counts as destroyed: the file is out of the queue.
    true
}

/// Epoch ms of the file's last modification (`File.lastModified`: 0 when unreadable, which
/// makes it expired, as in Java).
pub(crate) fn last_modified_millis(file: &MappedFile) -> i64 {
    std::fs::metadata(file.path())
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64)
}
