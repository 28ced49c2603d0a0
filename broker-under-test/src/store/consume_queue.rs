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
}

/// One topic-queue's consume queue. Written only by the dispatcher (one at a time).
pub(crate) struct ConsumeQueue {
    dir: PathBuf,
    files: RwLock<Vec<Arc<CqFile>>>,
    /// Number of entries written; readers see entries below it.
    max_offset: AtomicI64,
}

impl ConsumeQueue {
    fn new(dir: PathBuf) -> Self {
        ConsumeQueue {
            dir,
            files: RwLock::new(Vec::new()),
            max_offset: AtomicI64::new(0),
        }
    }

    pub(crate) fn max_offset(&self) -> i64 {
        self.max_offset.load(Ordering::Acquire)
    }

    pub(crate) fn min_offset(&self) -> i64 {
        0
    }

    /// Writes the entry for logical offset `queue_offset` (must equal `max_offset`).
    fn put(&self, queue_offset: i64, entry: CqEntry) -> Result<(), StoreError> {
        let idx = queue_offset as usize;
        let file_no = idx / CQ_ENTRIES_PER_FILE;
        let file = {
            let files = self.files.read();
            files.get(file_no).cloned()
        };
        let file = match file {
            Some(f) => f,
            None => {
                let mut files = self.files.write();
                while files.len() <= file_no {
                    let start = files.len() * CQ_ENTRIES_PER_FILE * CQ_ENTRY_SIZE;
                    files.push(Arc::new(create_cq_file(&self.dir, start)?));
                }
                Arc::clone(&files[file_no])
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
        if offset < 0 || offset >= self.max_offset() {
            return None;
        }
        let idx = offset as usize;
        let files = self.files.read();
        let file = files.get(idx / CQ_ENTRIES_PER_FILE)?;
        let pos = (idx % CQ_ENTRIES_PER_FILE) * CQ_ENTRY_SIZE;
        // SAFETY: below `max_offset`, so written and immutable.
        let b = unsafe { std::slice::from_raw_parts(file.map.as_ptr().add(pos), CQ_ENTRY_SIZE) };
        Some(CqEntry {
            commit_log_offset: i64::from_be_bytes(b[0..8].try_into().ok()?),
            size: i32::from_be_bytes(b[8..12].try_into().ok()?),
            tag_hash: i64::from_be_bytes(b[12..20].try_into().ok()?),
        })
    }

    fn flush(&self) -> Result<(), StoreError> {
        let files = self.files.read();
        for f in files.iter() {
            f.map.flush().map_err(|source| StoreError::Io {
                path: self.dir.clone(),
                source,
            })?;
        }
        Ok(())
    }
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
    Ok(CqFile { map, _file: file })
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
        let q = self.find_or_create(topic, queue_id);
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
