//! Outputs: `summary.csv` and `timeseries.csv` (a contract with `harness compare`), the
//! HdrHistogram interval log, `run.json`, and the final table. `summary.csv` and `run.json` are
//! rewritten atomically (temp file in the same directory + rename) after each cell;
//! `timeseries.csv` and `latency.hlog` are appended line by line as each second ends.

pub mod advice;
mod consumer_cols;
mod disk_cols;
mod ha_cols;
mod hlog;
pub mod hlog_totals;
pub mod knee_columns;
mod order_cols;
mod retention_cols;
pub mod run_json;
mod summary;
mod table;
mod timeseries;

pub use consumer_cols::{SummaryConsumer, TimeseriesConsumer};
pub use ha_cols::{HaColumns, TimeseriesHa};
pub use harness_results::cells;
pub use harness_results::write_atomic;
pub use hlog::HlogWriter;
pub use order_cols::{OrderColumns, TimeseriesOrder};
pub use retention_cols::RetentionColumns;
pub use summary::{
    summary_csv, summary_header, FaultColumns, Resources, SegmentFigures, SummaryRecord,
    SummaryRow, SUMMARY_LEADING, SUMMARY_METRICS,
};
pub use table::table;
pub use timeseries::{
    timeseries_csv, TimeseriesEvent, TimeseriesKey, TimeseriesRow, TimeseriesTail,
    TimeseriesWriter, TIMESERIES_COLUMNS,
};
