//! `harness report` on the command line: the report itself is `harness_analysis::html`
//! (re-exported here); this writes it and prints its path.

use std::process::ExitCode;

pub use harness_analysis::html::*;

/// Writes the report and prints its path.
pub fn run_report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let path = write_report(args)?;
    println!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}
