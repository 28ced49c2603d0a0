//! Consume queues (§7.6): per topic-queue files of 20-byte entries
//! (CommitLog offset i64, size i32, tag hash i64), 300,000 entries per file.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};

use memmap2::{MmapOptions, MmapRaw};
use parking_lot::RwLock;

use super::error::StoreError;
use super::types::ArrivingListener;

pub(crate) const CQ_ENTRY_SIZE: usize = 20;
/// `mappedFileSizeConsumeQueue` = 300,000 entries.
pub(crate) const CQ_ENTRIES_PER_FILE: usize = 300_000;
/// The largest logical offset whose file and byte position still fit: a record recovered from a
/// damaged CommitLog can carry any queue offset in its header, which is not under the body CRC.
const MAX_LOGIC_OFFSET: i64 = i64::MAX / CQ_ENTRY_SIZE as i64 - CQ_ENTRIES_PER_FILE as i64;

/// One consume-queue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CqEntry {
    pub(crate) commit_log_offset: i64,
    pub(crate) size: i32,
    pub(crate) tag_hash: i64,
}

struct CqFile {
    map: MmapRaw,
    _file: std::fs::File,
    path: PathBuf,
}

impl CqFile {
    /// The entry in slot `slot` of this file.
    fn entry(&self, slot: usize) -> CqEntry {
        let pos = slot * CQ_ENTRY_SIZE;
        // SAFETY: callers pass a slot below the queue's max offset: written and immutable.
        let b = unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(pos), CQ_ENTRY_SIZE) };
        let i64_at = |at: usize| i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        CqEntry {
            commit_log_offset: i64_at(0),
            size: i32::from_be_bytes(b[8..12].try_into().expect("4 bytes")),
            tag_hash: i64_at(12),
        }
    }
}

/// The files of one queue: `files[i]` holds entries from `(first_file_no + i) × 300,000` on.
#[derive(Default)]
struct CqFiles {
    first_file_no: usize,
    files: Vec<Arc<CqFile>>,
}

/// One topic-queue's consume queue. Written only by the dispatcher (one at a time); its old
/// files are deleted by CleanConsumeQueueService (retention). Readers hold `files` while they
/// read a slot, so a file is deleted only when no reader is in it: the 60 s forced destroy of
/// RocketMQ's consume-queue files never has to wait here.
pub(crate) struct ConsumeQueue {
    dir: PathBuf,
    files: RwLock<CqFiles>,
    /// Number of entries written; readers see entries below it.
    max_offset: AtomicI64,
    /// `minLogicOffset / 20`: the first entry whose CommitLog record still exists.
    min_offset: AtomicI64,
}

impl ConsumeQueue {
    fn new(dir: PathBuf) -> Self {
        ConsumeQueue {
            dir,
            files: RwLock::new(CqFiles::default()),
            max_offset: AtomicI64::new(0),
            min_offset: AtomicI64::new(0),
        }
    }

    pub(crate) fn max_offset(&self) -> i64 {
        self.max_offset.load(Ordering::Acquire)
    }

    pub(crate) fn min_offset(&self) -> i64 {
        self.min_offset.load(Ordering::Acquire)
    }

    /// A queue rebuilt after retention deleted its start: the first record found in the
    /// CommitLog sets both ends (recovery's `correctMinOffset` from the CommitLog min).
    fn start_at(&self, queue_offset: i64) {
        let mut files = self.files.write();
        files.first_file_no = queue_offset as usize / CQ_ENTRIES_PER_FILE;
        self.min_offset.store(queue_offset, Ordering::Release);
        self.max_offset.store(queue_offset, Ordering::Release);
    }

    /// `deleteExpiredFileByOffset(minCommitLogOffset, 20)`: from the oldest, every file but the
    /// last whose last entry points below `cl_min` is deleted; the first keeper stops the loop.
    /// Returns the number of files deleted.
    pub(crate) fn delete_expired_files(&self, cl_min: i64) -> usize {
        let mut files = self.files.write();
        let mut deleted = 0;
        while files.files.len() > 1 {
            let last = files.files[0].entry(CQ_ENTRIES_PER_FILE - 1);
            if last.commit_log_offset >= cl_min {
                break;
            }
            let f = files.files.remove(0);
            files.first_file_no += 1;
            deleted += 1;
            match std::fs::remove_file(&f.path) {
                Ok(()) => eprintln!("delete file[REF:0] {} OK", f.path.display()),
                Err(e) => eprintln!("delete file[REF:0] {} Failed: {e}", f.path.display()),
            }
        }
        let first_entry = (files.first_file_no * CQ_ENTRIES_PER_FILE) as i64;
        if self.min_offset() < first_entry {
            self.min_offset.store(first_entry, Ordering::Release);
        }
        deleted
    }

    /// `correctMinOffset(minCommitLogOffset)`: the min becomes the first entry whose CommitLog
    /// offset is ≥ `cl_min`. With none (the queue holds only deleted records), 4.x leaves the min
    /// where it was; 5.3 sets it to the max (`all_stale_to_max`).
    pub(crate) fn correct_min_offset(&self, cl_min: i64, all_stale_to_max: bool) {
        let files = self.files.read();
        let max = self.max_offset();
        let (mut lo, mut hi) = (self.min_offset(), max);
        // CommitLog offsets grow along the queue: binary search for the first keeper.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let Some(e) = slot_entry(&files, mid) else {
                return;
            };
            if e.commit_log_offset < cl_min {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo < max {
            self.min_offset.store(lo, Ordering::Release);
        } else if all_stale_to_max && max > self.min_offset() {
            eprintln!(
                "ConsumeQueue[{}] contains no valid entries. Min-offset is assigned as: {max}.",
                self.dir.display()
            );
            self.min_offset.store(max, Ordering::Release);
        }
    }

    /// Writes the entry for logical offset `queue_offset` (must equal `max_offset`).
    fn put(&self, queue_offset: i64, entry: CqEntry) -> Result<(), StoreError> {
        let idx = queue_offset as usize;
        let file_no = idx / CQ_ENTRIES_PER_FILE;
        let file = {
            let files = self.files.read();
            let local = file_no - files.first_file_no;
            files.files.get(local).cloned()
        };
        let file = match file {
            Some(f) => f,
            None => {
                let mut files = self.files.write();
                let local = file_no - files.first_file_no;
                while files.files.len() <= local {
                    let no = files.first_file_no + files.files.len();
                    let start = no * CQ_ENTRIES_PER_FILE * CQ_ENTRY_SIZE;
                    files
                        .files
                        .push(Arc::new(create_cq_file(&self.dir, start)?));
                }
                Arc::clone(&files.files[local])
            }
        };
        let mut bytes = [0u8; CQ_ENTRY_SIZE];
        bytes[0..8].copy_from_slice(&entry.commit_log_offset.to_be_bytes());
        bytes[8..12].copy_from_slice(&entry.size.to_be_bytes());
        bytes[12..20].copy_from_slice(&entry.tag_hash.to_be_bytes());
        let pos = (idx % CQ_ENTRIES_PER_FILE) * CQ_ENTRY_SIZE;
        // SAFETY: the slot is inside the mapping and above `max_offset`, so no reader looks at it
        // until the Release store below; there is one dispatcher at a time (`reput.rs`), so
        // this is the only writer.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                file.map.as_mut_ptr().add(pos),
                CQ_ENTRY_SIZE,
            )
        };
        self.max_offset.store(queue_offset + 1, Ordering::Release);
        Ok(())
    }

    /// The entry at `offset`, if written.
    pub(crate) fn get(&self, offset: i64) -> Option<CqEntry> {
        if offset < self.min_offset().max(0) || offset >= self.max_offset() {
            return None;
        }
        slot_entry(&self.files.read(), offset)
    }

    fn flush(&self) -> Result<(), StoreError> {
        let files = self.files.read();
        for f in files.files.iter() {
            f.map.flush().map_err(|source| StoreError::Io {
                path: self.dir.clone(),
                source,
            })?;
        }
        Ok(())
    }
}

/// The entry at logical `offset` (below the max offset) if its file still exists.
fn slot_entry(files: &CqFiles, offset: i64) -> Option<CqEntry> {
    let idx = usize::try_from(offset).ok()?;
    let local = (idx / CQ_ENTRIES_PER_FILE).checked_sub(files.first_file_no)?;
    let file = files.files.get(local)?;
    Some(file.entry(idx % CQ_ENTRIES_PER_FILE))
}

fn create_cq_file(dir: &Path, start: usize) -> Result<CqFile, StoreError> {
    let io = |source| StoreError::Io {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let path = dir.join(format!("{start:020}"));
    let io = |source| StoreError::Io {
        path: path.clone(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .map_err(io)?;
    // A sparse file: untouched entries cost no disk.
    file.set_len((CQ_ENTRIES_PER_FILE * CQ_ENTRY_SIZE) as u64)
        .map_err(io)?;
    let map = MmapOptions::new()
        .len(CQ_ENTRIES_PER_FILE * CQ_ENTRY_SIZE)
        .map_raw(&file)
        .map_err(io)?;
    Ok(CqFile {
        map,
        _file: file,
        path,
    })
}

/// All consume queues, keyed by topic then queue id.
pub(crate) struct ConsumeQueues {
    root: PathBuf,
    queues: RwLock<HashMap<String, HashMap<i32, Arc<ConsumeQueue>>>>,
    /// Long polling's wake-up (set once by the broker, after recovery).
    pub(crate) arriving: OnceLock<ArrivingListener>,
}

impl ConsumeQueues {
    /// Starts empty: the queues are rebuilt from the CommitLog on every open, so old files are removed.
    pub(crate) fn open_empty(root: PathBuf) -> Result<Self, StoreError> {
        if root.exists() {
            std::fs::remove_dir_all(&root).map_err(|source| StoreError::Io {
                path: root.clone(),
                source,
            })?;
        }
        std::fs::create_dir_all(&root).map_err(|source| StoreError::Io {
            path: root.clone(),
            source,
        })?;
        Ok(ConsumeQueues {
            root,
            queues: RwLock::new(HashMap::new()),
            arriving: OnceLock::new(),
        })
    }

    pub(crate) fn find(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        let queues = self.queues.read();
        queues.get(topic)?.get(&queue_id).cloned()
    }

    fn find_or_create(&self, topic: &str, queue_id: i32) -> Arc<ConsumeQueue> {
        if let Some(q) = self.find(topic, queue_id) {
            return q;
        }
        let mut queues = self.queues.write();
        let dir = self.root.join(topic).join(queue_id.to_string());
        Arc::clone(
            queues
                .entry(topic.to_owned())
                .or_default()
                .entry(queue_id)
                .or_insert_with(|| Arc::new(ConsumeQueue::new(dir))),
        )
    }

    /// Dispatches one CommitLog record. Entries are written in queue-offset order; an entry whose
    /// offset is not the queue's next one (a gap or a duplicate) is skipped, as RocketMQ does.
    pub(crate) fn dispatch(
        &self,
        topic: &str,
        queue_id: i32,
        queue_offset: i64,
        entry: CqEntry,
    ) -> Result<(), StoreError> {
        if !(0..=MAX_LOGIC_OFFSET).contains(&queue_offset) {
            // RocketMQ logs the same words for an entry out of order and writes it where the
            // offset says; an offset past any file position has nowhere to go, so it is skipped.
            eprintln!(
                "[BUG]logic queue order maybe wrong, expectLogicOffset: {queue_offset} Topic: {topic} QID: {queue_id}: skipped"
            );
            return Ok(());
        }
        let q = self.find_or_create(topic, queue_id);
        if q.max_offset() == 0 && queue_offset > 0 {
            q.start_at(queue_offset);
        }
        if queue_offset != q.max_offset() {
            return Ok(());
        }
        q.put(queue_offset, entry)?;
        if let Some(listener) = self.arriving.get() {
            listener(topic, queue_id, queue_offset + 1, entry.tag_hash);
        }
        Ok(())
    }

    /// Every queue's next logical offset (`topicQueueTable`).
    pub(crate) fn offsets(&self) -> HashMap<(String, i32), i64> {
        let queues = self.queues.read();
        let mut out = HashMap::new();
        for (topic, qs) in queues.iter() {
            for (qid, q) in qs {
                out.insert((topic.clone(), *qid), q.max_offset());
            }
        }
        out
    }

    /// Every queue, for the clean rounds.
    pub(crate) fn all(&self) -> Vec<Arc<ConsumeQueue>> {
        let queues = self.queues.read();
        queues
            .values()
            .flat_map(|qs| qs.values().cloned())
            .collect()
    }

    pub(crate) fn flush_all(&self) -> Result<(), StoreError> {
        let queues = self.queues.read();
        for qs in queues.values() {
            for q in qs.values() {
                q.flush()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: i64) -> CqEntry {
        CqEntry {
            commit_log_offset: i * 100,
            size: 100,
            tag_hash: 0,
        }
    }

    /// A queue offset read back from damaged bytes (negative, or past any file position) is
    /// skipped instead of overflowing the file arithmetic; the queue stays usable.
    #[test]
    fn an_offset_no_file_can_hold_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let t = ConsumeQueues::open_empty(dir.path().join("cq")).unwrap();
        for bad in [
            -1,
            -(1 << 40),
            i64::MAX,
            i64::MAX / 20,
            MAX_LOGIC_OFFSET + 1,
        ] {
            t.dispatch("Damaged", 0, bad, entry(1)).unwrap();
        }
        let q = t.find_or_create("Damaged", 0);
        assert_eq!((q.min_offset(), q.max_offset()), (0, 0));
        t.dispatch("Damaged", 0, 0, entry(0)).unwrap();
        assert_eq!(q.get(0), Some(entry(0)));
        // The largest offset that fits still starts a queue there.
        t.dispatch("Far", 0, MAX_LOGIC_OFFSET, entry(7)).unwrap();
        assert_eq!(
            t.find_or_create("Far", 0).get(MAX_LOGIC_OFFSET),
            Some(entry(7))
        );
    }

    /// Two full files and part of a third; the CommitLog min moved past the first file's last
    /// entry: the first file goes, the min lands on the first entry at or above the CommitLog
    /// min, and reads below it find nothing.
    #[test]
    fn old_files_go_and_the_min_follows_the_commit_log() {
        let dir = tempfile::tempdir().unwrap();
        let q = ConsumeQueue::new(dir.path().join("T").join("0"));
        let n = (2 * CQ_ENTRIES_PER_FILE + 50_000) as i64;
        for i in 0..n {
            q.put(i, entry(i)).unwrap();
        }
        let first_file = q.dir.join(format!("{:020}", 0));
        assert!(first_file.exists());
        let cl_min = 310_000 * 100 + 1;
        assert_eq!(q.delete_expired_files(cl_min), 1);
        assert!(!first_file.exists());
        assert_eq!(q.min_offset(), CQ_ENTRIES_PER_FILE as i64);
        q.correct_min_offset(cl_min, false);
        assert_eq!(q.min_offset(), 310_001);
        assert_eq!(q.get(310_001), Some(entry(310_001)));
        assert_eq!(q.get(5), None, "its file is gone");
        // Nothing newer is deleted, and writes go on into the right file.
        assert_eq!(q.delete_expired_files(cl_min), 0);
        q.put(n, entry(n)).unwrap();
        assert_eq!(q.get(n), Some(entry(n)));
        // Every record deleted: 4.x keeps the min, 5.3 moves it to the max.
        q.correct_min_offset(i64::MAX, false);
        assert_eq!(q.min_offset(), 310_001);
        q.correct_min_offset(i64::MAX, true);
        assert_eq!(q.min_offset(), n + 1);
    }

    /// After a restart the queue is rebuilt from the first record still in the CommitLog.
    #[test]
    fn a_rebuilt_queue_starts_at_its_first_surviving_offset() {
        let dir = tempfile::tempdir().unwrap();
        let qs = ConsumeQueues::open_empty(dir.path().join("consumequeue")).unwrap();
        let start = CQ_ENTRIES_PER_FILE as i64 + 7;
        for i in start..start + 3 {
            qs.dispatch("T", 1, i, entry(i)).unwrap();
        }
        let q = qs.find("T", 1).unwrap();
        assert_eq!((q.min_offset(), q.max_offset()), (start, start + 3));
        assert_eq!(q.get(start + 2), Some(entry(start + 2)));
        assert_eq!(q.get(start - 1), None);
    }
}
