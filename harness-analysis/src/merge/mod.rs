//! `harness merge` without its command line: a shard's result folder as the merge reads it
//! ([`folder`], with [`hlog_read`] for its `latency.hlog`), the check that folders are the
//! shards of one launch ([`check`]), each phase's rate ([`rates`]), the merged `summary.csv`
//! rows ([`rows`]) and `timeseries.csv` rows with their seconds' histograms ([`series`]), the
//! merged interval log and `run.json` ([`write`]), and why a merge is refused ([`MergeError`]).
//! The rows are `harness-results`' types, written with its writers: the same ones `harness run`
//! writes with and `read` reads. `harness`'s `merge/` adds the CLI, the exit code and the table.

pub mod check;
mod error;
pub mod folder;
pub mod hlog_read;
pub mod rates;
pub mod rows;
pub mod series;
pub mod write;

pub use error::MergeError;
