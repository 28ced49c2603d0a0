//! The replication columns of `summary.csv` and `timeseries.csv` (filled by `harness::ha`);
//! empty cells for a broker that reports no HA keys.

use serde::Serialize;

use crate::cells::Fixed;

/// `timeseries.csv`'s replication columns: empty for a broker that reports no HA keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TimeseriesHa {
    /// The master's `haSlaveFallBehindBytes` at the end of the second.
    pub repl_lag_bytes: Option<u64>,
    /// Mean wait for the slave of the puts that waited in the second, µs.
    pub slave_wait_avg_us: Option<Fixed<1>>,
    /// p99 of those waits, µs, to the upper bound of the broker's bucket
    /// (`haWaitSlaveDistribution`; empty for a broker without it).
    pub slave_wait_p99_us: Option<u64>,
}

/// `summary.csv`'s replication columns, over the whole job (warm-up included, like the broker
/// counters they come from).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HaColumns {
    /// The largest `repl_lag_bytes` of the job's seconds.
    pub repl_lag_max_bytes: Option<u64>,
    /// Puts that waited for the slave.
    pub slave_waits: Option<u64>,
    pub slave_wait_avg_us: Option<Fixed<1>>,
    /// p50 / p99 of the job's waits, µs, to the upper bound of the broker's bucket.
    pub slave_wait_p50_us: Option<u64>,
    pub slave_wait_p99_us: Option<u64>,
    /// The broker's longest wait (`haWaitSlaveMaxMicros`; a process's lifetime, which is the job's).
    pub slave_wait_max_us: Option<u64>,
    /// Acknowledged sends (SUCCESS) absent from the master's store / the slave's store, after
    /// a fault with `[cluster] slaves = 1` (`acked_lost` is the pair's: in neither store).
    pub acked_lost_master: Option<u64>,
    pub acked_lost_slave: Option<u64>,
}
