//! Latency spectra from `latency.hlog`: the `…/latency` interval histograms of each job (and
//! knee probe), merged over the measured seconds, as percentile → latency points.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::error::ReportError;

/// `(cell_id, repetition, probe)` of a latency histogram tag `<cell>/r<rep>[/p<probe>]/latency`.
pub type JobKey = (String, String, Option<String>);

/// The per-second latency histograms of every job, in log order.
#[derive(Default)]
pub struct Intervals(pub BTreeMap<JobKey, Vec<Histogram<u64>>>);

impl Intervals {
    /// Reads `path`; a missing file gives no spectra rather than an error (older runs).
    pub fn read(path: &Path) -> Result<Intervals, ReportError> {
        let Ok(bytes) = std::fs::read(path) else {
            return Ok(Intervals::default());
        };
        let bad = |message: String| ReportError::Hlog {
            path: path.to_owned(),
            message,
        };
        let mut out: BTreeMap<JobKey, Vec<Histogram<u64>>> = BTreeMap::new();
        let mut de = Deserializer::new();
        for entry in IntervalLogIterator::new(&bytes) {
            let entry = entry.map_err(|e| bad(format!("unreadable interval log: {e:?}")))?;
            let LogEntry::Interval(h) = entry else {
                continue;
            };
            let Some(key) = h.tag().and_then(|t| job_key(t.as_str())) else {
                continue;
            };
            let raw = base64::engine::general_purpose::STANDARD
                .decode(h.encoded_histogram())
                .map_err(|e| bad(format!("histogram of {}: {e}", key.0)))?;
            let hist: Histogram<u64> = de
                .deserialize(&mut raw.as_slice())
                .map_err(|e| bad(format!("histogram of {}: {e:?}", key.0)))?;
            out.entry(key).or_default().push(hist);
        }
        Ok(Intervals(out))
    }

    /// The job's histograms `skip..skip + take` merged (the measured seconds), if any.
    pub fn merged(&self, key: &JobKey, skip: usize, take: usize) -> Option<Histogram<u64>> {
        let all = self.0.get(key)?;
        let mut it = all.iter().skip(skip).take(take);
        let mut total = it.next()?.clone();
        // Deserialized histograms do not grow by themselves; a later second may hold larger values.
        total.auto(true);
        for h in it {
            total.add(h).ok()?;
        }
        Some(total)
    }
}

fn job_key(tag: &str) -> Option<JobKey> {
    let parts: Vec<&str> = tag.split('/').collect();
    match parts.as_slice() {
        [cell, rep, "latency"] => {
            Some((cell.to_string(), rep.trim_start_matches('r').into(), None))
        }
        [cell, rep, probe, "latency"] => Some((
            cell.to_string(),
            rep.trim_start_matches('r').into(),
            Some(probe.trim_start_matches('p').into()),
        )),
        _ => None,
    }
}

/// HdrHistogram's percentile distribution: `(1 / (1 − q), latency ms)` from q = 0 up to
/// 99.999 %, the x value as HdrHistogram's plotter puts it on a log axis.
pub fn spectrum(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = h
        .iter_quantiles(5)
        .map(|v| {
            (
                v.quantile_iterated_to(),
                v.value_iterated_to() as f64 / 1000.0,
            )
        })
        .filter(|(q, _)| *q <= 0.99999)
        .map(|(q, ms)| (1.0 / (1.0 - q), ms))
        .collect();
    pts.push((1e5, h.value_at_quantile(0.99999) as f64 / 1000.0));
    pts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_spectrum() {
        assert_eq!(
            job_key("ab/r1/latency"),
            Some(("ab".into(), "1".into(), None))
        );
        assert_eq!(
            job_key("ab/r2/p7/latency"),
            Some(("ab".into(), "2".into(), Some("7".into())))
        );
        assert_eq!(job_key("ab/r1/service"), None);
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in 1..=10_000u64 {
            h.record(v).unwrap();
        }
        let s = spectrum(&h);
        assert_eq!(s[0].0, 1.0);
        assert!(s.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        let p99 = s.iter().find(|(x, _)| *x >= 100.0).unwrap().1;
        assert!((p99 - 9.9).abs() < 0.1, "{p99}");
        assert_eq!(s.last().unwrap().0, 1e5);
    }

    #[test]
    fn merged_intervals_grow_to_the_largest_value() {
        let mut small = Histogram::<u64>::new_with_bounds(1, 2, 3).unwrap();
        small.record(1).unwrap();
        let mut big = Histogram::<u64>::new(3).unwrap();
        big.record(5_000_000).unwrap();
        let key: JobKey = ("c".into(), "1".into(), None);
        let i = Intervals(BTreeMap::from([(
            key.clone(),
            vec![small.clone(), big, small],
        )]));
        let m = i.merged(&key, 1, 2).unwrap();
        assert_eq!(m.len(), 2);
        assert!(m.max() >= 5_000_000);
        assert!(i.merged(&key, 3, 1).is_none());
    }
}
