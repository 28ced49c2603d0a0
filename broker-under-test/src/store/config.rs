//! Store configuration: RocketMQ's `MessageStoreConfig` keys the send path depends on (§9.1).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use super::error::StoreError;

/// `flushDiskType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushDiskType {
    /// `ASYNC_FLUSH`: a background thread forces the CommitLog every `flushIntervalCommitLog` (§9.2).
    AsyncFlush,
    /// `SYNC_FLUSH`: a put waiting for the store is answered after group commit forced it (§9.3).
    SyncFlush,
}

/// `useReentrantLockWhenPutMessage` (§8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutLockKind {
    /// PutMessageSpinLock: CAS busy loop, waiters burn CPU.
    Spin,
    /// PutMessageReentrantLock: waiters park.
    Reentrant,
}

/// Our own fault-injection knobs (not RocketMQ's). All zero = off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultInjection {
    /// Once per `put_stall_interval_millis`, an append holds the put lock this long (a page-cache stall).
    pub put_stall_millis: u64,
    /// Minimum time between two injected put stalls; 0 = every append stalls.
    pub put_stall_interval_millis: u64,
    /// Every append takes at least this long inside the put lock (a slower disk).
    pub append_delay_micros: u64,
    /// Every force (msync) takes this much longer.
    pub flush_stall_millis: u64,
}

impl FaultInjection {
    pub fn is_off(&self) -> bool {
        *self == FaultInjection::default()
    }
}

/// The store's settings, with RocketMQ 5.3 defaults (§9.1).
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `storePathRootDir`. Default: `~/store`.
    pub store_path_root_dir: PathBuf,
    /// `mappedFileSizeCommitLog` in bytes. Default: 1 GiB.
    pub mapped_file_size_commit_log: usize,
    /// `flushDiskType`. Default: ASYNC_FLUSH.
    pub flush_disk_type: FlushDiskType,
    /// `flushIntervalCommitLog` in ms. Default: 500.
    pub flush_interval_commit_log: u64,
    /// `flushCommitLogLeastPages` (4 KiB pages). Default: 4.
    pub flush_commit_log_least_pages: usize,
    /// `flushCommitLogThoroughInterval` in ms. Default: 10000.
    pub flush_commit_log_thorough_interval: u64,
    /// `flushCommitLogTimed`: plain sleep (true) or wake-able wait (false). Default: true (false before 4.9.1).
    pub flush_commit_log_timed: bool,
    /// `commitIntervalCommitLog` in ms. Default: 200.
    pub commit_interval_commit_log: u64,
    /// `commitCommitLogLeastPages`. Default: 4.
    pub commit_commit_log_least_pages: usize,
    /// `commitCommitLogThoroughInterval` in ms. Default: 200.
    pub commit_commit_log_thorough_interval: u64,
    /// `syncFlushTimeout` in ms. Default: 5000.
    pub sync_flush_timeout: u64,
    /// `osPageCacheBusyTimeOutMills`. Default: 1000.
    pub os_page_cache_busy_timeout_mills: u64,
    /// Whether the transient store pool is in effect, already resolved from `transientStorePoolEnable` and
    /// the version's conditions (§5). Default: false.
    pub transient_store_pool_in_effect: bool,
    /// `transientStorePoolSize`. Default: 5.
    pub transient_store_pool_size: usize,
    /// `fastFailIfNoBufferInStorePool`. Default: false.
    pub fast_fail_if_no_buffer_in_store_pool: bool,
    /// `maxMessageSize` in bytes. Default: 4 MiB.
    pub max_message_size: usize,
    /// From `useReentrantLockWhenPutMessage`. Default: Reentrant (5.3).
    pub put_lock: PutLockKind,
    /// Serialize the record inside the put lock (4.3 – 4.9.0, §7.4) instead of before it. Default: false.
    pub encode_inside_lock: bool,
    /// STOREHOSTADDRESS and the host part of offset message ids. Default: 127.0.0.1:10911.
    pub store_host: SocketAddr,
    /// Our own fault injection. Default: off.
    pub injection: FaultInjection,
}

impl Default for StoreConfig {
    fn default() -> Self {
        let root = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."))
            .join("store");
        StoreConfig {
            store_path_root_dir: root,
            mapped_file_size_commit_log: 1024 * 1024 * 1024,
            flush_disk_type: FlushDiskType::AsyncFlush,
            flush_interval_commit_log: 500,
            flush_commit_log_least_pages: 4,
            flush_commit_log_thorough_interval: 10_000,
            flush_commit_log_timed: true,
            commit_interval_commit_log: 200,
            commit_commit_log_least_pages: 4,
            commit_commit_log_thorough_interval: 200,
            sync_flush_timeout: 5000,
            os_page_cache_busy_timeout_mills: 1000,
            transient_store_pool_in_effect: false,
            transient_store_pool_size: 5,
            fast_fail_if_no_buffer_in_store_pool: false,
            max_message_size: 4 * 1024 * 1024,
            put_lock: PutLockKind::Reentrant,
            encode_inside_lock: false,
            store_host: SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 10911),
            injection: FaultInjection::default(),
        }
    }
}

/// Smallest CommitLog file we accept: one page, so the blank marker and a small record fit.
pub const MIN_MAPPED_FILE_SIZE: usize = 4096;

impl StoreConfig {
    /// Rejects settings the store cannot run with.
    pub fn validate(&self) -> Result<(), StoreError> {
        if self.mapped_file_size_commit_log < MIN_MAPPED_FILE_SIZE
            || self.mapped_file_size_commit_log > i32::MAX as usize
        {
            return Err(StoreError::Config(format!(
                "mappedFileSizeCommitLog={} must be between {MIN_MAPPED_FILE_SIZE} and {}",
                self.mapped_file_size_commit_log,
                i32::MAX
            )));
        }
        if self.max_message_size == 0 || self.max_message_size > i32::MAX as usize {
            return Err(StoreError::Config(format!(
                "maxMessageSize={} must be between 1 and {}",
                self.max_message_size,
                i32::MAX
            )));
        }
        if self.flush_interval_commit_log == 0 || self.commit_interval_commit_log == 0 {
            return Err(StoreError::Config(
                "flushIntervalCommitLog and commitIntervalCommitLog must be > 0".into(),
            ));
        }
        Ok(())
    }
}
