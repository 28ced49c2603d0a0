//! The replication columns. The master's GET_BROKER_RUNTIME_INFO carries broker-under-test's HA
//! keys (docs/src/replication.md): the lag in bytes, and for a SYNC_MASTER the number of puts
//! that waited for a slave with their total and longest wait, and (`haWaitSlaveDistribution`)
//! the same waits per bucket. Every figure is the difference of two samples: a second's mean
//! and p99, the job's mean, p50 and p99 (to the bucket's upper bound), and the broker's maximum.

use std::collections::BTreeMap;

pub use crate::report::{HaColumns, TimeseriesHa};
use harness_results::cells::Fixed;

/// The master's lag behind it: `commitLogMaxOffset − haSlaveAckOffset` once a slave reported.
pub const LAG_KEY: &str = "haSlaveFallBehindBytes";
/// Puts that waited for a slave (SYNC_MASTER), their total and their longest wait.
pub const WAIT_TIMES_KEY: &str = "haWaitSlaveTimes";
pub const WAIT_TOTAL_KEY: &str = "haWaitSlaveTotalMicros";
pub const WAIT_MAX_KEY: &str = "haWaitSlaveMaxMicros";
/// The same waits per bucket, counts since start: `<=100us:N <=200us:N … >5000000us:N`.
pub const WAIT_DISTRIBUTION_KEY: &str = "haWaitSlaveDistribution";

/// A parsed `haWaitSlaveDistribution`: (upper bound in µs, None for the last, open bucket;
/// count since start).
type Buckets = Vec<(Option<u64>, u64)>;

fn parse_buckets(text: &str) -> Option<Buckets> {
    let mut out = Vec::new();
    for item in text.split_whitespace() {
        let (bound, n) = item.split_once(':')?;
        let n = n.parse().ok()?;
        let bound = match (bound.strip_prefix("<="), bound.strip_prefix('>')) {
            (Some(b), _) => Some(b.strip_suffix("us")?.parse().ok()?),
            (None, Some(_)) => None,
            _ => return None,
        };
        out.push((bound, n));
    }
    (!out.is_empty()).then_some(out)
}

/// The quantile `q` of the waits between two samples, as the upper bound of its bucket; the
/// open bucket reports `max` (the broker's longest wait). None when nothing waited or the
/// bucket layouts differ.
fn bucket_quantile(prev: Option<&Buckets>, now: &Buckets, q: f64, max: Option<u64>) -> Option<u64> {
    let diff: Vec<(Option<u64>, u64)> = match prev {
        Some(p) if p.len() == now.len() => now
            .iter()
            .zip(p)
            .map(|((b, n), (_, m))| (*b, n.saturating_sub(*m)))
            .collect(),
        Some(_) => return None,
        None => now.clone(),
    };
    let total: u64 = diff.iter().map(|(_, n)| n).sum();
    if total == 0 {
        return None;
    }
    let rank = ((q * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (bound, n) in &diff {
        seen += n;
        if seen >= rank {
            return bound.or(max);
        }
    }
    None
}

fn counter(info: &BTreeMap<String, String>, key: &str) -> Option<u64> {
    info.get(key).and_then(|v| v.trim().parse().ok())
}

/// Turns the master's runtime-info samples into the columns: one call per second, one at the end.
#[derive(Debug, Default)]
pub struct HaSampler {
    first_buckets: Option<Buckets>,
    last_buckets: Option<Buckets>,
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
        let mut p99 = None;
        if let Some(w) = waits {
            // A restarted master counts from zero again: start over from its first sample.
            if self.last.is_some_and(|l| w.0 < l.0) {
                self.first = None;
                self.first_buckets = None;
                self.last_buckets = None;
            }
            self.first.get_or_insert(w);
            self.last = Some(w);
        }
        if let Some(b) = info
            .get(WAIT_DISTRIBUTION_KEY)
            .and_then(|t| parse_buckets(t))
        {
            if self.last_buckets.is_some() {
                p99 = bucket_quantile(self.last_buckets.as_ref(), &b, 0.99, self.wait_max);
            }
            self.first_buckets.get_or_insert_with(|| b.clone());
            self.last_buckets = Some(b);
        }
        TimeseriesHa {
            repl_lag_bytes: lag,
            slave_wait_avg_us: avg,
            slave_wait_p99_us: p99,
        }
    }

    /// The job's columns (the reconciliation columns are filled by the caller).
    pub fn job(&self) -> HaColumns {
        let (waits, avg) = match (self.first, self.last) {
            (Some(f), Some(l)) => (Some(l.0.saturating_sub(f.0)), mean(f, l)),
            _ => (None, None),
        };
        let q = |p: f64| {
            let last = self.last_buckets.as_ref()?;
            bucket_quantile(self.first_buckets.as_ref(), last, p, self.wait_max)
        };
        HaColumns {
            repl_lag_max_bytes: self.lag_max,
            slave_waits: waits,
            slave_wait_avg_us: avg,
            slave_wait_p50_us: q(0.5),
            slave_wait_p99_us: q(0.99),
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

impl crate::part::JobPart for HaSampler {
    fn before_load(
        &mut self,
        b: crate::part::BeforeLoad<'_>,
    ) -> Result<(), crate::part::PartError> {
        self.baseline(b.baseline);
        Ok(())
    }

    fn second(
        &mut self,
        second: &mut crate::part::Second<'_>,
        row: &mut crate::report::TimeseriesRow,
    ) {
        row.ha = HaSampler::second(self, second.info);
    }

    fn finish(&mut self, cols: crate::part::JobColumns<'_>) -> Result<(), crate::part::PartError> {
        cols.res.ha = self.job();
        Ok(())
    }
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
    fn the_distribution_gives_p50_and_p99_per_second_and_per_job() {
        let d = |a: u64, b: u64, c: u64| {
            format!("<=100us:{a} <=200us:{b} <=5000000us:0 >5000000us:{c}")
        };
        let mut s = HaSampler::default();
        s.baseline(Some(&info(&[
            (WAIT_TIMES_KEY, "0"),
            (WAIT_TOTAL_KEY, "0"),
            (WAIT_DISTRIBUTION_KEY, &d(0, 0, 0)),
        ])));
        // 98 short waits and 2 in the 200 µs bucket: p99 is that bucket's bound.
        let a = s.second(Some(&info(&[
            (WAIT_TIMES_KEY, "100"),
            (WAIT_TOTAL_KEY, "10000"),
            (WAIT_DISTRIBUTION_KEY, &d(98, 2, 0)),
        ])));
        assert_eq!(a.slave_wait_p99_us, Some(200));
        // Then one wait past the last bound: the open bucket reports the broker's maximum.
        let b = s.second(Some(&info(&[
            (WAIT_TIMES_KEY, "101"),
            (WAIT_TOTAL_KEY, "6010000"),
            (WAIT_MAX_KEY, "6000000"),
            (WAIT_DISTRIBUTION_KEY, &d(98, 2, 1)),
        ])));
        assert_eq!(b.slave_wait_p99_us, Some(6_000_000));
        let job = s.job();
        assert_eq!(job.slave_wait_p50_us, Some(100));
        assert_eq!(job.slave_wait_p99_us, Some(200));
        assert_eq!(parse_buckets("<=100us:x"), None);
        assert_eq!(parse_buckets("=100us:1"), None);
    }

    #[test]
    fn a_broker_without_ha_keys_leaves_the_columns_empty() {
        let mut s = HaSampler::default();
        let r = s.second(Some(&info(&[("sendThreadPoolQueueSize", "3")])));
        assert_eq!(r, TimeseriesHa::default());
        assert_eq!(s.job(), HaColumns::default());
    }
}
