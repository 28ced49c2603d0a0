//! [`MessageStore`], the handle the broker holds: open (recover, rebuild, start the threads), the
//! put and get entry points, the §10 runtime-info keys the store owns, and shutdown.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use remoting::message::{decode_record, MessageRecord, RecordAt};

use super::commitlog::CommitLog;
use super::config::{FlushDiskType, StoreConfig};
use super::error::StoreError;
use super::flush_request::SyncFlushQueues;
use super::inner::StoreInner;
use super::lock::TopicQueueLock;
use super::pool::TransientStorePool;
use super::replica::{ReplicaAppendError, ReplicaGate};
use super::reput::Reput;
use super::retention::{self, DiskRatios, Retention};
use super::stats::{human_readable_bytes, StoreStats};
use super::types::{
    ArrivingListener, GetMessageResult, PutCallback, PutMessage, PutMessageStatus, PutResult,
};
use super::waiter::Waiter;
use super::{get, put, service};
use crate::periodic::Stoppable;

#[derive(Default)]
struct Threads {
    commit: Option<JoinHandle<()>>,
    flush: Option<JoinHandle<()>>,
    watcher: Option<JoinHandle<()>>,
    stats: Option<JoinHandle<()>>,
    reput: Option<Stoppable>,
    retention: Option<JoinHandle<()>>,
}

/// The message store. Share it as `Arc<MessageStore>`; dropping the last handle shuts it down.
pub struct MessageStore {
    inner: Arc<StoreInner>,
    threads: Mutex<Threads>,
    shut_down: AtomicBool,
}

fn spawn(
    name: &'static str,
    inner: &Arc<StoreInner>,
    f: fn(Arc<StoreInner>),
) -> Result<JoinHandle<()>, StoreError> {
    let inner = Arc::clone(inner);
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || f(inner))
        .map_err(|source| StoreError::Thread { name, source })
}

impl MessageStore {
    /// Creates the directories, recovers the CommitLog, rebuilds the consume queues (the reput
    /// loop on this thread, from the first CommitLog offset to the recovered end) and starts the
    /// store threads, ReputMessageService among them.
    pub fn open(config: StoreConfig) -> Result<Arc<MessageStore>, StoreError> {
        config.validate()?;
        let pool = if config.transient_store_pool_in_effect {
            Some(Arc::new(TransientStorePool::new(
                config.transient_store_pool_size,
                config.mapped_file_size_commit_log,
            )?))
        } else {
            None
        };
        let commit_log = CommitLog::open(&config, pool)?;
        let retention =
            Retention::new(config.retention.clone(), config.store_path_root_dir.clone());
        let inner = Arc::new(StoreInner {
            commit_log,
            topic_queue_lock: TopicQueueLock::new(config.topic_queue_lock_num),
            stats: StoreStats::new(),
            reput: Reput::new(config.reput_end),
            running: AtomicBool::new(true),
            in_flight: AtomicUsize::new(0),
            flush_waiter: Waiter::new(),
            commit_waiter: Waiter::new(),
            stats_waiter: Waiter::new(),
            sync_flush: SyncFlushQueues::new(),
            watcher_stop: AtomicBool::new(false),
            config,
            retention,
            replica: std::sync::OnceLock::new(),
        });
        inner.reput.do_reput(&inner.commit_log)?;
        inner.commit_log.recover_topic_queue_table();
        let store = MessageStore {
            inner: Arc::clone(&inner),
            threads: Mutex::new(Threads::default()),
            shut_down: AtomicBool::new(false),
        };
        {
            let mut t = store.threads.lock();
            let flush_kind = inner.config.flush_disk_type;
            match flush_kind {
                FlushDiskType::AsyncFlush => {
                    t.flush = Some(spawn(
                        service::flush_service_name(flush_kind),
                        &inner,
                        service::flush_real_time_service,
                    )?);
                }
                FlushDiskType::SyncFlush => {
                    t.flush = Some(spawn(
                        service::flush_service_name(flush_kind),
                        &inner,
                        service::group_commit_service,
                    )?);
                    t.watcher = Some(spawn(
                        "FlushDiskWatcher",
                        &inner,
                        service::flush_disk_watcher,
                    )?);
                }
            }
            if inner.commit_log.pool().is_some() {
                t.commit = Some(spawn(
                    "CommitRealTimeService",
                    &inner,
                    service::commit_real_time_service,
                )?);
            }
            t.reput = Some(
                service::start_reput(&inner).map_err(|source| StoreError::Thread {
                    name: service::REPUT_THREAD_NAME,
                    source,
                })?,
            );
            t.stats = Some(spawn(
                "StoreStatsService",
                &inner,
                service::store_stats_service,
            )?);
            t.retention = Some(spawn("StoreScheduledThread", &inner, |inner| {
                retention::run(&inner.retention, &inner.commit_log)
            })?);
        }
        Ok(Arc::new(store))
    }

    /// The effective configuration.
    pub fn config(&self) -> &StoreConfig {
        &self.inner.config
    }

    /// Stores one message. Called on a send-executor OS thread; may block on the put lock, page
    /// faults and injected stalls. `done` runs exactly once: before return for ASYNC_FLUSH,
    /// WAIT=false or any failure, or later from the group-commit thread (SYNC_FLUSH).
    pub fn put_message(&self, msg: PutMessage, done: PutCallback) {
        put::put(&self.inner, vec![msg], done);
    }

    /// SEND_BATCH_MESSAGE: all messages appended under one put-lock hold, in one file, with
    /// consecutive queue offsets (they must share topic and queue to be consecutive).
    pub fn put_messages(&self, msgs: Vec<PutMessage>, done: PutCallback) {
        if msgs.is_empty() {
            done(PutResult {
                status: PutMessageStatus::MessageIllegal,
                append: None,
            });
            return;
        }
        put::put(&self.inner, msgs, done);
    }

    /// Reads up to `max_msg_nums` messages (and roughly `max_total_bytes`) from a queue, like
    /// `DefaultMessageStore.getMessage` without the subscription filter.
    pub fn get_message(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: i32,
        max_total_bytes: usize,
    ) -> GetMessageResult {
        get::get_message(
            &self.inner.commit_log,
            self.inner.config.offset_correction,
            topic,
            queue_id,
            offset,
            max_msg_nums,
            max_total_bytes,
        )
    }

    /// `lookMessageByOffset`: the record at CommitLog offset `physical_offset` (its 4-byte size
    /// first, then the whole record), or `None` when nothing readable and whole is there.
    pub fn look_message_by_offset(&self, physical_offset: i64) -> Option<MessageRecord> {
        if physical_offset < 0 {
            return None;
        }
        let log = &self.inner.commit_log;
        let mut size = Vec::with_capacity(4);
        if !log.read(physical_offset, 4, &mut size) {
            return None;
        }
        let total = i32::from_be_bytes(size.get(..4)?.try_into().ok()?);
        if total <= 0 || total as usize > self.inner.config.mapped_file_size_commit_log {
            return None;
        }
        let mut buf = Vec::with_capacity(total as usize);
        if !log.read(physical_offset, total as usize, &mut buf) {
            return None;
        }
        match decode_record(&buf, false) {
            Ok(RecordAt::Message { record, .. }) => Some(*record),
            _ => None,
        }
    }

    /// Installs the listener every dispatched consume-queue entry is reported to (long
    /// polling). Only the first call takes effect.
    pub fn set_message_arriving_listener(&self, listener: ArrivingListener) {
        let _ = self.inner.commit_log.consume_queues.arriving.set(listener);
    }

    /// Installs SYNC_MASTER's wait for the slave (`replica.rs`). Only the first call takes effect.
    pub fn set_replica_gate(&self, gate: Arc<dyn ReplicaGate>) {
        let _ = self.inner.replica.set(gate);
    }

    /// HA master: up to `max` readable bytes from CommitLog `offset`, within one file.
    pub fn replica_chunk(&self, offset: i64, max: usize) -> Vec<u8> {
        self.inner.commit_log.read_chunk(offset, max)
    }

    /// HA slave: appends replicated bytes at exactly `offset` under the put lock; returns the
    /// new end. ReputMessageService dispatches them like any append.
    pub fn append_replica(&self, offset: i64, bytes: &[u8]) -> Result<i64, ReplicaAppendError> {
        if !self.inner.running.load(Ordering::Acquire) {
            return Err(ReplicaAppendError::Stopped);
        }
        let log = &self.inner.commit_log;
        let mut guard = log.lock.lock();
        let end = log.append_replica(&mut guard, offset, bytes)?;
        drop(guard);
        Ok(end)
    }

    /// `mappedFileSizeCommitLog`.
    pub fn commit_log_file_size(&self) -> usize {
        self.inner.commit_log.file_size()
    }

    /// Next logical offset of a queue (0 if unknown).
    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner
            .commit_log
            .consume_queues
            .find(topic, queue_id)
            .map_or(0, |q| q.max_offset())
    }

    /// Smallest logical offset of a queue (moved by retention).
    pub fn min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner
            .commit_log
            .consume_queues
            .find(topic, queue_id)
            .map_or(0, |q| q.min_offset())
    }

    /// `isOSPageCacheBusy` (§5): `diff = now − beginTimeInLock`; busy iff `diff < 10,000,000` and
    /// `diff > osPageCacheBusyTimeOutMills`.
    pub fn is_os_page_cache_busy(&self) -> bool {
        self.inner.is_os_page_cache_busy()
    }

    /// `lockTimeMills` (pageCacheLockTimeMills): how long the current holder has held the put lock.
    pub fn lock_time_mills(&self) -> i64 {
        self.inner.lock_time_mills()
    }

    /// `isTransientStorePoolDeficient`: no free buffer left.
    pub fn is_transient_store_pool_deficient(&self) -> bool {
        self.remain_transient_store_buffer_numbs() == 0
    }

    /// `remainTransientStoreBufferNumbs`: free pool buffers, `i32::MAX` when the pool is off.
    pub fn remain_transient_store_buffer_numbs(&self) -> i32 {
        match self.inner.commit_log.pool() {
            Some(p) => p.available().min(i32::MAX as usize) as i32,
            None => i32::MAX,
        }
    }

    /// CommitLog bytes forced to disk so far (`flushedWhere`).
    pub fn flushed_offset(&self) -> i64 {
        self.inner.commit_log.flushed_where()
    }

    /// CommitLog bytes appended so far (including data not yet committed from a pool buffer).
    pub fn max_wrote_offset(&self) -> i64 {
        self.inner.commit_log.max_wrote_offset()
    }

    /// The commit lag (`commitLogUncommittedBytes`): bytes appended but not yet committed from a
    /// pool buffer into the page cache; always 0 without the pool.
    pub fn uncommitted_bytes(&self) -> i64 {
        self.inner.commit_log.uncommitted_bytes()
    }

    /// CommitLog bytes readable (committed) so far: `commitLogMaxOffset`.
    pub fn commit_log_max_offset(&self) -> i64 {
        self.inner.commit_log.max_offset()
    }

    /// Start offsets of the CommitLog files, oldest first.
    pub fn commit_log_file_offsets(&self) -> Vec<i64> {
        self.inner
            .commit_log
            .files()
            .iter()
            .map(|f| f.file_from_offset())
            .collect()
    }

    /// `dispatchBehindBytes`: bytes readers may see that ReputMessageService has not dispatched
    /// to the consume queues yet (4.x: up to the readable end; 5.3 SYNC_FLUSH: up to the flushed
    /// position).
    pub fn dispatch_behind_bytes(&self) -> i64 {
        self.inner.reput.behind(&self.inner.commit_log)
    }

    /// The disk ratios of the CommitLog, consume-queue and index paths, measured now.
    pub fn disk_ratios(&self) -> DiskRatios {
        self.inner.retention.disk_ratios()
    }

    /// `RunningFlags.isWriteable`: false while the disk is over the warning ratio.
    pub fn is_writeable(&self) -> bool {
        self.inner.retention.is_writeable()
    }

    /// The GET_BROKER_RUNTIME_INFO keys the store owns (§10), plus `store*` extras. A read starts
    /// a new `storePutLockMaxHoldMillis` window.
    pub fn runtime_info(&self) -> BTreeMap<String, String> {
        let log = &self.inner.commit_log;
        let mut m = BTreeMap::new();
        self.inner.stats.runtime_info(&mut m);
        m.insert(
            "remainTransientStoreBufferNumbs".into(),
            self.remain_transient_store_buffer_numbs().to_string(),
        );
        if log.pool().is_some() {
            m.insert(
                "remainHowManyDataToCommit".into(),
                human_readable_bytes(log.remain_to_commit()),
            );
        }
        m.insert(
            "remainHowManyDataToFlush".into(),
            human_readable_bytes(log.remain_to_flush()),
        );
        // Ours: the commit lag as a plain number, so it can be plotted per second (the
        // human-readable `remainHowManyDataToCommit` above is RocketMQ's and absent without the pool).
        m.insert(
            "commitLogUncommittedBytes".into(),
            log.uncommitted_bytes().to_string(),
        );
        m.insert(
            "storePageCacheStallTimes".into(),
            log.page_cache_stall_times().to_string(),
        );
        // Ours: forces inside an injected writeback stall now (0 without injectWritebackStallMillis).
        m.insert(
            "storeWritebackForcing".into(),
            log.writeback_forcing().to_string(),
        );
        m.insert("commitLogMinOffset".into(), log.min_offset().to_string());
        m.insert(
            "dispatchBehindBytes".into(),
            self.dispatch_behind_bytes().to_string(),
        );
        if let Some((total, free)) = disk_space(log.dir()) {
            // 5.x format (free space; 4.9.8 reports usable space).
            m.insert(
                "commitLogDirCapacity".into(),
                format!(
                    "Total : {}, Free : {}.",
                    human_readable_bytes(total as i64),
                    human_readable_bytes(free as i64)
                ),
            );
        }
        m.insert("commitLogMaxOffset".into(), log.max_offset().to_string());
        let held_now = self.lock_time_mills();
        m.insert("pageCacheLockTimeMills".into(), held_now.to_string());
        // Ours: the longest put-lock hold since the previous read of this table (the holds that
        // ended, and the one in progress), and a new window from here. A once-a-second reader
        // of `pageCacheLockTimeMills` sees a 500 ms stall only when its read lands inside it,
        // and then only the part held so far; this key shows every second's longest hold.
        let ended = (self.inner.stats.take_in_lock_window_max_micros() / 1000) as i64;
        m.insert(
            "storePutLockMaxHoldMillis".into(),
            ended.max(held_now).to_string(),
        );
        m.insert("storeFlushedOffset".into(), log.flushed_where().to_string());
        m.insert("storeFlushTimes".into(), log.flush_times().to_string());
        m.insert(
            "storeCommittedOffset".into(),
            log.committed_where().to_string(),
        );
        m.insert(
            "storeCommitLogFileCount".into(),
            log.files().len().to_string(),
        );
        self.inner.retention.runtime_info(&mut m);
        m.insert("storeMappedBytes".into(), log.mapped_bytes().to_string());
        m.insert(
            "storePutLock".into(),
            format!("{:?}", self.inner.config.put_lock),
        );
        m
    }

    /// Stops accepting puts (SERVICE_NOT_AVAILABLE afterwards), waits for puts in progress,
    /// commits and flushes everything, and joins every thread. Idempotent.
    pub fn shutdown(&self) {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return;
        }
        let inner = &self.inner;
        inner.running.store(false, Ordering::Release);
        // A put that passed the status check may still be appending or handing its flush
        // request over; wait for it so no callback is left behind.
        while inner.in_flight.load(Ordering::Acquire) > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut t = self.threads.lock();
        inner.commit_waiter.stop();
        join(t.commit.take());
        inner.flush_waiter.stop();
        join(t.flush.take());
        service::stop_watcher(inner);
        join(t.watcher.take());
        // After the commit and flush services' last rounds: the reput's last round then sees
        // everything they made readable (and, 5.3 SYNC_FLUSH, forced).
        if let Some(mut r) = t.reput.take() {
            r.stop();
        }
        inner.stats_waiter.stop();
        join(t.stats.take());
        inner.retention.waiter.stop();
        join(t.retention.take());
        let stall = Duration::from_millis(inner.config.injection.flush_stall_millis);
        if let Err(e) = inner.commit_log.commit_and_flush_all(stall) {
            eprintln!("store shutdown: final flush failed: {e}");
        }
    }
}

/// Total and free bytes of the file system holding `path`.
fn disk_space(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain old data; zeroed is a valid value to be overwritten.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a valid out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let frsize = st.f_frsize as u64;
    Some((st.f_blocks as u64 * frsize, st.f_bfree as u64 * frsize))
}

/// Joins a store thread, unless shutdown runs on that very thread (a put callback dropping the
/// last store handle on the group-commit thread): joining itself would deadlock.
fn join(handle: Option<JoinHandle<()>>) {
    if let Some(h) = handle {
        if h.thread().id() != std::thread::current().id() {
            let _ = h.join();
        }
    }
}

impl Drop for MessageStore {
    fn drop(&mut self) {
        self.shutdown();
    }
}
