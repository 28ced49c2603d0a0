//! `harness drift` on the command line: the windows, the table and the growth checks are
//! `harness_analysis::drift` (re-exported here); this maps its verdict to an exit code.

use std::process::ExitCode;

pub use harness_analysis::drift::*;

pub fn run_drift(args: &DriftArgs) -> anyhow::Result<ExitCode> {
    match harness_analysis::drift::run_drift(args).map_err(crate::exit::invalid)? {
        DriftVerdict::Within => Ok(ExitCode::SUCCESS),
        DriftVerdict::Exceeded => Ok(ExitCode::from(crate::exit::VERDICT_NO)),
    }
}
