//! The message store: CommitLog of memory-mapped files, the put-message lock, flush and commit
//! services, the transient store pool and consume queues (reference §5, §7.2–§7.6, §8, §9, §10).
//!
//! Threads, all named and joined by [`MessageStore::shutdown`]:
//! `FlushRealTimeService` (ASYNC_FLUSH) or `GroupCommitService` + `FlushDiskWatcher` (SYNC_FLUSH),
//! `CommitRealTimeService` (pool in effect), `StoreStatsService`.
//!
//! A put: status checks (shut down, page cache busy, §7.2) → size checks and encoding (outside the
//! lock from 4.9.1, inside for 4.3 via `encode_inside_lock`) → the put lock (`beginTimeInLock`
//! stamped) → append to the last mapped file, rolling with a blank marker → lock released →
//! dispatch to the consume queue (the commit thread dispatches instead when the pool is on,
//! because readers see committed bytes only) → the answer: at once (ASYNC_FLUSH, WAIT=false,
//! failures) or from group commit / the flush-disk watcher (SYNC_FLUSH).
//!
//! Differences from RocketMQ worth knowing: the file after the active one is pre-created (with
//! its own pool buffer, as AllocateMappedFileService does) but synchronously, inside the put
//! lock at the roll, not by a background thread; consume queues are rebuilt from the CommitLog
//! on every open and never deleted; nothing is ever expired or deleted; ordinary messages only
//! (no delay levels, no HA).
//!
//! Fault injection (ours, not RocketMQ's; all off by default, see [`FaultInjection`]): a put
//! stall holds the put lock for `put_stall_millis` on the first append and then at most once per
//! `put_stall_interval_millis`; `append_delay_micros` stretches every lock hold to at least that;
//! `flush_stall_millis` is added to every force.

mod commitlog;
mod config;
mod consume_queue;
mod lock;
mod mapped_file;
mod pool;
mod service;
mod stats;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use remoting::message::{offset_msg_id, MessageRecord};
use thiserror::Error;

pub use config::{FaultInjection, FlushDiskType, PutLockKind, StoreConfig, MIN_MAPPED_FILE_SIZE};
pub use stats::human_readable_bytes;

use commitlog::{AppendError, AppendState, CommitLog, EncodedMessage};
use lock::PutLockGuard;
use pool::TransientStorePool;
use service::{FlushRequest, SyncFlushQueues, Waiter};
use stats::StoreStats;

/// Longest properties string a record can hold (2-byte length).
pub const MAX_PROPERTIES_LEN: usize = 32767;
/// The encoder allows records up to `maxMessageSize` + this (§7.2).
pub const RECORD_SLACK: usize = 64 * 1024;
/// `isOSPageCacheBusy`'s sanity bound on the lock-hold time (§5).
const PAGE_CACHE_BUSY_DIFF_LIMIT: i64 = 10_000_000;

/// Wall-clock epoch milliseconds (`System.currentTimeMillis()`).
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Store failures at open time.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid store configuration: {0}")]
    Config(String),
    #[error("cannot start store thread {name}: {source}")]
    Thread {
        name: &'static str,
        #[source]
        source: std::io::Error,
    },
}

/// One message to store.
#[derive(Debug, Clone)]
pub struct PutMessage {
    pub topic: String,
    pub queue_id: i32,
    pub flag: i32,
    pub body: Bytes,
    pub properties: String,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub reconsume_times: i32,
    /// The `WAIT` property: under SYNC_FLUSH, answer only after the force.
    pub wait_store_ok: bool,
}

/// RocketMQ's PutMessageStatus (the subset this store produces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutMessageStatus {
    PutOk,
    FlushDiskTimeout,
    CreateMappedFileFailed,
    MessageIllegal,
    PropertiesSizeExceeded,
    ServiceNotAvailable,
    OsPageCacheBusy,
    UnknownError,
}

/// AppendMessageResult.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendResult {
    /// CommitLog offset of the first message.
    pub wrote_offset: i64,
    pub wrote_bytes: usize,
    /// Offset message id of each message (`remoting::message::offset_msg_id`).
    pub msg_ids: Vec<String>,
    /// Logical queue offset of the first message.
    pub queue_offset: i64,
    pub msg_num: usize,
    /// STORETIMESTAMP: when the put lock was taken.
    pub store_timestamp: i64,
    /// Time this put held the put lock.
    pub in_lock_micros: u64,
}

/// PutMessageResult.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutResult {
    pub status: PutMessageStatus,
    pub append: Option<AppendResult>,
}

/// Receives the put's result exactly once.
pub type PutCallback = Box<dyn FnOnce(PutResult) + Send + 'static>;

/// GetMessageStatus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetMessageStatus {
    Found,
    NoMessageInQueue,
    OffsetFoundNull,
    OffsetOverflowOne,
    OffsetOverflowBadly,
    OffsetTooSmall,
    NoMatchedLogicQueue,
}

/// GetMessageResult, with the records copied out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetMessageResult {
    pub status: GetMessageStatus,
    /// Concatenated CommitLog records (a PULL_MESSAGE body).
    pub body: Vec<u8>,
    pub msg_count: usize,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
}

/// Shared between the store handle and its threads.
pub(crate) struct StoreInner {
    pub(crate) config: StoreConfig,
    pub(crate) commit_log: CommitLog,
    pub(crate) stats: StoreStats,
    /// Cleared by shutdown: puts answer SERVICE_NOT_AVAILABLE afterwards.
    running: AtomicBool,
    /// Puts between their first status check and their hand-off to a flush service.
    in_flight: AtomicUsize,
    pub(crate) flush_waiter: Waiter,
    pub(crate) commit_waiter: Waiter,
    pub(crate) stats_waiter: Waiter,
    pub(crate) sync_flush: SyncFlushQueues,
    pub(crate) watcher_stop: AtomicBool,
}

#[derive(Default)]
struct Threads {
    commit: Option<JoinHandle<()>>,
    flush: Option<JoinHandle<()>>,
    watcher: Option<JoinHandle<()>>,
    stats: Option<JoinHandle<()>>,
}

/// The message store. Share it as `Arc<MessageStore>`; dropping the last handle shuts it down.
pub struct MessageStore {
    inner: Arc<StoreInner>,
    threads: Mutex<Threads>,
    shut_down: AtomicBool,
}

/// A callback invocation deferred until the put left the in-flight count.
type Deferred = Box<dyn FnOnce() + Send + 'static>;

/// Decrements the in-flight count however a put ends.
struct InFlight<'a>(&'a AtomicUsize);
impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
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
    /// Creates the directories, recovers the CommitLog, rebuilds the consume queues and starts
    /// the store threads.
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
        let inner = Arc::new(StoreInner {
            config,
            commit_log,
            stats: StoreStats::new(),
            running: AtomicBool::new(true),
            in_flight: AtomicUsize::new(0),
            flush_waiter: Waiter::new(),
            commit_waiter: Waiter::new(),
            stats_waiter: Waiter::new(),
            sync_flush: SyncFlushQueues::new(),
            watcher_stop: AtomicBool::new(false),
        });
        let store = MessageStore {
            inner: Arc::clone(&inner),
            threads: Mutex::new(Threads::default()),
            shut_down: AtomicBool::new(false),
        };
        {
            let mut t = store.threads.lock().unwrap_or_else(|e| e.into_inner());
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
            t.stats = Some(spawn(
                "StoreStatsService",
                &inner,
                service::store_stats_service,
            )?);
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
        self.put(vec![msg], done);
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
        self.put(msgs, done);
    }

    fn put(&self, msgs: Vec<PutMessage>, done: PutCallback) {
        let immediate = {
            self.inner.in_flight.fetch_add(1, Ordering::AcqRel);
            let _in_flight = InFlight(&self.inner.in_flight);
            self.put_inner(msgs, done)
        };
        // Callbacks run after the put left the in-flight count, so a callback may even call
        // `shutdown` without waiting for itself.
        if let Some(run) = immediate {
            run();
        }
    }

    /// Returns the callback invocation when the answer is immediate; None when a flush
    /// service will answer.
    fn put_inner(&self, msgs: Vec<PutMessage>, done: PutCallback) -> Option<Deferred> {
        let inner = &self.inner;
        let begin = Instant::now();
        let stats_inner = Arc::clone(inner);
        // `counted`: the put reached the CommitLog. RocketMQ measures the whole put time and counts
        // failures only from there (the store-status and topic checks return before).
        let finish = move |result: PutResult, counted: bool| {
            if counted {
                let ms = begin.elapsed().as_millis() as u64;
                if ms > 500 {
                    eprintln!("putMessage not in lock elapsed time(ms)={ms}");
                }
                stats_inner.stats.record_entire_time(ms);
                if result.append.is_none() {
                    stats_inner
                        .stats
                        .put_failed_times
                        .fetch_add(1, Ordering::Relaxed);
                }
            }
            done(result)
        };
        let failed = |status| PutResult {
            status,
            append: None,
        };
        // §7.2: store status first.
        if !inner.running.load(Ordering::Acquire) {
            return defer(finish, failed(PutMessageStatus::ServiceNotAvailable), false);
        }
        if self.is_os_page_cache_busy() {
            return defer(finish, failed(PutMessageStatus::OsPageCacheBusy), false);
        }
        if let Some(status) = msgs.iter().find_map(|m| check_topic(m).err()) {
            return defer(finish, failed(status), false);
        }
        if inner.config.encode_inside_lock {
            // 4.3 – 4.9.0: DefaultMessageStore.checkMessage refuses long properties up front; the
            // record length is checked inside the lock.
            if msgs.iter().any(|m| m.properties.len() > MAX_PROPERTIES_LEN) {
                return defer(
                    finish,
                    failed(PutMessageStatus::PropertiesSizeExceeded),
                    false,
                );
            }
        } else if let Some(status) = msgs
            .iter()
            .find_map(|m| check_sizes(&inner.config, m).err())
        {
            // The 4.9.1+ encoder runs inside CommitLog.asyncPutMessage: counted as a failed put.
            return defer(finish, failed(status), true);
        }
        let encode_all = |store_timestamp: i64| -> Vec<EncodedMessage> {
            msgs.iter()
                .map(|m| encode(&inner.config, m, store_timestamp))
                .collect()
        };
        let mut encoded = if inner.config.encode_inside_lock {
            Vec::new()
        } else {
            encode_all(0)
        };
        if !inner.config.encode_inside_lock {
            if let Err(status) = check_encoded(&inner.config, &encoded) {
                return defer(finish, failed(status), true);
            }
        }
        let wait_store_ok = msgs[0].wait_store_ok;

        let mut guard = inner.commit_log.lock.lock();
        let lock_begin = Instant::now();
        let appended = self.append_in_lock(&mut guard, &mut encoded, &encode_all, lock_begin);
        drop(guard);
        let in_lock = lock_begin.elapsed();
        let in_lock_micros = in_lock.as_micros() as u64;
        inner.stats.record_in_lock(in_lock_micros);
        if in_lock.as_millis() > 500 {
            eprintln!(
                "[NOTIFYME]putMessage in lock cost time(ms)={}, bodyLength={} AppendMessageResult={:?}",
                in_lock.as_millis(),
                msgs.iter().map(|m| m.body.len()).sum::<usize>(),
                appended.as_ref().map(|a| a.wrote_bytes).ok()
            );
        }
        let appended = match appended {
            Ok(a) => a,
            Err(status) => return defer(finish, failed(status), true),
        };
        inner
            .stats
            .put_times_total
            .fetch_add(appended.offsets.len() as u64, Ordering::Relaxed);
        inner
            .stats
            .put_size_total
            .fetch_add(appended.wrote_bytes as u64, Ordering::Relaxed);
        let store_host = inner.config.store_host;
        let result = AppendResult {
            wrote_offset: appended.wrote_offset,
            wrote_bytes: appended.wrote_bytes,
            msg_ids: appended
                .offsets
                .iter()
                .map(|&o| offset_msg_id(store_host, o))
                .collect(),
            queue_offset: appended.first_queue_offset,
            msg_num: appended.offsets.len(),
            store_timestamp: appended.store_timestamp,
            in_lock_micros,
        };
        let pool_on = inner.commit_log.pool().is_some();
        if pool_on {
            inner.commit_waiter.wakeup();
        } else if let Err(e) = inner.commit_log.dispatch() {
            eprintln!("dispatch failed: {e}");
        }
        match inner.config.flush_disk_type {
            FlushDiskType::SyncFlush if wait_store_ok => {
                let next_offset = result.wrote_offset + result.wrote_bytes as i64;
                let req = FlushRequest::new(
                    next_offset,
                    Duration::from_millis(inner.config.sync_flush_timeout),
                    Box::new(move |status| {
                        finish(
                            PutResult {
                                status,
                                append: Some(result),
                            },
                            true,
                        )
                    }),
                );
                inner.sync_flush.submit(req);
                inner.flush_waiter.wakeup();
                return None;
            }
            // WAIT=false under SYNC_FLUSH only wakes the group-commit service.
            FlushDiskType::SyncFlush => inner.flush_waiter.wakeup(),
            // 4.x wakes the flush service on every put; it only matters with a wake-able wait.
            FlushDiskType::AsyncFlush => {
                if !pool_on && !inner.config.flush_commit_log_timed {
                    inner.flush_waiter.wakeup();
                }
            }
        }
        defer(
            finish,
            PutResult {
                status: PutMessageStatus::PutOk,
                append: Some(result),
            },
            true,
        )
    }

    /// The part of a put that runs under the put lock.
    fn append_in_lock(
        &self,
        guard: &mut PutLockGuard<'_, AppendState>,
        encoded: &mut Vec<EncodedMessage>,
        encode_all: &dyn Fn(i64) -> Vec<EncodedMessage>,
        lock_begin: Instant,
    ) -> Result<commitlog::Appended, PutMessageStatus> {
        let inner = &self.inner;
        let inj = inner.config.injection;
        if inj.put_stall_millis > 0 {
            let now = guard.begin_millis();
            if now - guard.last_stall_millis >= inj.put_stall_interval_millis as i64 {
                guard.last_stall_millis = now;
                std::thread::sleep(Duration::from_millis(inj.put_stall_millis));
            }
        }
        if inner.config.encode_inside_lock {
            // 4.3 – 4.9.0: serialization and the size check happen inside the lock (§7.4).
            *encoded = encode_all(guard.begin_millis());
            check_encoded(&inner.config, encoded)?;
        }
        let result = inner.commit_log.append_locked(guard, encoded);
        if inj.append_delay_micros > 0 {
            let min = Duration::from_micros(inj.append_delay_micros);
            let spent = lock_begin.elapsed();
            if spent < min {
                std::thread::sleep(min - spent);
            }
        }
        result.map_err(|e| match e {
            AppendError::CreateMappedFileFailed => PutMessageStatus::CreateMappedFileFailed,
        })
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
        let log = &self.inner.commit_log;
        let mut result = GetMessageResult {
            status: GetMessageStatus::NoMatchedLogicQueue,
            body: Vec::new(),
            msg_count: 0,
            next_begin_offset: offset,
            min_offset: 0,
            max_offset: 0,
        };
        let Some(cq) = log.consume_queues.find(topic, queue_id) else {
            result.next_begin_offset = 0;
            return result;
        };
        let min = cq.min_offset();
        let max = cq.max_offset();
        result.min_offset = min;
        result.max_offset = max;
        if max == 0 {
            result.status = GetMessageStatus::NoMessageInQueue;
            result.next_begin_offset = 0;
        } else if offset < min {
            result.status = GetMessageStatus::OffsetTooSmall;
            result.next_begin_offset = min;
        } else if offset == max {
            result.status = GetMessageStatus::OffsetOverflowOne;
            result.next_begin_offset = offset;
        } else if offset > max {
            result.status = GetMessageStatus::OffsetOverflowBadly;
            result.next_begin_offset = if min == 0 { min } else { max };
        } else {
            result.status = GetMessageStatus::OffsetFoundNull;
            let max_nums = max_msg_nums.max(1) as usize;
            let mut next = offset;
            while next < max && result.msg_count < max_nums {
                let Some(entry) = cq.get(next) else { break };
                let size = entry.size.max(0) as usize;
                // The first message is always returned, even if larger than the byte budget.
                if result.msg_count > 0 && result.body.len() + size > max_total_bytes {
                    break;
                }
                next += 1;
                if log.read(entry.commit_log_offset, size, &mut result.body) {
                    result.msg_count += 1;
                    result.status = GetMessageStatus::Found;
                }
            }
            result.next_begin_offset = next;
        }
        result
    }

    /// Next logical offset of a queue (0 if unknown).
    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner
            .commit_log
            .consume_queues
            .find(topic, queue_id)
            .map_or(0, |q| q.max_offset())
    }

    /// Smallest logical offset of a queue (0: nothing is ever deleted).
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
        let begin = self.inner.commit_log.lock.begin_time_in_lock();
        let diff = now_millis() - begin;
        diff < PAGE_CACHE_BUSY_DIFF_LIMIT
            && diff > self.inner.config.os_page_cache_busy_timeout_mills as i64
    }

    /// `lockTimeMills` (pageCacheLockTimeMills): how long the current holder has held the put lock.
    pub fn lock_time_mills(&self) -> i64 {
        let begin = self.inner.commit_log.lock.begin_time_in_lock();
        if begin > 0 {
            (now_millis() - begin).max(0)
        } else {
            0
        }
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

    /// The GET_BROKER_RUNTIME_INFO keys the store owns (§10), plus `store*` extras.
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
        m.insert("commitLogMinOffset".into(), log.min_offset().to_string());
        m.insert(
            "dispatchBehindBytes".into(),
            log.dispatch_behind_bytes().to_string(),
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
        m.insert(
            "pageCacheLockTimeMills".into(),
            self.lock_time_mills().to_string(),
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
        let mut t = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        inner.commit_waiter.stop();
        join(t.commit.take());
        inner.flush_waiter.stop();
        join(t.flush.take());
        service::stop_watcher(inner);
        join(t.watcher.take());
        inner.stats_waiter.stop();
        join(t.stats.take());
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

/// The topic checks of §7.2 (the topic is also a consume-queue directory name).
fn check_topic(m: &PutMessage) -> Result<(), PutMessageStatus> {
    let t = m.topic.as_bytes();
    // 5.3: > 127 bytes only for retry topics, never > 255.
    let too_long = t.len() > 255 || (t.len() > 127 && !m.topic.starts_with("%RETRY%"));
    if t.is_empty()
        || too_long
        || m.topic == "."
        || m.topic == ".."
        || t.iter().any(|&b| b == b'/' || b == b'\\' || b == 0)
    {
        return Err(PutMessageStatus::MessageIllegal);
    }
    Ok(())
}

/// The encoder's body and properties limits.
fn check_sizes(config: &StoreConfig, m: &PutMessage) -> Result<(), PutMessageStatus> {
    if m.properties.len() > MAX_PROPERTIES_LEN {
        return Err(PutMessageStatus::PropertiesSizeExceeded);
    }
    if m.body.len() > config.max_message_size {
        return Err(PutMessageStatus::MessageIllegal);
    }
    Ok(())
}

fn defer<F>(finish: F, result: PutResult, counted: bool) -> Option<Deferred>
where
    F: FnOnce(PutResult, bool) + Send + 'static,
{
    Some(Box::new(move || finish(result, counted)))
}

/// Record-length limits: `maxMessageSize` + 64 KiB per batch for the 4.9.1+ encoder, plain
/// `maxMessageSize` for the 4.3 – 4.9.0 in-lock append callback, and whatever fits in one file.
fn check_encoded(config: &StoreConfig, encoded: &[EncodedMessage]) -> Result<(), PutMessageStatus> {
    let total: usize = encoded.iter().map(|e| e.bytes.len()).sum();
    let slack = if config.encode_inside_lock {
        0
    } else {
        RECORD_SLACK
    };
    if total > config.max_message_size + slack
        || total + remoting::message::BLANK_MARKER_LEN > config.mapped_file_size_commit_log
    {
        return Err(PutMessageStatus::MessageIllegal);
    }
    Ok(())
}

fn encode(config: &StoreConfig, m: &PutMessage, store_timestamp: i64) -> EncodedMessage {
    let record = MessageRecord {
        queue_id: m.queue_id,
        flag: m.flag,
        queue_offset: 0,
        physical_offset: 0,
        sys_flag: m.sys_flag,
        born_timestamp: m.born_timestamp,
        born_host: m.born_host,
        store_timestamp,
        store_host: config.store_host,
        reconsume_times: m.reconsume_times,
        prepared_transaction_offset: 0,
        body: m.body.to_vec(),
        topic: m.topic.clone(),
        properties: m.properties.clone(),
    };
    let mut buf = BytesMut::with_capacity(record.encoded_len());
    record.encode(&mut buf);
    EncodedMessage {
        bytes: buf.into(),
        topic: m.topic.clone(),
        queue_id: m.queue_id,
        sys_flag: record.effective_sys_flag(),
        store_ts_pos: 48 + if m.born_host.is_ipv6() { 20 } else { 8 },
    }
}

#[cfg(test)]
mod tests;
