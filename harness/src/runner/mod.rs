//! Runs a profile: cells in order, one fresh broker each, the load, sampling and outputs.
//!
//! The façade: [`run_profile`] (in `run.rs`) drives the jobs (`job.rs`), each sampled once a
//! second (`sampler.rs`) while the open- or closed-loop load (`load.rs`, `plan.rs`,
//! `pacer.rs`, `conn.rs`, `retry.rs`) runs against the broker.

mod broker_sampler;
mod common;
mod conn;
mod context;
mod inflight;
mod inline;
mod jit_job;
mod job;
mod job_error;
pub mod knee;
mod knee_job;
mod knee_warm_up;
pub mod load;
mod options;
mod pacer;
mod parts;
pub mod plan;
mod progress;
mod reader;
mod reaper;
mod retention;
mod retry;
mod rows;
mod run;
mod sample;
mod sampler;
pub mod shard;
mod store_disk;
mod validity;
mod wait;
mod warm_up;

pub use load::{LoadError, LoadHandle};
pub use options::{RunOptions, RunOutcome};
pub use plan::LoadConfig;
pub use run::{check_broker_profile, check_cells, run_profile};
pub use validity::nothing_ran;

/// UTC `YYYYMMDDTHHMMSSZ` and ISO forms of a time (kept here for callers of the old path).
pub use crate::provenance::utc;
