//! The per-run context every job reads, and each cell's effective broker.conf.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use harness_model::matrix::Cell;
use harness_model::profile::Profile;
use parking_lot::Mutex;

use crate::kind::Kind;
use crate::report::{HlogWriter, TimeseriesWriter};
use crate::runner::options::RunOptions;
use crate::runner::progress::Progress;
use crate::runner::reaper::Reaper;
use harness_model::shard::StartAt;

/// Per-run context shared by the jobs.
pub struct Ctx<'a> {
    pub profile: &'a Profile,
    pub opts: &'a RunOptions,
    pub out_dir: PathBuf,
    pub axis_keys: Vec<String>,
    /// (broker CPUs, harness CPUs) when the profile pins.
    pub pinning: Option<(Vec<usize>, Vec<usize>)>,
    /// The kind of broker every job starts (or drives, for brokers that run already).
    pub kind: Kind,
    /// The files written second by second, shared with the sampling loop.
    pub streams: Mutex<Streams>,
    pub run_start: Instant,
    /// The same instant on the wall clock: the base time of `latency.hlog`.
    pub run_start_wall: SystemTime,
    pub progress: Progress,
    /// The shared start of the job about to run (`--start-at` plus its slot).
    pub job_start: Option<StartAt>,
    /// Set while a knee probe (`runner::knee_job`), a warm-up window (`runner::warm_up`) or a
    /// warmed cell's job (`runner::jit_job`) runs.
    pub probe: Option<Probe>,
    /// The previous job's broker stop, when it runs beside this job's start.
    pub reaper: Reaper,
}

impl Ctx<'_> {
    /// Whether the job running now sends its seconds and histograms to the run's streams: every
    /// job but a knee search's warm-up windows ([`ProbeStage::WarmUp`]).
    pub fn records(&self) -> bool {
        self.probe.is_none_or(|p| p.records())
    }

    /// How many CPUs the harness runs on (its share when the profile pins): the divisor of
    /// its CPU %.
    pub fn harness_cpus(&self) -> f64 {
        self.pinning
            .as_ref()
            .map_or_else(|| crate::proc::pin::process_cpus().len(), |(_, h)| h.len())
            .max(1) as f64
    }
}

/// A job on a broker that outlives it, in progress: a knee probe's index (the `step` of its
/// rows) and, when the cell keeps one broker for all its jobs, that broker's address and pid.
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    pub index: usize,
    pub broker: Option<(std::net::SocketAddr, Option<u32>)>,
    pub stage: ProbeStage,
}

/// What a job on a kept broker is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeStage {
    /// `[knee] warm_up`: load that only warms the broker. Its seconds go to the progress lines
    /// and `warm-up.csv`, not to `timeseries.csv` or `latency.hlog`, whose rows are the probes'.
    WarmUp,
    /// A probe the search judges: its seconds are rows with `step` = its index.
    Measured,
    /// A cell's own job on the broker its `[workload] jit_warmup` warmed (`runner::jit_job`):
    /// recorded like any job, its rows without a `step`.
    Warmed,
}

impl Probe {
    /// Whether the job's seconds and histograms go to the run's streams.
    pub fn records(&self) -> bool {
        self.stage != ProbeStage::WarmUp
    }

    /// The `step` of the job's rows: a knee probe's index.
    pub fn step(&self) -> Option<usize> {
        (self.stage != ProbeStage::Warmed).then_some(self.index)
    }
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
