//! `harness merge`: several shard folders (`harness run --shard I/N`) into one result folder.
//!
//! The façade. [`folder`] reads a shard's folder, [`check`] refuses folders that are not the
//! shards of one launch (both in `harness-analysis`, which builds without the runner), [`summary`] merges `summary.csv` rows (percentiles from the summed
//! segment histograms of `latency.hlog`, so exact), [`series`] lines the per-second rows up by
//! wall-clock second, and [`run`] writes the merged folder.

mod args;
mod run;
mod series;
mod summary;
#[cfg(test)]
mod tests;

pub use args::MergeArgs;
pub use harness_analysis::merge::{check, folder, hlog_read, rates, MergeError};
pub use run::{merge_folders, run_merge, MergeOutcome};
