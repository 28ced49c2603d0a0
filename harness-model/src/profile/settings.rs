//! Profile-level settings besides the workload: run order, validity limits, key metric.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Repetition rounds in cell order.
    #[default]
    Sequential,
    /// Each repetition round shuffled with `seed`.
    Randomized,
}

/// The `[validity]` table: when a run is not scored.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Validity {
    /// Generator lag p99 limit in µs. Default: 1000.
    pub max_lag_p99_us: f64,
    /// Harness CPU limit in percent of its CPUs (spin-waiting excluded). Default: 85.
    pub max_harness_cpu: f64,
    /// Achieved / target rate below which an unexplained shortfall invalidates. Default: 0.95.
    pub min_achieved_ratio: f64,
}

impl Default for Validity {
    fn default() -> Self {
        Validity {
            max_lag_p99_us: 1000.0,
            max_harness_cpu: 85.0,
            min_achieved_ratio: 0.95,
        }
    }
}

/// Summary columns that can serve as `key_metric`.
pub const KEY_METRICS: &[&str] = &[
    "ok_rate",
    "achieved_rate",
    "busy_rate",
    "busy",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "service_p99_ms",
    "broker_cpu_avg",
    "timeouts",
];

/// Whether a larger value of `metric` is better.
pub fn higher_is_better(metric: &str) -> bool {
    matches!(metric, "ok_rate" | "achieved_rate")
}
