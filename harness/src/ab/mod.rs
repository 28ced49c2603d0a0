//! `harness ab`: paired A/B runs of two broker builds in one job, and their verdict.
//!
//! * args.rs    — the command line
//! * build.rs   — a side: a binary, or a git revision built in its own worktree
//! * run.rs     — capacity and latency passes, rounds in ABBA order, one fresh broker per job
//! * output.rs  — summary.csv / timeseries.csv with `side`, `round`, `pass`; run.json
//! * paired.rs  — Wilcoxon signed-rank, Hodges–Lehmann, bootstrap of paired differences
//! * verdict.rs — per metric: estimate, interval, test, outcome; the table and gate lines
//! * hook.rs    — `compare` and `gate` on an A/B folder

mod args;
mod build;
mod hook;
mod output;
pub mod paired;
mod run;
pub mod verdict;

pub use args::AbArgs;
pub use build::{SideBinary, SideError};
pub use hook::{compare_ab, gate_ab};
pub use run::run_ab;
