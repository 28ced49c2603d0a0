//! The comparison model: which cells pair up, and per metric base, candidate, change and
//! verdict. Rendering (render.rs) and gating (gate.rs) only read this model.

//!
//! * metric.rs     — the metrics, their direction and per-second statistic
//! * decide.rs     — the verdict for one metric of one pair
//! * pairing.rs    — which cells pair up
//! * comparison.rs — the rows and notes of a whole comparison

mod comparison;
mod decide;
mod metric;
mod pairing;

pub use comparison::{build, regression_pct, Comparison, MetricComparison};
pub use decide::{decide, seed_for, Decision, Method, StatOptions, Verdict};
pub use metric::{metric_named, Direction, Metric, SeriesStat, METRICS};
pub use pairing::{cell_values, pair_reference, pair_runs, param_name, varying_keys, Pair};
