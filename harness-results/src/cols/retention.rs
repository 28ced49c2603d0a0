//! The retention columns of `summary.csv` (filled by `runner::retention`): what the broker's
//! clean rounds deleted, read from GET_BROKER_RUNTIME_INFO every second. Empty for a broker
//! that reports no `commitLogMinOffset`.

use serde::Serialize;

use crate::cells::Fixed;

/// Over the whole job (warm-up included: a clean round does not wait for the measured window).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RetentionColumns {
    /// Clean rounds seen deleting CommitLog files: samples in which `commitLogMinOffset` rose,
    /// rising samples in a row counted once (a round deletes its files 100 ms apart, and the
    /// rounds are `cleanResourceInterval`, 10 s, apart).
    pub retention_rounds: Option<u64>,
    /// How far `commitLogMinOffset` moved over the job, MiB: the CommitLog deleted.
    pub commitlog_deleted_mb: Option<Fixed<1>>,
    /// The largest `commitLogDiskRatio` sampled (0–1; RocketMQ's own reading of the disk).
    pub disk_ratio_max: Option<Fixed<2>>,
}
