//! Metrics: which way is better, and how each is computed from per-second intervals for the
//! block bootstrap.

use std::borrow::Cow;
use std::sync::LazyLock;

use harness_results::read::Second;
use harness_results::BusyClass;

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    HigherIsBetter,
    LowerIsBetter,
}

/// How a metric is computed from per-second intervals for the block bootstrap.
#[derive(Debug, Clone, Copy)]
pub enum SeriesStat {
    /// Mean of a per-second column.
    Mean(&'static str),
    /// Median of a per-second column (per-second percentiles are skewed by stalls).
    Median(&'static str),
    /// Sum of one column over the sum of the attempt columns.
    ShareOfAttempts(&'static str),
    /// [`SeriesStat::ShareOfAttempts`] of the busy answers of one class (`busy_<class>`).
    BusyShare(BusyClass),
    /// No per-second equivalent (e.g. p99.9 needs more samples than a second holds).
    None,
}

/// Columns of timeseries.csv whose sum is the sends that went on the wire (every outcome
/// but `dropped`), the denominator of summary.csv's `busy_rate` = busy / (sent − dropped).
const ATTEMPT_COLUMNS: &[&str] = &["ok", "busy", "errors", "timeouts"];

#[derive(Debug, Clone)]
pub struct Metric {
    /// Name in summary.csv (or a derived `busy_<class>_rate`).
    pub name: Cow<'static, str>,
    pub direction: Direction,
    pub series: SeriesStat,
}

const fn m(name: &'static str, direction: Direction, series: SeriesStat) -> Metric {
    Metric {
        name: Cow::Borrowed(name),
        direction,
        series,
    }
}

use Direction::{HigherIsBetter as Up, LowerIsBetter as Down};

/// Metrics compared by default, in display order. The per-class busy rates follow
/// `busy_rate` in the order of [`BusyClass::ALL`], so a new class is compared without an
/// edit here.
pub static METRICS: LazyLock<Vec<Metric>> = LazyLock::new(|| {
    let head = [
        m("achieved_rate", Up, SeriesStat::Mean("achieved_rate")),
        m("ok_rate", Up, SeriesStat::Mean("ok")),
        m("p50_ms", Down, SeriesStat::Median("p50_ms")),
        m("p99_ms", Down, SeriesStat::Median("p99_ms")),
        m("p999_ms", Down, SeriesStat::None),
        m("busy_rate", Down, SeriesStat::ShareOfAttempts("busy")),
    ];
    let busy_classes = BusyClass::ALL.into_iter().map(|class| Metric {
        name: Cow::Owned(format!("busy_{}_rate", class.column())),
        direction: Down,
        series: SeriesStat::BusyShare(class),
    });
    let tail = [
        m("timeouts", Down, SeriesStat::Mean("timeouts")),
        m("broker_cpu_avg", Down, SeriesStat::Mean("broker_cpu")),
    ];
    head.into_iter().chain(busy_classes).chain(tail).collect()
});

/// Look a metric up by name; unknown summary columns are compared as lower-is-better with
/// no per-second statistic, so a user can still ask for e.g. `service_p99_ms`.
pub fn metric_named(name: &str) -> Metric {
    METRICS
        .iter()
        .find(|x| x.name == name)
        .cloned()
        .unwrap_or(Metric {
            name: Cow::Owned(name.to_string()),
            direction: if name.ends_with("rate") && !name.starts_with("busy") {
                Up
            } else {
                Down
            },
            series: SeriesStat::None,
        })
}

impl SeriesStat {
    /// Per-second inputs of the statistic, one vector per repetition, extracted once so
    /// the bootstrap loop touches plain numbers: `(value, 0)` for Mean/Median,
    /// `(count, attempts)` for the shares. Seconds without the column are skipped.
    pub fn extract(&self, series: &[&[Second]]) -> Vec<Vec<(f64, f64)>> {
        let (column, share): (Cow<'static, str>, bool) = match *self {
            SeriesStat::Mean(c) | SeriesStat::Median(c) => (Cow::Borrowed(c), false),
            SeriesStat::ShareOfAttempts(c) => (Cow::Borrowed(c), true),
            SeriesStat::BusyShare(class) => (Cow::Owned(format!("busy_{}", class.column())), true),
            SeriesStat::None => return vec![Vec::new(); series.len()],
        };
        series
            .iter()
            .map(|rep| {
                rep.iter()
                    .filter_map(|s| {
                        let v = s.get(&column)?;
                        let attempts = if share {
                            ATTEMPT_COLUMNS.iter().filter_map(|a| s.get(a)).sum::<f64>()
                        } else {
                            0.0
                        };
                        Some((v, attempts))
                    })
                    .collect()
            })
            .collect()
    }

    /// The statistic over (resampled) per-second inputs from [`SeriesStat::extract`].
    pub fn reduce(&self, x: &[&(f64, f64)]) -> Option<f64> {
        if x.is_empty() {
            return None;
        }
        match *self {
            SeriesStat::Mean(_) => Some(x.iter().map(|p| p.0).sum::<f64>() / x.len() as f64),
            SeriesStat::Median(_) => {
                let mut v: Vec<f64> = x.iter().map(|p| p.0).collect();
                let mid = v.len() / 2;
                let (lower, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
                let m = *m;
                Some(if x.len() % 2 == 1 {
                    m
                } else {
                    // Even count: average with the largest of the lower half.
                    let below = lower.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    (below + m) / 2.0
                })
            }
            SeriesStat::ShareOfAttempts(_) | SeriesStat::BusyShare(_) => {
                let num: f64 = x.iter().map(|p| p.0).sum();
                let den: f64 = x.iter().map(|p| p.1).sum();
                Some(if den > 0.0 { num / den } else { 0.0 })
            }
            SeriesStat::None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_metrics_keep_their_display_order() {
        let names: Vec<&str> = METRICS.iter().map(|m| m.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "achieved_rate",
                "ok_rate",
                "p50_ms",
                "p99_ms",
                "p999_ms",
                "busy_rate",
                "busy_pcbusy_clean_queue_rate",
                "busy_timeout_clean_queue_rate",
                "busy_rejectrequest_rate",
                "busy_overload_rate",
                "busy_pc_synchronized_rate",
                "busy_other_rate",
                "timeouts",
                "broker_cpu_avg",
            ]
        );
    }

    #[test]
    fn a_busy_class_metric_is_its_share_of_attempts() {
        let mut sec = Second::default();
        for (k, v) in [
            ("ok", 7.0),
            ("busy", 3.0),
            ("busy_overload", 2.0),
            ("timeouts", 1.0),
        ] {
            sec.values.insert(k.into(), Some(v));
        }
        let m = metric_named("busy_overload_rate");
        assert!(matches!(
            m.series,
            SeriesStat::BusyShare(BusyClass::Overload)
        ));
        let x = m.series.extract(&[&[sec.clone()]]);
        assert_eq!(x, [[(2.0, 11.0)]]);
        let refs: Vec<&(f64, f64)> = x[0].iter().collect();
        assert_eq!(m.series.reduce(&refs), Some(2.0 / 11.0));
        // A class without its column in the series contributes no seconds.
        assert_eq!(
            metric_named("busy_other_rate").series.extract(&[&[sec]]),
            [Vec::<(f64, f64)>::new()]
        );
    }
}
