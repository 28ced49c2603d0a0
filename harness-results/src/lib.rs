//! harness-results: the result-folder contract between `harness run` (and `harness merge`) and
//! everything that reads a run afterwards.
//!
//! It owns what a result folder's files mean and how they are written, as plain data and
//! synchronous writers: the rows of `summary.csv` ([`summary`]) and `timeseries.csv`
//! ([`timeseries`]) with their column groups ([`cols`]), whose serde field names are the column
//! lists ([`columns`]); how a cell is written (fixed decimals: [`cells`]); the busy classes
//! behind the `busy_<class>` columns ([`BusyClass`]); a segment's recorded figures
//! ([`segment`]) and the consumers' ([`consumer`]); the `latency.hlog` writer ([`hlog`]) and its
//! tags ([`hlog_totals`]); the atomic write every rewritten file goes through
//! ([`write_atomic`]); and the reader the offline analysis loads a run with ([`read`]). The
//! runner (`harness run`) and the merge (`harness merge`) write through these types, the
//! analysis reads through them, so each column table is defined once.
//!
//! It must never import tokio, `remoting`, `rmq-client` or `harness`: it sits below the
//! analysis (`harness-analysis`), which builds and tests without a runtime or the wire format.
//! Filling the rows from live state (the recorder, the consumers, the order ledger) is
//! `harness`'s.

mod atomic;
mod busy;
pub mod cells;
pub mod cols;
pub mod columns;
pub mod consumer;
pub mod hlog;
pub mod hlog_totals;
mod invalid;
pub mod read;
pub mod segment;
pub mod summary;
pub mod timeseries;

pub use atomic::write_atomic;
pub use busy::BusyClass;
pub use hlog::HlogWriter;
pub use invalid::{Invalid, InvalidKind};
