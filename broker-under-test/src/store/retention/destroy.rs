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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::config::FaultInjection;
    use crate::store::page_cache::PageCacheModel;

    /// A reader holding the file keeps it on disk through the first attempt; once the forced
    /// interval has passed it is unlinked anyway, and unmapped when the reader lets go.
    #[test]
    fn a_held_file_goes_after_the_forced_interval_and_unmaps_with_its_last_reader() {
        let dir = tempfile::tempdir().unwrap();
        let model = PageCacheModel::new(&FaultInjection::default());
        let path = dir.path().join(format!("{:020}", 0));
        let file = Arc::new(MappedFile::open(path.clone(), 0, 4096, None, &model).unwrap());
        assert_eq!(model.mapped_bytes(), 4096);
        let reader = Arc::clone(&file);
        assert!(!destroy(&file, 1, Duration::from_secs(3600)));
        assert!(!file.is_available(), "the first attempt shuts it down");
        assert!(path.exists());
        let mut out = Vec::new();
        assert!(!reader.read_into(0, 0, &mut out), "reads find nothing");
        assert!(destroy(&file, 1, Duration::ZERO), "forced");
        assert!(!path.exists());
        drop(file);
        assert_eq!(model.mapped_bytes(), 4096, "the reader still maps it");
        drop(reader);
        assert_eq!(model.mapped_bytes(), 0);
    }

    #[test]
    fn an_unheld_file_goes_at_the_first_attempt() {
        let dir = tempfile::tempdir().unwrap();
        let model = PageCacheModel::new(&FaultInjection::default());
        let path = dir.path().join(format!("{:020}", 4096));
        let file = Arc::new(MappedFile::open(path.clone(), 4096, 4096, None, &model).unwrap());
        assert!(destroy(&file, 1, Duration::from_secs(3600)));
        assert!(!path.exists());
        assert!(
            last_modified_millis(&file) == 0,
            "a deleted file reads as expired"
        );
    }
}
