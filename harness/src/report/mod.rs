//! Outputs: `summary.csv` and `timeseries.csv` (a contract with `harness compare`), the
//! HdrHistogram interval log, `run.json`, and the final table. `summary.csv` and `run.json` are
//! rewritten atomically (temp file in the same directory + rename) after each cell;
//! `timeseries.csv` and `latency.hlog` are appended line by line as each second ends.
//!
//! The rows and writers of those files are the result-folder contract's (`harness_results`),
//! shared with `harness merge` and the readers; they are re-exported here for the runner.

pub mod advice;
pub mod run_json;
mod table;

pub use harness_results::cells;
pub use harness_results::cols::{
    DiskColumns, HaColumns, KneeColumns, OrderColumns, RetentionColumns, SummaryConsumer,
    TimeseriesConsumer, TimeseriesHa, TimeseriesOrder,
};
pub use harness_results::hlog_totals;
pub use harness_results::summary::{
    summary_csv, summary_header, FaultColumns, Resources, SegmentFigures, SummaryRecord,
    SummaryRow, SUMMARY_LEADING, SUMMARY_METRICS,
};
pub use harness_results::timeseries::{
    timeseries_csv, TimeseriesEvent, TimeseriesKey, TimeseriesRow, TimeseriesTail,
    TimeseriesWriter, TIMESERIES_COLUMNS,
};
pub use harness_results::write_atomic;
pub use harness_results::HlogWriter;
pub use table::table;
