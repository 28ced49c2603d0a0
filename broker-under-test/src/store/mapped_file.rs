//! One CommitLog file: a memory map plus write/commit/flush positions (RocketMQ `MappedFile`, §9).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use memmap2::{MmapOptions, MmapRaw};
use parking_lot::Mutex;

use super::error::StoreError;
use super::page_cache::{FilePages, PageCacheModel};
use super::pool::{PoolBuffer, TransientStorePool};

/// `MappedFile.OS_PAGE_SIZE`: the unit of "least pages".
pub(crate) const OS_PAGE_SIZE: usize = 4096;

pub(crate) struct MappedFile {
    file_from_offset: i64,
    size: usize,
    path: PathBuf,
    map: MmapRaw,
    /// Written by commits (pwrite, as RocketMQ's FileChannel); appends and reads use `map`.
    file: File,
    /// The transient-pool buffer appends go to; taken out and returned once the file is fully committed.
    write_buffer: Mutex<Option<Arc<PoolBuffer>>>,
    /// Whether this file was created with a write buffer (then readers see only committed bytes).
    buffered: bool,
    /// Bytes appended. Advanced only under the put lock, after the bytes are in place.
    wrote: AtomicUsize,
    /// Bytes copied from the write buffer into the map (equals `wrote` for unbuffered files).
    committed: AtomicUsize,
    /// Bytes forced to disk.
    flushed: AtomicUsize,
    /// The page-cache model's view of this file's pages: every copy into `map` goes through it.
    pages: FilePages,
    /// `ReferenceResource.available`: cleared by the first destroy attempt; reads of an
    /// unavailable file find nothing (retention's `destroy.rs`).
    available: AtomicBool,
    /// `firstShutdownTimestamp` (epoch ms; 0 = never shut down).
    first_shutdown_millis: AtomicI64,
}

fn io_err(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl MappedFile {
    /// Creates (or opens) the file at `path`, sized to `size`, and maps it.
    pub(crate) fn open(
        path: PathBuf,
        file_from_offset: i64,
        size: usize,
        write_buffer: Option<Arc<PoolBuffer>>,
        page_cache: &Arc<PageCacheModel>,
    ) -> Result<Self, StoreError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_err(&path, e))?;
        let len = file.metadata().map_err(|e| io_err(&path, e))?.len();
        if len > size as u64 {
            return Err(StoreError::Config(format!(
                "{} is {len} bytes but mappedFileSizeCommitLog is {size}",
                path.display()
            )));
        }
        if len < size as u64 {
            if len != 0 {
                // A file cut short (torn write of the file itself): recovery treats the
                // missing part as never written.
                eprintln!(
                    "{} is only {len} of {size} bytes; extending it with zeroes",
                    path.display()
                );
            }
            file.set_len(size as u64).map_err(|e| io_err(&path, e))?;
        }
        let map = MmapOptions::new()
            .len(size)
            .map_raw(&file)
            .map_err(|e| io_err(&path, e))?;
        let buffered = write_buffer.is_some();
        let pages = FilePages::new(page_cache);
        pages.mapped(size);
        Ok(MappedFile {
            file_from_offset,
            size,
            path,
            map,
            file,
            write_buffer: Mutex::new(write_buffer),
            buffered,
            wrote: AtomicUsize::new(0),
            committed: AtomicUsize::new(0),
            flushed: AtomicUsize::new(0),
            pages,
            available: AtomicBool::new(true),
            first_shutdown_millis: AtomicI64::new(0),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn is_available(&self) -> bool {
        self.available.load(Ordering::Acquire)
    }

    /// `shutdown`'s first call: marks the file unavailable and returns the first shutdown time
    /// (now on the first call, the remembered one after).
    pub(crate) fn shut_down(&self, now_millis: i64) -> i64 {
        if self.available.swap(false, Ordering::AcqRel) {
            self.first_shutdown_millis
                .store(now_millis, Ordering::Release);
        }
        self.first_shutdown_millis.load(Ordering::Acquire)
    }

    pub(crate) fn file_from_offset(&self) -> i64 {
        self.file_from_offset
    }
    pub(crate) fn size(&self) -> usize {
        self.size
    }
    pub(crate) fn wrote(&self) -> usize {
        self.wrote.load(Ordering::Acquire)
    }
    pub(crate) fn committed(&self) -> usize {
        self.committed.load(Ordering::Acquire)
    }
    pub(crate) fn flushed(&self) -> usize {
        self.flushed.load(Ordering::Acquire)
    }
    pub(crate) fn is_full(&self) -> bool {
        self.wrote() == self.size
    }

    /// `getReadPosition`: readers see only committed bytes when a write buffer is in use (§9.4).
    pub(crate) fn read_position(&self) -> usize {
        if self.buffered {
            self.committed()
        } else {
            self.wrote()
        }
    }

    /// Sets all positions after recovery (file opened without a write buffer).
    pub(crate) fn set_positions(&self, pos: usize) {
        self.wrote.store(pos, Ordering::Release);
        self.committed.store(pos, Ordering::Release);
        self.flushed.store(pos, Ordering::Release);
    }

    /// Appends `bytes` at the write position. Only called under the put lock, and only when
    /// `wrote + bytes.len() <= size`.
    pub(crate) fn append(&self, bytes: &[u8]) {
        let pos = self.wrote.load(Ordering::Relaxed);
        debug_assert!(pos + bytes.len() <= self.size);
        // The buffer is returned only when the file is full, and nothing appends to a full file;
        // without one, the append writes the page cache itself and takes its stalls.
        let buf = if self.buffered {
            self.write_buffer.lock().clone()
        } else {
            None
        };
        match buf {
            // SAFETY: [pos, pos + len) is inside the buffer, beyond every position the commit
            // thread may touch (it stops at `wrote`, which is advanced only after this copy), and
            // the put lock makes this the only writer.
            Some(b) => unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), b.ptr().add(pos), bytes.len())
            },
            // SAFETY: as above for the map: readers stop at `wrote` too.
            None => unsafe { self.write_pages(pos, bytes.as_ptr(), bytes.len()) },
        }
        self.wrote.store(pos + bytes.len(), Ordering::Release);
    }

    /// Where appends without a buffer copy into the file's mapped pages; the page-cache model
    /// stalls the calling thread here (a commit's pwrite takes the same stall in `commit`).
    ///
    /// # Safety
    /// `src` must be valid for `len` bytes, `[pos, pos + len)` inside the file and written by
    /// nobody else, and beyond every position readers may read.
    unsafe fn write_pages(&self, pos: usize, src: *const u8, len: usize) {
        self.pages.before_write(pos);
        // SAFETY: guaranteed by the caller.
        unsafe { std::ptr::copy_nonoverlapping(src, self.map.as_mut_ptr().add(pos), len) };
    }

    /// Writes the end-of-file blank marker at the write position and marks the file full; the
    /// bytes after the marker are never read.
    pub(crate) fn append_blank(&self, marker: &[u8]) {
        let pos = self.wrote.load(Ordering::Relaxed);
        debug_assert!(pos + marker.len() <= self.size);
        self.append(marker);
        self.wrote.store(self.size, Ordering::Release);
    }

    /// Copies `[pos, pos + len)` of the mapped file into `out` if it is readable.
    pub(crate) fn read_into(&self, pos: usize, len: usize, out: &mut Vec<u8>) -> bool {
        if !self.is_available() {
            return false;
        }
        match pos.checked_add(len) {
            Some(end) if end <= self.read_position() => {}
            _ => return false,
        }
        // SAFETY: the range is below the read position, so it is fully written and never written again.
        let src = unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(pos), len) };
        out.extend_from_slice(src);
        true
    }

    /// A readable slice `[pos, read_position)`; valid while `self` lives.
    pub(crate) fn readable_from(&self, pos: usize) -> &[u8] {
        let end = self.read_position();
        if pos >= end {
            return &[];
        }
        // SAFETY: below the read position the bytes are immutable (see `read_into`).
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(pos), end - pos) }
    }

    /// Zeroes `[pos, size)` (recovery of a torn tail).
    pub(crate) fn zero_from(&self, pos: usize) {
        if pos < self.size {
            // SAFETY: recovery runs before any other thread sees this file.
            unsafe { std::ptr::write_bytes(self.map.as_mut_ptr().add(pos), 0, self.size - pos) };
            let start = pos - pos % OS_PAGE_SIZE;
            if let Err(e) = self.map.flush_range(start, self.size - start) {
                eprintln!("recover: msync of {} failed: {e}", self.path.display());
            }
        }
    }

    /// `MappedFile.commit`: copies `[committed, wrote)` from the write buffer into the file when
    /// `isAbleToCommit(least_pages)`, and gives the buffer back to the pool once the file is fully
    /// committed. Returns the committed position.
    pub(crate) fn commit(&self, least_pages: usize, pool: Option<&TransientStorePool>) -> usize {
        if !self.buffered {
            return self.wrote();
        }
        let wrote = self.wrote();
        let committed = self.committed();
        let able = if wrote == self.size {
            true
        } else if least_pages > 0 {
            wrote / OS_PAGE_SIZE - committed / OS_PAGE_SIZE >= least_pages
        } else {
            wrote > committed
        };
        if able && wrote > committed {
            let buf = self.write_buffer.lock().clone();
            if let Some(b) = buf {
                // SAFETY: [committed, wrote) of the buffer is fully written (wrote was loaded with
                // Acquire) and no appender touches it again (appends go beyond `wrote`).
                let src = unsafe {
                    std::slice::from_raw_parts(
                        b.ptr().add(committed).cast_const(),
                        wrote - committed,
                    )
                };
                // RocketMQ's commit0 writes through the FileChannel (pwrite), not the map: the
                // kernel fills whole page-cache pages from the buffer without the page faults
                // and zeroing a first store into a mapped page costs. That saving is much of
                // what the pool is for, so the model does the same. The destination is above
                // every reader's limit until `committed` is advanced, and the CommitLog's commit
                // lock makes this the only committer. On failure, like commit0, log and leave
                // `committed` where it was: the next round tries again.
                self.pages.before_write(committed);
                match self.file.write_all_at(src, committed as u64) {
                    Ok(()) => self.committed.store(wrote, Ordering::Release),
                    Err(e) => eprintln!(
                        "Error occurred when commit data to FileChannel. {}: {e}",
                        self.path.display()
                    ),
                }
            }
        }
        if self.committed() == self.size {
            let taken = self.write_buffer.lock().take();
            if let (Some(b), Some(pool)) = (taken, pool) {
                pool.give_back(b);
            }
        }
        self.committed()
    }

    /// `MappedFile.flush`: forces `[flushed, read_position)` when `isAbleToFlush(least_pages)`.
    /// Returns the flushed position.
    pub(crate) fn flush(&self, least_pages: usize, stall: Duration) -> Result<usize, StoreError> {
        let flushed = self.flushed();
        let write = self.read_position();
        let able = if self.is_full() && write == self.size {
            true
        } else if least_pages > 0 {
            write / OS_PAGE_SIZE - flushed / OS_PAGE_SIZE >= least_pages
        } else {
            write > flushed
        };
        if able && write > flushed {
            if !stall.is_zero() {
                std::thread::sleep(stall);
            }
            // msync wants a page-aligned start.
            let start = flushed - flushed % OS_PAGE_SIZE;
            let end_page = write.next_multiple_of(OS_PAGE_SIZE).min(self.size);
            self.pages
                .force(end_page, || self.map.flush_range(start, write - start))
                .map_err(|e| io_err(&self.path, e))?;
            self.flushed.store(write, Ordering::Release);
        }
        Ok(self.flushed())
    }

    /// Takes the write buffer out (a pre-created file that will not be used).
    pub(crate) fn take_write_buffer(&self) -> Option<Arc<PoolBuffer>> {
        self.write_buffer.lock().take()
    }
}

impl Drop for MappedFile {
    /// The last holder is gone: `map` is unmapped right after this (`cleanup`).
    fn drop(&mut self) {
        self.pages.unmapped(self.size);
    }
}
