//! TransientStorePool (§9.4): write buffers lent to new CommitLog files.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use memmap2::{MmapOptions, MmapRaw};
use parking_lot::Mutex;

use super::error::StoreError;

/// One write buffer of `mappedFileSizeCommitLog` bytes (RocketMQ: a direct ByteBuffer).
pub(crate) struct PoolBuffer {
    map: MmapRaw,
}

impl PoolBuffer {
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }
}

fn physical_memory() -> Option<usize> {
    // SAFETY: sysconf has no memory-safety preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages <= 0 || page <= 0 {
        return None;
    }
    (pages as usize).checked_mul(page as usize)
}

/// The pool. A buffer is out while a mapped file holds it, back once that file is wholly committed.
pub(crate) struct TransientStorePool {
    free: Mutex<Vec<Arc<PoolBuffer>>>,
    size: usize,
}

static MLOCK_WARNED: AtomicBool = AtomicBool::new(false);

impl TransientStorePool {
    pub(crate) fn new(size: usize, buffer_len: usize) -> Result<Self, StoreError> {
        let mut free = Vec::with_capacity(size);
        // RocketMQ mlocks every buffer. As root, mlock ignores RLIMIT_MEMLOCK, so a default pool
        // (5 × 1 GiB) would pin 5 GiB; refuse to pin more than half the machine's memory.
        let total = size.saturating_mul(buffer_len);
        let lock_allowed = physical_memory().is_none_or(|phys| total <= phys / 2);
        if !lock_allowed {
            eprintln!(
                "TransientStorePool: not locking {total} bytes of buffers in memory (more than half of RAM)"
            );
        }
        for _ in 0..size {
            let map: MmapRaw = MmapOptions::new()
                .len(buffer_len)
                .map_anon()
                .map_err(|source| StoreError::Io {
                    path: "<transient store pool>".into(),
                    source,
                })?
                .into();
            let rc = if lock_allowed {
                // SAFETY: the range is exactly the anonymous mapping just created.
                unsafe { libc::mlock(map.as_ptr() as *const libc::c_void, buffer_len) }
            } else {
                0
            };
            if rc != 0 && !MLOCK_WARNED.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "TransientStorePool: mlock of {buffer_len} bytes failed ({}); buffers stay pageable",
                    std::io::Error::last_os_error()
                );
            }
            free.push(Arc::new(PoolBuffer { map }));
        }
        Ok(TransientStorePool {
            free: Mutex::new(free),
            size,
        })
    }

    /// `borrowBuffer`: None when every buffer is lent out.
    pub(crate) fn borrow(&self) -> Option<Arc<PoolBuffer>> {
        let mut free = self.free.lock();
        let buffer = free.pop();
        if (free.len() as f64) < self.size as f64 * 0.4 {
            eprintln!("TransientStorePool only remain {} sheets.", free.len());
        }
        buffer
    }

    /// `returnBuffer`.
    pub(crate) fn give_back(&self, buffer: Arc<PoolBuffer>) {
        let mut free = self.free.lock();
        free.push(buffer);
    }

    /// `availableBufferNums`.
    pub(crate) fn available(&self) -> usize {
        self.free.lock().len()
    }
}
