//! [`StoreInner`]: the state the [`MessageStore`](super::MessageStore) handle shares with its
//! threads and its put path, and the page-cache-busy signal (§5) both the put path and the
//! handle read.

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, OnceLock};

use super::commitlog::CommitLog;
use super::config::StoreConfig;
use super::flush_request::SyncFlushQueues;
use super::lock::TopicQueueLock;
use super::replica::ReplicaGate;
use super::reput::Reput;
use super::retention::Retention;
use super::stats::StoreStats;
use super::waiter::Waiter;
use crate::clock::epoch_millis;

/// `isOSPageCacheBusy`'s sanity bound on the lock-hold time (§5).
const PAGE_CACHE_BUSY_DIFF_LIMIT: i64 = 10_000_000;

/// Shared between the store handle and its threads.
pub(crate) struct StoreInner {
    pub(crate) config: StoreConfig,
    pub(crate) commit_log: CommitLog,
    /// 5.x's per-topic-queue lock (None on 4.x).
    pub(crate) topic_queue_lock: Option<TopicQueueLock>,
    pub(crate) stats: StoreStats,
    /// ReputMessageService's position (`reput.rs`).
    pub(crate) reput: Reput,
    /// Cleared by shutdown: puts answer SERVICE_NOT_AVAILABLE afterwards.
    pub(super) running: AtomicBool,
    /// Puts between their first status check and their hand-off to a flush service.
    pub(super) in_flight: AtomicUsize,
    pub(crate) flush_waiter: Waiter,
    pub(crate) commit_waiter: Waiter,
    pub(crate) stats_waiter: Waiter,
    pub(crate) sync_flush: SyncFlushQueues,
    pub(crate) watcher_stop: AtomicBool,
    /// Clean rounds, disk ratios and the DISK_FULL flag.
    pub(crate) retention: Retention,
    /// SYNC_MASTER's wait for the slave, installed by the HA service (`replica.rs`).
    pub(crate) replica: OnceLock<Arc<dyn ReplicaGate>>,
}

impl StoreInner {
    /// `isOSPageCacheBusy` (§5): `diff = now − beginTimeInLock`; busy iff `diff < 10,000,000` and
    /// `diff > osPageCacheBusyTimeOutMills`.
    pub(super) fn is_os_page_cache_busy(&self) -> bool {
        let begin = self.commit_log.lock.begin_time_in_lock();
        let diff = epoch_millis() - begin;
        diff < PAGE_CACHE_BUSY_DIFF_LIMIT
            && diff > self.config.os_page_cache_busy_timeout_mills as i64
    }

    /// `lockTimeMills` (pageCacheLockTimeMills): how long the current holder has held the put lock.
    pub(super) fn lock_time_mills(&self) -> i64 {
        let begin = self.commit_log.lock.begin_time_in_lock();
        if begin > 0 {
            (epoch_millis() - begin).max(0)
        } else {
            0
        }
    }
}
