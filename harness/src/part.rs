//! The seam for job parts: a feature that rides along with a job's load plugs in through
//! [`JobPart`]. Today's parts, in the order their hooks run (registered in
//! `runner/parts.rs`, the one place that names them): cluster routing
//! (`cluster/job_part.rs`), faults (`fault/job_part.rs`), replication columns
//! (`ha/columns.rs`), consumers (`consumer/job_part.rs`) and order accounting
//! (`order/hook.rs`).
//!
//! The job (`runner::job`, `runner::sampler`) calls every part's hooks in that order and knows
//! no part by name: before the admin connection ([`JobPart::prepare`]: routes, the fault's
//! target), once the broker's counters before the load are known ([`JobPart::before_load`]:
//! consumers and their backlog), just before the load ([`JobPart::ready`]), when it starts, every
//! few milliseconds while it runs ([`JobPart::tick`]: due faults), every second (each part
//! fills its own columns of the row), after it (the consumers' drain), and at the end its own
//! summary columns, before and after the job's brokers stop. What one part tells another (the
//! fault's restarts to the consumers, the order ledger to the consumers' pulls, the broker
//! names of the route) goes through the job's [`Board`], never through a reference to the
//! other part.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use harness_model::profile::Workload;
use harness_results::{Invalid, InvalidKind};
use hdrhistogram::Histogram;
use rmq_client::uniq_key::KeySpace;

use crate::cluster::error::ClusterError;
use crate::cluster::job::JobCluster;
use crate::consumer::start_error::ConsumerStartError;
use crate::consumer::ConsumerFigures;
use crate::kind::Member;
use crate::order::readback::ReadBackError;
use crate::report::{FaultColumns, OrderColumns, Resources, TimeseriesRow};
use crate::runner::plan::LoadConfig;
use crate::send_order::ledger::OrderLedger;

/// Why a part failed: the job's rows become invalid with this text as the reason (and
/// [`PartError::kind`] as its kind).
#[derive(Debug, thiserror::Error)]
pub enum PartError {
    /// The routes, the topic on every broker or the slaves of a cluster.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The fault's target, or the reconciliation afterwards.
    #[error(transparent)]
    Fault(#[from] crate::fault::FaultError),
    /// A due signal or restart of the fault failed.
    #[error(transparent)]
    Inject(#[from] crate::fault::InjectError),
    /// The consumers did not start.
    #[error(transparent)]
    Consumers(#[from] ConsumerStartError),
    /// The order count is incomplete.
    #[error(transparent)]
    Order(#[from] ReadBackError),
    /// A row of the part's own (the consumers' backlog and drain) could not be written.
    #[error("writing the time series: {0}")]
    Series(#[source] std::io::Error),
    /// A broker did not stop cleanly after the load (the part stopped it).
    #[error(transparent)]
    Stop(crate::cluster::ExitedAtStop),
}

impl PartError {
    /// The kind of invalid row this error makes, when the advice knows its cause and fix.
    pub fn kind(&self) -> Option<InvalidKind> {
        match self {
            PartError::Cluster(e) => e.kind(),
            PartError::Series(_) => Some(InvalidKind::WritingResults),
            // A broker that did not exit cleanly at its stop.
            PartError::Stop(_) | PartError::Fault(crate::fault::FaultError::PairStop(_)) => {
                Some(InvalidKind::BrokerExited)
            }
            PartError::Fault(_)
            | PartError::Inject(_)
            | PartError::Consumers(_)
            | PartError::Order(_) => None,
        }
    }

    /// The rows' reason: this error's text and kind.
    pub fn invalid(&self) -> Invalid {
        Invalid {
            kind: self.kind(),
            reason: self.to_string(),
        }
    }
}

/// The job's brokers, lent to a part's hooks: the broker the job owns (None for a cluster or a
/// broker that runs already) and the job's cluster.
pub struct Brokers<'a> {
    pub process: Option<&'a mut Box<dyn Member>>,
    pub cluster: Option<&'a mut JobCluster>,
}

/// A broker killed on purpose and not restarted: its exit is the experiment, not a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Down {
    /// Its index in the cell (0 with one broker).
    pub broker: usize,
    /// A member of broker 0's replicating pair (`fault.role`): its pair is read back after.
    pub pair_member: bool,
}

/// What one part publishes for the others and for the job, by field.
#[derive(Default)]
pub struct Board {
    /// Broker names in router order (a cluster's per-broker summary columns); cluster routing.
    pub broker_names: Vec<String>,
    /// Brokers may be killed and restarted during the load, so a failed admin request is tried
    /// again on a new connection; faults.
    pub restarting: bool,
    /// (kill, ready again) of every restart so far; faults, read by the consumers.
    pub restarts: Vec<(Instant, Instant)>,
    /// The restarted broker's name on a cluster (empty with one broker); faults.
    pub restarted_name: String,
    /// The cluster broker (cell index) whose process a fault may replace, so its pid is
    /// followed; faults.
    pub replaced: Option<usize>,
    /// A broker killed and not (yet) restarted; faults.
    pub down: Option<Down>,
    /// The ledger the consumers' pulls feed; order accounting, read by the consumers.
    pub order_ledger: Option<Arc<OrderLedger>>,
}

/// The job's rows a part writes itself: the consumers' `backlog` seconds before the load and
/// their `drain` seconds after it. The runner builds them (and fills the other parts' cells).
pub trait Rows {
    /// The backlog starts: the broker's and the harness's CPU count from now.
    fn begin_backlog(&mut self);
    /// The next `backlog` second's row (broker and harness CPU sampled).
    fn backlog_row(&mut self) -> TimeseriesRow;
    /// The next `drain` second's row, the other parts' cells filled.
    fn drain_row(&mut self) -> TimeseriesRow;
    /// Appends a row to timeseries.csv.
    fn append(&mut self, row: &TimeseriesRow) -> Result<(), PartError>;
    /// Appends a row with its second's histograms (to latency.hlog).
    fn write_second(
        &mut self,
        row: &TimeseriesRow,
        hists: &[(&str, &Histogram<u64>)],
    ) -> Result<(), PartError>;
    /// The run is being stopped (Ctrl-C).
    fn cancelled(&self) -> bool;
    /// A progress line.
    fn line(&self, text: &str);
}

/// The broker's counters are known and the load is about to be built.
pub struct BeforeLoad<'a> {
    /// GET_BROKER_RUNTIME_INFO before the load (a cluster's summed).
    pub baseline: Option<&'a BTreeMap<String, String>>,
    /// A cluster's name server (None with one broker).
    pub namesrv: Option<SocketAddr>,
    pub cfg: &'a mut LoadConfig,
    pub board: &'a mut Board,
    pub rows: &'a mut dyn Rows,
}

/// The load as a part sees it when it starts.
#[derive(Clone, Copy)]
pub struct LoadStarted<'a> {
    /// The broker that answers the job's admin requests.
    pub addr: SocketAddr,
    pub workload: &'a Workload,
    /// The UNIQ_KEY space the load writes.
    pub keys: &'a KeySpace,
    /// When the load started.
    pub start: Instant,
    /// Its schedule (warm-up first).
    pub cfg: &'a LoadConfig,
}

/// One second as a part sees it.
pub struct Second<'a> {
    /// GET_BROKER_RUNTIME_INFO of this second (None when the broker did not answer, and in
    /// the consumers' drain, which samples no broker).
    pub info: Option<&'a BTreeMap<String, String>>,
    /// The load has ended: the part's last reading.
    pub last: bool,
    /// The second belongs to a measured segment.
    pub measuring: bool,
    /// The part's histograms of this second, for latency.hlog (tag, histogram), written before
    /// the load's own.
    pub hists: &'a mut Vec<(&'static str, Histogram<u64>)>,
}

/// The summary columns a part may fill.
pub struct JobColumns<'a> {
    pub res: &'a mut Resources,
    pub order: &'a mut OrderColumns,
    pub consumer: &'a mut Option<ConsumerFigures>,
    pub fault: &'a mut FaultColumns,
}

/// The job's brokers have stopped (the cluster's stores kept until the parts are done).
pub struct Stopped<'a> {
    pub cluster: Option<&'a mut JobCluster>,
    /// The load ran to its end without an error.
    pub outcome_ok: bool,
    pub interrupted: bool,
}

/// A feature plugged into a job. Every hook but [`JobPart::second`] does nothing by default.
pub trait JobPart {
    /// Before the job's admin connection: the part may point the load at other brokers, hand
    /// it a router or an outcome log.
    fn prepare(
        &mut self,
        _brokers: &mut Brokers<'_>,
        _cfg: &mut LoadConfig,
        _board: &mut Board,
    ) -> Result<(), PartError> {
        Ok(())
    }

    /// The broker's counters before the load are known: start what runs beside the load.
    fn before_load(&mut self, _before: BeforeLoad<'_>) -> Result<(), PartError> {
        Ok(())
    }

    /// Every part is ready and the load starts next.
    fn ready(&mut self, _board: &mut Board) {}

    /// The load has started (its keys are known now).
    fn load_started(&mut self, _load: LoadStarted<'_>) {}

    /// When the part next wants [`JobPart::tick`] (the loop naps at most 20 ms anyway).
    fn next_due(&self) -> Option<Instant> {
        None
    }

    /// Between seconds, every few milliseconds while the load runs. An error stops the load
    /// and makes the job's rows invalid.
    fn tick(
        &mut self,
        _now: Instant,
        _brokers: &mut Brokers<'_>,
        _board: &mut Board,
    ) -> Result<(), PartError> {
        Ok(())
    }

    /// Whether the part still has work under way that the job's seconds must wait for after
    /// the load has ended (a broker restarting after a kill): the sampling loop goes on writing
    /// a row a second, and ticking, until it is done.
    fn busy(&self) -> bool {
        false
    }

    /// Fills this part's columns of one second's row.
    fn second(&mut self, _second: &mut Second<'_>, _row: &mut TimeseriesRow) {}

    /// After the load: rows of the part's own until it is done (the consumers' drain).
    /// `interrupted`: the run is being stopped, or the load failed.
    fn drain(&mut self, _interrupted: bool, _rows: &mut dyn Rows) -> Result<(), PartError> {
        Ok(())
    }

    /// Fills this part's summary columns once the load is over; an error makes the job's rows
    /// invalid.
    fn finish(&mut self, _cols: JobColumns<'_>) -> Result<(), PartError> {
        Ok(())
    }

    /// After the load and its drain, before the job's brokers stop: a part may read the ones
    /// still running (the faults' reconciliation of a broker that is up). `interrupted`: the run
    /// is being stopped, or the load failed.
    fn before_stop(
        &mut self,
        _brokers: &mut Brokers<'_>,
        _interrupted: bool,
    ) -> Result<(), PartError> {
        Ok(())
    }

    /// Whether [`JobPart::after_stop`] reads the stopped brokers' stores (then the job waits
    /// for every stop before it goes on). Asked after [`JobPart::before_stop`].
    fn reads_stopped_store(&self) -> bool {
        false
    }

    /// After the job's brokers stopped: columns that need their stores (the reconciliation).
    fn after_stop(
        &mut self,
        _stopped: Stopped<'_>,
        _cols: JobColumns<'_>,
    ) -> Result<(), PartError> {
        Ok(())
    }

    /// Why the job's rows are not scored, once everything is done (None: no objection).
    fn invalid_reason(&self) -> Option<Invalid> {
        None
    }

    /// A line for the progress output under the job's `done:` line.
    fn progress_line(&self) -> Option<String> {
        None
    }
}

/// A job's parts and their board.
#[derive(Default)]
pub struct JobParts {
    pub parts: Vec<Box<dyn JobPart>>,
    pub board: Board,
}

impl JobParts {
    /// Adds a part: its hooks run after those of the parts added before it.
    pub fn push(&mut self, part: impl JobPart + 'static) {
        self.parts.push(Box::new(part));
    }

    /// [`JobPart::prepare`] of every part, in order; the first error stops.
    pub fn prepare(
        &mut self,
        brokers: &mut Brokers<'_>,
        cfg: &mut LoadConfig,
    ) -> Result<(), PartError> {
        for p in &mut self.parts {
            p.prepare(brokers, cfg, &mut self.board)?;
        }
        Ok(())
    }

    /// [`JobPart::before_load`] of every part, then [`JobPart::ready`].
    pub fn before_load(
        &mut self,
        baseline: Option<&BTreeMap<String, String>>,
        namesrv: Option<SocketAddr>,
        cfg: &mut LoadConfig,
        rows: &mut dyn Rows,
    ) -> Result<(), PartError> {
        for p in &mut self.parts {
            p.before_load(BeforeLoad {
                baseline,
                namesrv,
                cfg: &mut *cfg,
                board: &mut self.board,
                rows: &mut *rows,
            })?;
        }
        for p in &mut self.parts {
            p.ready(&mut self.board);
        }
        Ok(())
    }

    pub fn load_started(&mut self, load: LoadStarted<'_>) {
        for p in &mut self.parts {
            p.load_started(load);
        }
    }

    /// The earliest [`JobPart::next_due`].
    pub fn next_due(&self) -> Option<Instant> {
        self.parts.iter().filter_map(|p| p.next_due()).min()
    }

    /// [`JobPart::tick`] of every part; every part ticks, the first error is returned.
    pub fn tick(&mut self, now: Instant, brokers: &mut Brokers<'_>) -> Result<(), PartError> {
        let mut first = Ok(());
        for p in &mut self.parts {
            if let Err(e) = p.tick(now, brokers, &mut self.board) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    /// Every part's cells of one second's row; their histograms go to `hists`.
    pub fn second(
        &mut self,
        info: Option<&BTreeMap<String, String>>,
        (last, measuring): (bool, bool),
        hists: &mut Vec<(&'static str, Histogram<u64>)>,
        row: &mut TimeseriesRow,
    ) {
        let mut s = Second {
            info,
            last,
            measuring,
            hists,
        };
        for p in &mut self.parts {
            p.second(&mut s, row);
        }
    }

    /// [`JobPart::drain`] of every part; each drain row carries the other parts' cells.
    pub fn drain(&mut self, interrupted: bool, rows: &mut dyn Rows) -> Result<(), PartError> {
        for i in 0..self.parts.len() {
            let (before, rest) = self.parts.split_at_mut(i);
            let (me, after) = rest.split_first_mut().expect("i < len");
            let mut r = WithOthers {
                rows: &mut *rows,
                before,
                after,
            };
            me.drain(interrupted, &mut r)?;
        }
        Ok(())
    }

    /// [`JobPart::finish`] of every part; every part finishes, the first error is returned.
    pub fn finish(&mut self, cols: JobColumns<'_>) -> Result<(), PartError> {
        let mut first = Ok(());
        for p in &mut self.parts {
            let c = JobColumns {
                res: &mut *cols.res,
                order: &mut *cols.order,
                consumer: &mut *cols.consumer,
                fault: &mut *cols.fault,
            };
            if let Err(e) = p.finish(c) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    /// [`JobPart::before_stop`] of every part; every reason is returned, in order.
    pub fn before_stop(&mut self, brokers: &mut Brokers<'_>, interrupted: bool) -> Vec<PartError> {
        let mut errors = Vec::new();
        for p in &mut self.parts {
            let mut b = Brokers {
                process: brokers.process.as_deref_mut(),
                cluster: brokers.cluster.as_deref_mut(),
            };
            if let Err(e) = p.before_stop(&mut b, interrupted) {
                errors.push(e);
            }
        }
        errors
    }

    /// Whether any part is still busy ([`JobPart::busy`]).
    pub fn busy(&self) -> bool {
        self.parts.iter().any(|p| p.busy())
    }

    /// Whether any part reads the stopped brokers' stores.
    pub fn reads_stopped_store(&self) -> bool {
        self.parts.iter().any(|p| p.reads_stopped_store())
    }

    /// [`JobPart::after_stop`] of every part; every reason is returned, in order.
    pub fn after_stop(&mut self, mut stopped: Stopped<'_>, cols: JobColumns<'_>) -> Vec<PartError> {
        let mut errors = Vec::new();
        for p in &mut self.parts {
            let s = Stopped {
                cluster: stopped.cluster.as_deref_mut(),
                outcome_ok: stopped.outcome_ok,
                interrupted: stopped.interrupted,
            };
            let c = JobColumns {
                res: &mut *cols.res,
                order: &mut *cols.order,
                consumer: &mut *cols.consumer,
                fault: &mut *cols.fault,
            };
            if let Err(e) = p.after_stop(s, c) {
                errors.push(e);
            }
        }
        errors
    }

    /// Every part's objection to scoring the job, in order.
    pub fn invalid_reasons(&self) -> impl Iterator<Item = Invalid> + '_ {
        self.parts.iter().filter_map(|p| p.invalid_reason())
    }

    /// Every part's progress line, in order.
    pub fn progress_lines(&self) -> impl Iterator<Item = String> + '_ {
        self.parts.iter().filter_map(|p| p.progress_line())
    }
}

/// The runner's rows, each drain row with the cells of every part but the one draining.
struct WithOthers<'a, 'b> {
    rows: &'a mut dyn Rows,
    before: &'b mut [Box<dyn JobPart>],
    after: &'b mut [Box<dyn JobPart>],
}

impl Rows for WithOthers<'_, '_> {
    fn begin_backlog(&mut self) {
        self.rows.begin_backlog();
    }

    fn backlog_row(&mut self) -> TimeseriesRow {
        self.rows.backlog_row()
    }

    /// No broker sampled, not the last reading.
    fn drain_row(&mut self) -> TimeseriesRow {
        let mut row = self.rows.drain_row();
        let mut scratch = Vec::new();
        let mut s = Second {
            info: None,
            last: false,
            measuring: false,
            hists: &mut scratch,
        };
        for p in self.before.iter_mut().chain(self.after.iter_mut()) {
            p.second(&mut s, &mut row);
        }
        row
    }

    fn append(&mut self, row: &TimeseriesRow) -> Result<(), PartError> {
        self.rows.append(row)
    }

    fn write_second(
        &mut self,
        row: &TimeseriesRow,
        hists: &[(&str, &Histogram<u64>)],
    ) -> Result<(), PartError> {
        self.rows.write_second(row, hists)
    }

    fn cancelled(&self) -> bool {
        self.rows.cancelled()
    }

    fn line(&self, text: &str) {
        self.rows.line(text);
    }
}

#[cfg(test)]
#[path = "part_tests.rs"]
mod tests;
