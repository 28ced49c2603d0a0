//! Retention and disk space (retention reference part A): CleanCommitLogService and
//! CleanConsumeQueueService on one named thread, the two-phase destroy of a CommitLog file, the
//! disk ratios, and the DISK_FULL running flag the put path checks.
//!
//! Where the pieces live: the min-offset rules stay with the files they govern
//! (`CommitLog::min_offset`, `ConsumeQueue::{delete_expired_files, correct_min_offset}`); the
//! put path only asks [`Retention::is_writeable`] through `RunningFlags::check_before_put`.
//!
//! Differences from RocketMQ: a file still held after `destroyMapedFileIntervalForcibly` is
//! unlinked but stays mapped until its last reader lets go (see `destroy.rs`); no index files
//! (the store keeps none); the manual DELETE_EXPIRED_COMMITLOG trigger is not implemented.
//! Our test keys (`injectFileReservedSeconds`, `injectStoreSizeCapBytes`,
//! `injectCleanFirstDelayMillis`) make hours and full disks reachable in a test.
//!
//! This file is only the façade.

mod clean_commit_log;
mod clean_consume_queue;
pub(crate) mod config;
mod destroy;
mod disk;
mod flags;
mod service;
mod state;

pub use config::{DiskModel, RetentionConfig};
pub use disk::{allocated_bytes, DiskRatios};
pub(crate) use service::run;
pub(crate) use state::Retention;
