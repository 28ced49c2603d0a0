//! What `harness run` is given besides the profile, and what it returns.

use std::net::SocketAddr;
use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use crate::report::SummaryRow;

/// What `harness run` needs besides the profile.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub target: Option<SocketAddr>,
    /// Drive the cluster behind this name server (`--namesrv`): routes discovered, no broker
    /// started.
    pub namesrv: Option<SocketAddr>,
    pub out: Option<PathBuf>,
    pub broker_pid: Option<u32>,
    /// `--broker-pid NAME=PID` with `--namesrv`: the pids of the cluster's brokers, by
    /// brokerName, for `[fault]` (pause and kill).
    pub broker_pids: std::collections::BTreeMap<String, u32>,
    pub broker_bin: Option<PathBuf>,
    pub command_line: String,
    pub cancel: CancellationToken,
    /// Test hook: behave as if interrupted once this many jobs have finished.
    pub stop_after_jobs: Option<usize>,
    /// Print nothing but errors (tests).
    pub quiet: bool,
    /// `--shard` and `--start-at`: this process's share of the schedule and its start.
    pub spread: harness_model::shard::Spread,
    /// Kinds of broker kept across runs (`harness fidelity`'s rows share Apache's name
    /// servers); None: the run makes its own and drops them at its end.
    pub kinds: Option<std::sync::Arc<crate::kind::select::KindCache>>,
}

/// The result of a run.
#[derive(Debug)]
pub struct RunOutcome {
    pub out_dir: PathBuf,
    pub rows: Vec<SummaryRow>,
    pub interrupted: bool,
    pub table: String,
}
