//! `harness compare` and `harness gate`: a comparison model, rendered, then gated.

use std::process::ExitCode;

/// Arguments of `harness compare`.
#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// Base result folder or summary.csv.
    pub base: std::path::PathBuf,
    /// Candidate result folder or summary.csv.
    pub candidate: Option<std::path::PathBuf>,
}

/// Arguments of `harness gate`.
#[derive(clap::Args, Debug, Clone)]
pub struct GateArgs {
    #[arg(long)]
    pub baseline: std::path::PathBuf,
    #[arg(long)]
    pub candidate: std::path::PathBuf,
}

pub fn run_compare(_args: &CompareArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("compare is being built")
}

pub fn run_gate(_args: &GateArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("gate is being built")
}
