//! TransientStorePool (§9.4): write buffers lent to new CommitLog files.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use memmap2::{MmapOptions, MmapRaw};

use super::StoreError;

/// One write buffer of `mappedFileSizeCommitLog` bytes (RocketMQ: a direct ByteBuffer).
pub(crate) struct PoolBuffer {
    map: MmapRaw,
}

impl PoolBuffer {
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }
}

/// The pool. A buffer is out while a mapped file holds it, back once that file is wholly committed.
pub(crate) struct TransientStorePool {
    free: Mutex<Vec<Arc<PoolBuffer>>>,
}

static MLOCK_WARNED: AtomicBool = AtomicBool::new(false);

impl TransientStorePool {
    pub(crate) fn new(size: usize, buffer_len: usize) -> Result<Self, StoreError> {
        let mut free = Vec::with_capacity(size);
        for _ in 0..size {
            let map: MmapRaw = MmapOptions::new()
                .len(buffer_len)
                .map_anon()
                .map_err(|source| StoreError::Io {
                    path: "<transient store pool>".into(),
                    source,
                })?
                .into();
            // SAFETY: the range is exactly the anonymous mapping just created.
            let rc = unsafe { libc::mlock(map.as_ptr() as *const libc::c_void, buffer_len) };
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
        })
    }

    /// `borrowBuffer`: None when every buffer is lent out.
    pub(crate) fn borrow(&self) -> Option<Arc<PoolBuffer>> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.pop()
    }

    /// `returnBuffer`.
    pub(crate) fn give_back(&self, buffer: Arc<PoolBuffer>) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.push(buffer);
    }

    /// `availableBufferNums`.
    pub(crate) fn available(&self) -> usize {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}
