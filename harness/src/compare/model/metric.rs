//! Metrics: which way is better, and how each is computed from per-second intervals for the
//! block bootstrap.

use std::borrow::Cow;

use crate::compare::load::Second;

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

/// Metrics compared by default, in display order.
pub const METRICS: &[Metric] = &[
    m("achieved_rate", Up, SeriesStat::Mean("achieved_rate")),
    m("ok_rate", Up, SeriesStat::Mean("ok")),
    m("p50_ms", Down, SeriesStat::Median("p50_ms")),
    m("p99_ms", Down, SeriesStat::Median("p99_ms")),
    m("p999_ms", Down, SeriesStat::None),
    m("busy_rate", Down, SeriesStat::ShareOfAttempts("busy")),
    m(
        "busy_pcbusy_clean_queue_rate",
        Down,
        SeriesStat::ShareOfAttempts("busy_pcbusy_clean_queue"),
    ),
    m(
        "busy_timeout_clean_queue_rate",
        Down,
        SeriesStat::ShareOfAttempts("busy_timeout_clean_queue"),
    ),
    m(
        "busy_rejectrequest_rate",
        Down,
        SeriesStat::ShareOfAttempts("busy_rejectrequest"),
    ),
    m(
        "busy_overload_rate",
        Down,
        SeriesStat::ShareOfAttempts("busy_overload"),
    ),
    m(
        "busy_pc_synchronized_rate",
        Down,
        SeriesStat::ShareOfAttempts("busy_pc_synchronized"),
    ),
    m(
        "busy_other_rate",
        Down,
        SeriesStat::ShareOfAttempts("busy_other"),
    ),
    m("timeouts", Down, SeriesStat::Mean("timeouts")),
    m("broker_cpu_avg", Down, SeriesStat::Mean("broker_cpu")),
];

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
    /// `(count, attempts)` for ShareOfAttempts. Seconds without the column are skipped.
    pub fn extract(&self, series: &[&[Second]]) -> Vec<Vec<(f64, f64)>> {
        series
            .iter()
            .map(|rep| {
                rep.iter()
                    .filter_map(|s| match *self {
                        SeriesStat::Mean(c) | SeriesStat::Median(c) => s.get(c).map(|v| (v, 0.0)),
                        SeriesStat::ShareOfAttempts(c) => s.get(c).map(|v| {
                            (
                                v,
                                ATTEMPT_COLUMNS.iter().filter_map(|a| s.get(a)).sum::<f64>(),
                            )
                        }),
                        SeriesStat::None => None,
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
            SeriesStat::ShareOfAttempts(_) => {
                let num: f64 = x.iter().map(|p| p.0).sum();
                let den: f64 = x.iter().map(|p| p.1).sum();
                Some(if den > 0.0 { num / den } else { 0.0 })
            }
            SeriesStat::None => None,
        }
    }
}
