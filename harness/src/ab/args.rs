//! The command line of `harness ab`.

use std::path::PathBuf;

/// `harness ab PROFILE --a A --b B`: paired A/B runs of two broker builds.
#[derive(clap::Args, Debug, Clone)]
pub struct AbArgs {
    /// The profile: one cell, a closed-loop `[workload]` (the capacity pass), an optional
    /// `[ab]` table (latency pass, threshold, alpha, metrics) and `repetitions` = rounds.
    pub profile: PathBuf,
    /// Side A, the base: a broker-under-test binary, or a git revision that is built
    /// (`HEAD~1`, a tag, a commit).
    #[arg(long, value_name = "BINARY|REVISION")]
    pub a: String,
    /// Side B, the candidate: a binary or a git revision, as for --a.
    #[arg(long, value_name = "BINARY|REVISION")]
    pub b: String,
    /// Override a profile key for both sides (`workload.concurrency=32`). Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Override a profile key for side A only. Repeatable.
    #[arg(long = "set-a", value_name = "KEY=VALUE")]
    pub set_a: Vec<String>,
    /// Override a profile key for side B only, e.g. `broker.injectAppendSpinMicros=5` to
    /// simulate a slower send path. Repeatable.
    #[arg(long = "set-b", value_name = "KEY=VALUE")]
    pub set_b: Vec<String>,
    /// Rounds (each: A and B, in ABBA order); default: the profile's `repetitions`.
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Result folder. Default: results/<profile name>-ab-<UTC timestamp>.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The git repository in which revisions are looked up.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Worktrees, build logs and the copies of both sides' binaries.
    #[arg(long, default_value = "target/ab")]
    pub build_dir: PathBuf,
    /// CARGO_TARGET_DIR for building revisions. [default: <build-dir>/cargo]
    #[arg(long)]
    pub cargo_target_dir: Option<PathBuf>,
    /// Print only the verdict.
    #[arg(long, short)]
    pub quiet: bool,
}
