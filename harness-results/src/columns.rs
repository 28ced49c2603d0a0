//! The column contract of the result folder: the columns `summary.csv` (before and after its
//! `param_<axis>` columns) and `timeseries.csv` carry, in file order. They are derived from the
//! row structs the writers serialize ([`crate::summary`], [`crate::timeseries`]), so the writer
//! and every reader (`read`, `harness-analysis`) share one definition of each table: a column
//! added to a row struct is a column of the contract, with nothing else to edit.

pub use crate::summary::{summary_header, SUMMARY_LEADING, SUMMARY_METRICS};
pub use crate::timeseries::TIMESERIES_COLUMNS;

/// `knee_limited_by` of a knee search that met the SLO at every rate up to `knee.max_rate`:
/// `knee_rate` is then the ceiling, a lower bound of the knee, not the knee.
pub const KNEE_ABOVE_MAX: &str = "none up to max_rate";
