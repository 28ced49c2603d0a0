//! The per-run context every job reads, and each cell's effective broker.conf.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::matrix::Cell;
use crate::profile::Profile;
use crate::report::HlogBuffer;
use crate::runner::options::RunOptions;
use crate::runner::progress::Progress;

/// Per-run context shared by the jobs.
pub struct Ctx<'a> {
    pub profile: &'a Profile,
    pub opts: &'a RunOptions,
    pub out_dir: PathBuf,
    pub axis_keys: Vec<String>,
    /// (broker CPUs, harness CPUs) when the profile pins.
    pub pinning: Option<(Vec<usize>, Vec<usize>)>,
    pub broker_bin: Option<PathBuf>,
    pub hlog: HlogBuffer,
    pub run_start: Instant,
    pub progress: Progress,
}

/// The broker.conf of a cell: its keys, an ephemeral port and a fresh store unless given.
pub fn effective_conf(cell: &Cell, store: &Path) -> BTreeMap<String, String> {
    let mut conf = cell.broker.clone();
    conf.insert("listenPort".into(), "0".into());
    conf.entry("storePathRootDir".into())
        .or_insert_with(|| store.display().to_string());
    conf
}
