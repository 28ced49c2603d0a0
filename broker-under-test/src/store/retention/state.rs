//! [`Retention`]: what the clean rounds, the put path's writable check and runtime info share.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::config::RetentionConfig;
use super::disk::{java_double, measure, DiskRatios};
use super::flags::RunningFlags;
use crate::store::waiter::Waiter;

/// What only the service thread changes between rounds.
#[derive(Default)]
pub(crate) struct RoundState {
    /// `cleanImmediately`: set by the space check when the disk is over the force ratio.
    pub(crate) clean_immediately: bool,
    /// `lastRedeleteTimestamp` (epoch ms).
    pub(crate) last_redelete_millis: i64,
    /// CleanConsumeQueueService's `lastPhysicalMinOffset`.
    pub(crate) last_physical_min_offset: i64,
}

pub(crate) struct Retention {
    pub(crate) config: RetentionConfig,
    /// `storePathRootDir`.
    pub(crate) root: PathBuf,
    pub(crate) flags: RunningFlags,
    /// Wakes the service thread's waits early on shutdown.
    pub(crate) waiter: Waiter,
    pub(crate) round: Mutex<RoundState>,
    pub(crate) deleted_commit_log_files: AtomicU64,
    pub(crate) deleted_consume_queue_files: AtomicU64,
}

impl Retention {
    pub(crate) fn new(config: RetentionConfig, root: PathBuf) -> Self {
        Retention {
            config,
            root,
            flags: RunningFlags::new(),
            waiter: Waiter::new(),
            round: Mutex::new(RoundState::default()),
            deleted_commit_log_files: AtomicU64::new(0),
            deleted_consume_queue_files: AtomicU64::new(0),
        }
    }

    /// The disk ratios now (the code-14 remark and runtime info measure at the moment they
    /// are asked, like RocketMQ's `diskUtil`).
    pub(crate) fn disk_ratios(&self) -> DiskRatios {
        measure(&self.root, self.config.disk, self.config.profile)
    }

    /// The store is writable (`RunningFlags.isWriteable`).
    pub(crate) fn is_writeable(&self) -> bool {
        self.flags.is_writeable()
    }

    /// Runtime info: RocketMQ's `commitLogDiskRatio` and `consumeQueueDiskRatio`, and ours
    /// (`store…`): the writable flag, the flag bits, deleted files and refused puts.
    pub(crate) fn runtime_info(&self, out: &mut BTreeMap<String, String>) {
        let r = self.disk_ratios();
        out.insert("commitLogDiskRatio".into(), java_double(r.commit_log));
        out.insert("consumeQueueDiskRatio".into(), java_double(r.consume_queue));
        out.insert(
            "storeWriteable".into(),
            self.flags.is_writeable().to_string(),
        );
        out.insert("storeRunningFlags".into(), self.flags.bits().to_string());
        out.insert(
            "storeNotWriteableRefusals".into(),
            self.flags.refused_total().to_string(),
        );
        out.insert(
            "storeDeletedCommitLogFiles".into(),
            self.deleted_commit_log_files
                .load(Ordering::Relaxed)
                .to_string(),
        );
        out.insert(
            "storeDeletedConsumeQueueFiles".into(),
            self.deleted_consume_queue_files
                .load(Ordering::Relaxed)
                .to_string(),
        );
    }
}
