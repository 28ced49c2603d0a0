//! Outputs: `summary.csv` and `timeseries.csv` (a contract with `harness compare`), the
//! HdrHistogram interval log, `run.json`, and the final table. Every file is rewritten
//! atomically (temp file in the same directory + rename) after each cell.

mod atomic;
pub mod cells;
mod hlog;
pub mod run_json;
mod summary;
mod table;
mod timeseries;

pub use atomic::write_atomic;
pub use hlog::HlogBuffer;
pub use summary::{
    summary_csv, summary_header, Resources, SegmentFigures, SummaryRecord, SummaryRow,
    SUMMARY_LEADING, SUMMARY_METRICS,
};
pub use table::table;
pub use timeseries::{
    timeseries_csv, TimeseriesKey, TimeseriesRow, TimeseriesTail, TIMESERIES_COLUMNS,
};
