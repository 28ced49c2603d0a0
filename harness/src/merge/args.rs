//! The command line of `harness merge`.

use std::path::PathBuf;

/// `harness merge DIR... --out DIR`.
#[derive(clap::Args, Debug, Clone)]
pub struct MergeArgs {
    /// The shard folders (one per `harness run --shard I/N`), in any order.
    #[arg(required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// The merged result folder; must not exist yet, or be empty.
    #[arg(long)]
    pub out: PathBuf,
}
