//! The replication columns. The master's GET_BROKER_RUNTIME_INFO carries broker-under-test's HA
//! keys (docs/src/replication.md): the lag in bytes, and for a SYNC_MASTER the number of puts
//! that waited for a slave with their total and longest wait. The broker keeps no histogram of
//! those waits, so a second's figure is the mean wait of the puts that waited in it (the
//! difference of two samples), and the job's are the mean and the broker's maximum.

use std::collections::BTreeMap;

use crate::report::cells::Fixed;
pub use crate::report::{HaColumns, TimeseriesHa};

/// The master's lag behind it: `commitLogMaxOffset − haSlaveAckOffset` once a slave reported.
pub const LAG_KEY: &str = "haSlaveFallBehindBytes";
/// Puts that waited for a slave (SYNC_MASTER), their total and their longest wait.
pub const WAIT_TIMES_KEY: &str = "haWaitSlaveTimes";
pub const WAIT_TOTAL_KEY: &str = "haWaitSlaveTotalMicros";
pub const WAIT_MAX_KEY: &str = "haWaitSlaveMaxMicros";

fn counter(info: &BTreeMap<String, String>, key: &str) -> Option<u64> {
    info.get(key).and_then(|v| v.trim().parse().ok())
}

/// Turns the master's runtime-info samples into the columns: one call per second, one at the end.
#[derive(Debug, Default)]
pub struct HaSampler {
    first: Option<(u64, u64)>,
    last: Option<(u64, u64)>,
    lag_max: Option<u64>,
    wait_max: Option<u64>,
}

impl HaSampler {
    /// The second's columns from the info sampled at its end (`None` when the broker did not
    /// answer).
    pub fn second(&mut self, info: Option<&BTreeMap<String, String>>) -> TimeseriesHa {
        let Some(info) = info else {
            return TimeseriesHa::default();
        };
        let lag = counter(info, LAG_KEY);
        if let Some(l) = lag {
            self.lag_max = Some(self.lag_max.map_or(l, |m| m.max(l)));
        }
        if let Some(m) = counter(info, WAIT_MAX_KEY) {
            self.wait_max = Some(self.wait_max.map_or(m, |w| w.max(m)));
        }
        let waits = counter(info, WAIT_TIMES_KEY).zip(counter(info, WAIT_TOTAL_KEY));
        let avg = match (self.last, waits) {
            (Some(prev), Some(now)) => mean(prev, now),
            _ => None,
        };
        if let Some(w) = waits {
            // A restarted master counts from zero again: start over from its first sample.
            if self.last.is_some_and(|l| w.0 < l.0) {
                self.first = None;
            }
            self.first.get_or_insert(w);
            self.last = Some(w);
        }
        TimeseriesHa {
            repl_lag_bytes: lag,
            slave_wait_avg_us: avg,
        }
    }

    /// The job's columns (the reconciliation columns are filled by the caller).
    pub fn job(&self) -> HaColumns {
        let (waits, avg) = match (self.first, self.last) {
            (Some(f), Some(l)) => (Some(l.0.saturating_sub(f.0)), mean(f, l)),
            _ => (None, None),
        };
        HaColumns {
            repl_lag_max_bytes: self.lag_max,
            slave_waits: waits,
            slave_wait_avg_us: avg,
            slave_wait_max_us: self.wait_max,
            ..HaColumns::default()
        }
    }

    /// Takes the job's first sample (before the load) so the job's counts start there.
    pub fn baseline(&mut self, info: Option<&BTreeMap<String, String>>) {
        let _ = self.second(info);
    }
}

/// Mean µs per wait between two (times, total µs) samples; None when no put waited.
fn mean(prev: (u64, u64), now: (u64, u64)) -> Option<Fixed<1>> {
    let n = now.0.checked_sub(prev.0)?;
    let total = now.1.checked_sub(prev.1)?;
    (n > 0).then(|| Fixed(total as f64 / n as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn seconds_take_differences_and_the_job_the_whole() {
        let mut s = HaSampler::default();
        s.baseline(Some(&info(&[
            (LAG_KEY, "0"),
            (WAIT_TIMES_KEY, "10"),
            (WAIT_TOTAL_KEY, "1000"),
            (WAIT_MAX_KEY, "200"),
        ])));
        let a = s.second(Some(&info(&[
            (LAG_KEY, "4096"),
            (WAIT_TIMES_KEY, "110"),
            (WAIT_TOTAL_KEY, "41000"),
            (WAIT_MAX_KEY, "900"),
        ])));
        assert_eq!(a.repl_lag_bytes, Some(4096));
        assert_eq!(a.slave_wait_avg_us, Some(Fixed(400.0)));
        // Nothing waited in this second: no mean, and the lag is as written.
        let b = s.second(Some(&info(&[
            (LAG_KEY, "0"),
            (WAIT_TIMES_KEY, "110"),
            (WAIT_TOTAL_KEY, "41000"),
        ])));
        assert_eq!(b.slave_wait_avg_us, None);
        assert_eq!(s.second(None), TimeseriesHa::default());
        let job = s.job();
        assert_eq!(job.repl_lag_max_bytes, Some(4096));
        assert_eq!(job.slave_waits, Some(100));
        assert_eq!(job.slave_wait_avg_us, Some(Fixed(400.0)));
        assert_eq!(job.slave_wait_max_us, Some(900));
    }

    #[test]
    fn a_broker_without_ha_keys_leaves_the_columns_empty() {
        let mut s = HaSampler::default();
        let r = s.second(Some(&info(&[("sendThreadPoolQueueSize", "3")])));
        assert_eq!(r, TimeseriesHa::default());
        assert_eq!(s.job(), HaColumns::default());
    }
}
