//! The page-cache stall model (ours, not RocketMQ's; off unless its keys are set).
//!
//! What it represents: the kernel makes whoever writes file-backed pages pay for the page
//! cache's trouble. A write into a mapped page blocks while that page must be faulted in, while
//! the writer is throttled for too many dirty pages (`balance_dirty_pages`), or while the page is
//! under writeback on a file system with stable pages. RocketMQ's advice on
//! `transientStorePoolEnable` rests on *who* that writer is (reference §9.4): with the pool off it
//! is the appender, inside the put lock; with the pool on it is CommitRealTimeService, outside it.
//!
//! Two stalls, both charged to the writer by the write itself, never by a look at the pool flag:
//! every write into a CommitLog file's pages goes through [`FilePages::before_write`], and only
//! those writes do. Appends into a pool buffer (anonymous, locked memory) never get here; the
//! commit thread's pwrite from that buffer into the file does, and so does an append into a file
//! that has no buffer (pool off, or a pool that ran dry without fast-fail).
//!
//! - `injectPageCacheStallMillis` / `injectPageCacheStallIntervalMillis`: at most once per
//!   interval (the first write included), the next write into file-backed pages blocks this long.
//!   The spikes are periodic on purpose: a stall that hit every write would only measure a slow
//!   disk, which `injectAppendDelayMicros` already does.
//! - `injectWritebackStallMillis`: every force (msync) of a mapped file takes this much longer,
//!   and while it runs, a write that starts in the pages being forced (up to the end of the last
//!   forced page, which the next append usually shares) waits for it to end. When the spikes come
//!   is therefore decided by the flush thread (`flushIntervalCommitLog`, least pages, thorough
//!   interval), as in RocketMQ.
//!
//! What it leaves out: real memory pressure and real I/O (the stall is a sleep, so it costs no CPU
//! and no disk bandwidth); reads (a pull that faults in an evicted page is not slowed); page
//! granularity of faults (a periodic stall hits the whole next write, whatever pages it touches);
//! a write that already began its copy when a force starts is not held back; and the consume
//! queues' files, which are written by the dispatcher and are not modelled.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::config::FaultInjection;
use crate::clock::epoch_millis;

/// The store-wide part: the periodic stall is shared by all files (it is the page cache's, not
/// one file's), and counted for runtime info.
pub(crate) struct PageCacheModel {
    stall: Duration,
    stall_interval_millis: i64,
    writeback_stall: Duration,
    /// Epoch ms of the last periodic stall; 0 before the first, so the first write stalls.
    last_stall_millis: AtomicI64,
    /// Periodic stalls and writeback waits so far (`storePageCacheStallTimes`).
    stall_times: AtomicU64,
    /// Forces inside an injected writeback stall right now (`storeWritebackForcing`): what a
    /// test waits for before it writes into the pages being forced, instead of sleeping.
    forcing: AtomicU64,
    /// Bytes of CommitLog files mapped right now (`storeMappedBytes`): a file is unmapped when
    /// its last holder drops it, so retention shows here.
    mapped_bytes: AtomicI64,
}

impl PageCacheModel {
    pub(crate) fn new(injection: &FaultInjection) -> Arc<Self> {
        Arc::new(PageCacheModel {
            stall: Duration::from_millis(injection.page_cache_stall_millis),
            stall_interval_millis: injection.page_cache_stall_interval_millis as i64,
            writeback_stall: Duration::from_millis(injection.writeback_stall_millis),
            last_stall_millis: AtomicI64::new(0),
            stall_times: AtomicU64::new(0),
            forcing: AtomicU64::new(0),
            mapped_bytes: AtomicI64::new(0),
        })
    }

    pub(crate) fn mapped_bytes(&self) -> i64 {
        self.mapped_bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn stall_times(&self) -> u64 {
        self.stall_times.load(Ordering::Relaxed)
    }

    /// Forces now inside an injected writeback stall.
    pub(crate) fn forcing(&self) -> u64 {
        self.forcing.load(Ordering::Acquire)
    }

    /// The periodic stall: one writer (whoever wins the slot) sleeps, the others go on.
    fn periodic_stall(&self) {
        if self.stall.is_zero() {
            return;
        }
        let now = epoch_millis();
        let last = self.last_stall_millis.load(Ordering::Acquire);
        if now - last < self.stall_interval_millis {
            return;
        }
        if self
            .last_stall_millis
            .compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.stall_times.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(self.stall);
        }
    }
}

/// One mapped file's pages: the shared model plus the range under an injected writeback.
pub(crate) struct FilePages {
    model: Arc<PageCacheModel>,
    /// Exclusive end (page-aligned) of the range being forced under a writeback stall; 0 when
    /// no force is running. Forces of one file are serialised by the CommitLog's flush lock.
    writeback_end: Mutex<usize>,
    writeback_done: Condvar,
}

impl FilePages {
    /// Counts a mapping of `size` bytes until [`FilePages::unmapped`].
    pub(crate) fn mapped(&self, size: usize) {
        self.model
            .mapped_bytes
            .fetch_add(size as i64, Ordering::Relaxed);
    }

    pub(crate) fn unmapped(&self, size: usize) {
        self.model
            .mapped_bytes
            .fetch_sub(size as i64, Ordering::Relaxed);
    }

    pub(crate) fn new(model: &Arc<PageCacheModel>) -> Self {
        FilePages {
            model: Arc::clone(model),
            writeback_end: Mutex::new(0),
            writeback_done: Condvar::new(),
        }
    }

    /// Called by every writer of this file's mapped pages just before its copy to `pos`: the
    /// writer, whichever thread it is, takes the stall.
    pub(crate) fn before_write(&self, pos: usize) {
        self.model.periodic_stall();
        if self.model.writeback_stall.is_zero() {
            return;
        }
        let mut end = self.writeback_end.lock();
        if pos < *end {
            self.model.stall_times.fetch_add(1, Ordering::Relaxed);
            while pos < *end {
                self.writeback_done.wait(&mut end);
            }
        }
    }

    /// Runs `force` (the msync of pages up to `end_page`, page-aligned) with the injected
    /// writeback stall in front of it, holding back writes into those pages until both end.
    pub(crate) fn force<R>(&self, end_page: usize, force: impl FnOnce() -> R) -> R {
        if self.model.writeback_stall.is_zero() {
            return force();
        }
        *self.writeback_end.lock() = end_page;
        self.model.forcing.fetch_add(1, Ordering::AcqRel);
        std::thread::sleep(self.model.writeback_stall);
        let result = force();
        *self.writeback_end.lock() = 0;
        self.model.forcing.fetch_sub(1, Ordering::AcqRel);
        self.writeback_done.notify_all();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn model(stall: u64, interval: u64, writeback: u64) -> Arc<PageCacheModel> {
        PageCacheModel::new(&FaultInjection {
            page_cache_stall_millis: stall,
            page_cache_stall_interval_millis: interval,
            writeback_stall_millis: writeback,
            ..FaultInjection::default()
        })
    }

    #[test]
    fn periodic_stall_hits_the_first_write_then_once_per_interval() {
        let m = model(30, 60_000, 0);
        let pages = FilePages::new(&m);
        let t = Instant::now();
        pages.before_write(0);
        assert!(t.elapsed() >= Duration::from_millis(30));
        // Within the interval no write stalls again: counted, not timed.
        for pos in 1..100 {
            pages.before_write(pos);
        }
        assert_eq!(m.stall_times(), 1);
    }

    #[test]
    fn writes_into_pages_under_writeback_wait_for_the_force() {
        let m = model(0, 0, 200);
        let pages = Arc::new(FilePages::new(&m));
        let forcing = {
            let pages = Arc::clone(&pages);
            std::thread::Builder::new()
                .name("test-force".into())
                .spawn(move || pages.force(8192, || ()))
                .unwrap()
        };
        while m.forcing() == 0 {
            std::thread::yield_now();
        }
        // Beyond the forced pages: no wait (a wait would be counted).
        let t = Instant::now();
        pages.before_write(8192);
        assert_eq!(m.stall_times(), 0);
        // In the last forced page: waits for the force to end.
        pages.before_write(5000);
        assert!(*pages.writeback_end.lock() == 0);
        assert_eq!(m.forcing(), 0);
        assert!(
            t.elapsed() >= Duration::from_millis(150),
            "{:?}",
            t.elapsed()
        );
        forcing.join().unwrap();
        assert_eq!(m.stall_times(), 1);
    }

    #[test]
    fn off_by_default() {
        let m = PageCacheModel::new(&FaultInjection::default());
        let pages = FilePages::new(&m);
        pages.before_write(0);
        assert_eq!(pages.force(4096, || 7), 7);
        assert_eq!(m.stall_times(), 0);
    }
}
