//! `harness merge`: several shard folders (`harness run --shard I/N`) into one result folder.
//!
//! The façade. The merge itself is `harness-analysis`' (it builds without the runner):
//! [`folder`] reads a shard's folder, [`check`] refuses folders that are not the shards of one
//! launch, [`rows`] merges `summary.csv` rows (percentiles from the summed segment histograms
//! of `latency.hlog`, so exact), [`series`] lines the per-second rows up by wall-clock second,
//! and [`write`] makes the merged interval log and `run.json`. Here are the command line
//! ([`args`]) and [`run`], which writes the merged folder, maps a refusal to exit 3 and prints
//! the final table.

mod args;
mod run;
#[cfg(test)]
mod tests;

pub use args::MergeArgs;
pub use harness_analysis::merge::{
    check, folder, hlog_read, rates, rows, series, write, MergeError,
};
pub use run::{merge_folders, run_merge, MergeOutcome};
