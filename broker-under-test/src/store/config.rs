//! Store configuration: RocketMQ's `MessageStoreConfig` keys the send path depends on (§9.1).

use std::{
    collections::BTreeMap,
    net::{IpAddr, SocketAddr},
    path::PathBuf,
    time::Duration,
};

use super::error::StoreError;
use super::retention::config::RetentionConfig;
use crate::keys::{self, BadValue, Reader, VersionProfile};

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

/// How far ReputMessageService dispatches (`getReputEndOffset`, see `reput.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReputEnd {
    /// 4.3, 4.9, and 5.3 under ASYNC_FLUSH: `CommitLog.getMaxOffset()`, the readable end (the
    /// committed position of a file whose appends go to a transient-pool buffer).
    MaxOffset,
    /// 5.3 under SYNC_FLUSH: `getConfirmOffset()` is `flushedWhere`, so consumers see only forced data.
    FlushedWhere,
}

/// `brokerRole` as the store sees it (MessageStoreConfig.brokerRole): a SLAVE's CommitLog is
/// written by replication only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreRole {
    /// ASYNC_MASTER or SYNC_MASTER.
    Master,
    /// SLAVE: every put is refused with SERVICE_NOT_AVAILABLE (4.9.8
    /// `DefaultMessageStore.checkStoreStatus` l.405-411; 5.3.3 `HookUtils.checkBeforePutMessage`
    /// l.66-73; 4.3.2 `putMessage` l.311-318).
    Slave,
}

/// What a read that finds the request offset out of range sets `nextBeginOffset` to
/// (`DefaultMessageStore.nextOffsetCorrection`, 4.9.8 l.1255-1261, 5.3.3 l.1729-1736).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetCorrection {
    /// A master, or a SLAVE with `offsetCheckInSlave=true`: the corrected offset (0, the
    /// queue's min or max).
    Correct,
    /// A SLAVE with `offsetCheckInSlave=false` (the default): the requested offset, unchanged;
    /// the pull processor turns 21 into 20 (PullMessageProcessor 4.9.8 l.428-452).
    KeepRequested,
}

/// Where a put's page-cache-busy check comes among the store's checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutCheckOrder {
    /// 4.9: `checkStoreStatus` ends with the busy check, and `checkMessage` (topic length,
    /// properties) runs after it (4.9.8 `DefaultMessageStore.asyncPutMessage` l.449-457,
    /// `checkStoreStatus` l.424-426).
    BusyFirst,
    /// 4.3 and 5.3: the topic (and on 4.3 the properties) are checked first, the busy check
    /// comes last (4.3.2 `DefaultMessageStore.putMessage` l.331-343; 5.3.3
    /// `HookUtils.checkBeforePutMessage` l.86-107).
    LegalityFirst,
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
    /// Every append burns this much CPU time of its thread inside the put lock: a slower send
    /// path that costs CPU, where `append_delay_micros` sleeps. `injectAppendSpinMicros` plus
    /// `injectAppendSpinNanos`: one append costs about 13 µs of broker CPU here, so a 10%
    /// regression needs sub-microsecond steps.
    pub append_spin: Duration,
    /// Every force (msync) takes this much longer; writers do not wait for it.
    pub flush_stall_millis: u64,
    /// Once per `page_cache_stall_interval_millis`, the next write into file-backed pages blocks
    /// this long, on whichever thread makes it (the page-cache model, `page_cache.rs`).
    pub page_cache_stall_millis: u64,
    /// Minimum time between two page-cache stalls; 0 = every such write stalls.
    pub page_cache_stall_interval_millis: u64,
    /// Every force takes this much longer, and writes into the pages being forced wait for it.
    pub writeback_stall_millis: u64,
    /// Whenever it finds undispatched data, ReputMessageService waits this long (only a stop
    /// cuts it short) before it dispatches: a dispatch that falls behind the writers.
    pub reput_stall_millis: u64,
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
    /// Whether a busy page cache or an illegal topic answers first. Default: LegalityFirst (5.3).
    pub check_order: PutCheckOrder,
    /// Stripes of 5.x's per-topic-queue lock, taken before the put lock (`topicQueueLockNum`,
    /// 32 in 5.3.3's MessageStoreConfig; 4.x has none: 0). Default: 32 (5.3).
    pub topic_queue_lock_num: usize,
    /// STOREHOSTADDRESS and the host part of offset message ids. Default: 127.0.0.1:10911.
    pub store_host: SocketAddr,
    /// How far ReputMessageService dispatches. Default: MaxOffset (5.3 under ASYNC_FLUSH).
    pub reput_end: ReputEnd,
    /// From `brokerRole`. Default: Master.
    pub role: StoreRole,
    /// From `brokerRole` and `offsetCheckInSlave`. Default: Correct.
    pub offset_correction: OffsetCorrection,
    /// `brokerRole=SLAVE`: ReputMessageService counts every replicated message as a put
    /// (`putTps`, `putMessageTimesTotal`), as RocketMQ's slave dispatch does. Default: false.
    pub count_replicated_puts: bool,
    /// Our own fault injection. Default: off.
    pub injection: FaultInjection,
    /// Retention and disk space (`retention/`). Default: RocketMQ's.
    pub retention: RetentionConfig,
}

impl Default for StoreConfig {
    /// RocketMQ 5.3's defaults, from the key table.
    fn default() -> Self {
        let map = keys::defaults(VersionProfile::V5_3, None);
        StoreConfig::from_keys(&map).expect("the key table's defaults are valid")
    }
}

impl StoreConfig {
    /// Builds the store's settings from an effective map holding every key of the key table.
    /// `store_host` gets `brokerIP1` and `listenPort`.
    pub fn from_keys(map: &BTreeMap<String, String>) -> Result<Self, BadValue> {
        let r = Reader { map };
        let profile: VersionProfile = r.get("brokerVersionProfile")?;
        let flush_disk_type = match r.raw("flushDiskType") {
            "ASYNC_FLUSH" => FlushDiskType::AsyncFlush,
            "SYNC_FLUSH" => FlushDiskType::SyncFlush,
            other => {
                return Err(BadValue {
                    key: "flushDiskType".into(),
                    value: other.into(),
                    reason: "expected ASYNC_FLUSH or SYNC_FLUSH".into(),
                })
            }
        };
        let slave = r.raw("brokerRole") == "SLAVE";
        let pool_enable = r.bool("transientStorePoolEnable")?;
        // §5: the pool is only in effect under the selected release's conditions.
        let pool_in_effect = pool_enable
            && !slave
            && (profile == VersionProfile::V5_3 || flush_disk_type == FlushDiskType::AsyncFlush);
        let ip: IpAddr = r.get("brokerIP1")?;
        Ok(StoreConfig {
            store_path_root_dir: PathBuf::from(r.raw("storePathRootDir")),
            mapped_file_size_commit_log: r.get("mappedFileSizeCommitLog")?,
            flush_disk_type,
            flush_interval_commit_log: r.get("flushIntervalCommitLog")?,
            flush_commit_log_least_pages: r.get("flushCommitLogLeastPages")?,
            flush_commit_log_thorough_interval: r.get("flushCommitLogThoroughInterval")?,
            flush_commit_log_timed: r.bool("flushCommitLogTimed")?,
            commit_interval_commit_log: r.get("commitIntervalCommitLog")?,
            commit_commit_log_least_pages: r.get("commitCommitLogLeastPages")?,
            commit_commit_log_thorough_interval: r.get("commitCommitLogThoroughInterval")?,
            sync_flush_timeout: r.get("syncFlushTimeout")?,
            os_page_cache_busy_timeout_mills: r.get("osPageCacheBusyTimeOutMills")?,
            transient_store_pool_in_effect: pool_in_effect,
            transient_store_pool_size: r.get("transientStorePoolSize")?,
            fast_fail_if_no_buffer_in_store_pool: r.bool("fastFailIfNoBufferInStorePool")?,
            max_message_size: r.get("maxMessageSize")?,
            put_lock: if r.bool("useReentrantLockWhenPutMessage")? {
                PutLockKind::Reentrant
            } else {
                PutLockKind::Spin
            },
            // Before 4.9.1 there is no pre-encoder: the record is built inside the put lock.
            encode_inside_lock: profile == VersionProfile::V4_3,
            topic_queue_lock_num: if profile == VersionProfile::V5_3 {
                32
            } else {
                0
            },
            check_order: if profile == VersionProfile::V4_9 {
                PutCheckOrder::BusyFirst
            } else {
                PutCheckOrder::LegalityFirst
            },
            store_host: SocketAddr::new(ip, r.get("listenPort")?),
            reput_end: if profile == VersionProfile::V5_3
                && flush_disk_type == FlushDiskType::SyncFlush
            {
                ReputEnd::FlushedWhere
            } else {
                ReputEnd::MaxOffset
            },
            role: if slave {
                StoreRole::Slave
            } else {
                StoreRole::Master
            },
            offset_correction: if slave && !r.bool("offsetCheckInSlave")? {
                OffsetCorrection::KeepRequested
            } else {
                OffsetCorrection::Correct
            },
            count_replicated_puts: slave,
            retention: RetentionConfig::from_keys(&r, profile)?,
            injection: FaultInjection {
                put_stall_millis: r.get("injectPutStallMillis")?,
                put_stall_interval_millis: r.get("injectPutStallIntervalMillis")?,
                append_delay_micros: r.get("injectAppendDelayMicros")?,
                append_spin: Duration::from_micros(r.get("injectAppendSpinMicros")?)
                    + Duration::from_nanos(r.get("injectAppendSpinNanos")?),
                flush_stall_millis: r.get("injectFlushStallMillis")?,
                page_cache_stall_millis: r.get("injectPageCacheStallMillis")?,
                page_cache_stall_interval_millis: r.get("injectPageCacheStallIntervalMillis")?,
                writeback_stall_millis: r.get("injectWritebackStallMillis")?,
                reput_stall_millis: r.get("injectReputStallMillis")?,
            },
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_spin_adds_the_micros_and_the_nanos_keys() {
        let mut map = keys::defaults(VersionProfile::V5_3, None);
        assert_eq!(
            StoreConfig::from_keys(&map).unwrap().injection.append_spin,
            Duration::ZERO
        );
        map.insert("injectAppendSpinMicros".into(), "2".into());
        map.insert("injectAppendSpinNanos".into(), "250".into());
        let config = StoreConfig::from_keys(&map).unwrap();
        assert_eq!(config.injection.append_spin, Duration::from_nanos(2_250));
    }

    #[test]
    fn reput_end_follows_the_profile_and_the_flush_type() {
        use ReputEnd::{FlushedWhere, MaxOffset};
        for (profile, flush, end) in [
            (VersionProfile::V4_3, "SYNC_FLUSH", MaxOffset),
            (VersionProfile::V4_9, "SYNC_FLUSH", MaxOffset),
            (VersionProfile::V5_3, "ASYNC_FLUSH", MaxOffset),
            (VersionProfile::V5_3, "SYNC_FLUSH", FlushedWhere),
        ] {
            let mut map = keys::defaults(profile, None);
            map.insert("flushDiskType".into(), flush.into());
            map.insert("injectReputStallMillis".into(), "250".into());
            let config = StoreConfig::from_keys(&map).unwrap();
            assert_eq!(config.reput_end, end, "{profile:?} {flush}");
            assert_eq!(config.injection.reput_stall_millis, 250);
        }
    }
}
