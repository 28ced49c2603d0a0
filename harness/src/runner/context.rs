//! The per-run context every job reads, and each cell's effective broker.conf.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::matrix::Cell;
use crate::profile::Profile;
use parking_lot::Mutex;

use crate::report::{HlogWriter, TimeseriesWriter};
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
    /// The files written second by second, shared with the sampling loop.
    pub streams: Mutex<Streams>,
    pub run_start: Instant,
    pub progress: Progress,
}

/// `latency.hlog` and `timeseries.csv`, appended as each second ends.
pub struct Streams {
    pub hlog: HlogWriter,
    pub series: TimeseriesWriter,
}

/// The broker.conf of a cell: its keys, an ephemeral port and a fresh store unless given.
/// In a cluster this is broker 0's (see `cluster::broker_conf`).
pub fn effective_conf(cell: &Cell, store: &Path) -> BTreeMap<String, String> {
    crate::cluster::cell::broker_conf(cell, 0, store, None)
}
