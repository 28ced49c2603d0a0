//! The column groups of `summary.csv` and `timeseries.csv` that a job part fills (consumers,
//! order accounting, replication, disk-full blocks, retention, the knee search): one struct per group,
//! whose serde field names are the column names. Empty cells (None, "") in a job without
//! the part.

mod consumer;
mod disk;
mod ha;
mod knee;
mod order;
mod retention;

pub use consumer::{SummaryConsumer, TimeseriesConsumer};
pub use disk::{BlockFigures, DiskColumns};
pub use ha::{HaColumns, TimeseriesHa};
pub use knee::KneeColumns;
pub use order::{OrderColumns, TimeseriesOrder};
pub use retention::RetentionColumns;
