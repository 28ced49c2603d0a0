//! Faults as a job part: the [`Injector`] of a cell with `[fault]`, driven from the job's
//! sampling loop ([`JobPart::tick`]), and the reconciliation: of the job's own broker while it
//! still runs after the load ([`JobPart::before_stop`]), else of the stores once the job's
//! brokers stopped ([`JobPart::after_stop`]).
//!
//! What the other parts and the job learn from it goes on the job's [`Board`]: the restarts
//! (the consumers' recovery), the broker killed on purpose (not a crash), the broker whose pid
//! changes, and that a failed admin request is worth a new connection.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cluster::job::JobCluster;
use crate::fault::injector::Injector;
use crate::kind::{BrokerKind, Kind, Member};
use crate::part::{Board, Brokers, Down, JobColumns, JobPart, LoadStarted, PartError, Stopped};
use crate::reconcile::Copies;
use crate::report::{TimeseriesEvent, TimeseriesRow};
use crate::runner::plan::LoadConfig;
use harness_model::matrix::Cell;

/// Where a job's faults hit: what the registry knows before the broker starts.
pub struct FaultSetup<'a> {
    /// The job's cluster, if any.
    pub cluster: Option<&'a JobCluster>,
    pub kind: &'a Kind,
    /// The broker.conf of the job's own broker (None for a cluster, `--target` or a broker
    /// shared by a knee search's probes).
    pub own_conf: Option<&'a BTreeMap<String, String>>,
    /// The kind starts (and owns) its brokers.
    pub owned: bool,
    pub dir: &'a Path,
    pub cpus: Option<&'a [usize]>,
    /// `--broker-pid PID` (one broker) and `--broker-pid NAME=PID` (a `--namesrv` cluster).
    pub broker_pid: Option<u32>,
    pub broker_pids: &'a BTreeMap<String, u32>,
}

/// A job's faults.
pub struct FaultPart {
    injector: Injector,
    pids: BTreeMap<String, u32>,
    kind: Kind,
    own_conf: Option<BTreeMap<String, String>>,
    owned: bool,
    dir: PathBuf,
    cell: Cell,
    /// The job's own broker read while it still ran: nothing reads its store after the stop.
    live: Option<Copies>,
}

impl FaultPart {
    /// The part of a cell with `[fault]` over `sends` scheduled sends; None without.
    pub fn for_job(cell: &Cell, sends: u64, s: FaultSetup<'_>) -> Option<FaultPart> {
        let injector = match s.cluster {
            Some(c) => crate::fault::cluster::injector_for(cell, sends, c, s.kind, s.dir, s.cpus),
            None => crate::fault::job::injector_for(
                cell,
                sends,
                s.own_conf.map(|conf| (s.kind, conf)),
                s.dir,
                s.cpus,
                s.broker_pid,
            ),
        }?;
        Some(FaultPart {
            injector,
            pids: s.broker_pids.clone(),
            kind: s.kind.clone(),
            own_conf: s.own_conf.cloned(),
            owned: s.owned,
            dir: s.dir.to_owned(),
            cell: cell.clone(),
            live: None,
        })
    }

    /// What the injector did, for the board.
    fn publish(&self, board: &mut Board) {
        let f = &self.injector;
        board.restarts = f.restarts().to_vec();
        board.restarted_name = f.faulted_name(&board.broker_names);
        board.down = f.broker_dead().then(|| Down {
            broker: f.broker_index(),
            pair_member: f.role().is_some(),
        });
    }
}

/// The broker the faults hit: with `fault.role`, the member of broker 0's pair (never another
/// broker: no pair, no target, an error); else the job's one broker, or broker K of the cell
/// (None with --namesrv, signalled by pid).
fn target<'b>(f: &Injector, brokers: &'b mut Brokers<'_>) -> Option<&'b mut Box<dyn Member>> {
    match (f.role(), brokers.process.as_deref_mut()) {
        (Some(role), _) => brokers
            .cluster
            .as_deref_mut()
            .and_then(|c| c.pair_member(role)),
        (None, Some(p)) => Some(p),
        (None, None) => brokers
            .cluster
            .as_deref_mut()
            .and_then(|c| c.broker_mut(f.broker_index())),
    }
}

impl JobPart for FaultPart {
    fn prepare(
        &mut self,
        brokers: &mut Brokers<'_>,
        cfg: &mut LoadConfig,
        board: &mut Board,
    ) -> Result<(), PartError> {
        if let Some(c) = brokers.cluster.as_deref() {
            crate::fault::cluster::resolve(&mut self.injector, c, &self.pids)
                .map_err(PartError::Fault)?;
            board.replaced = Some(self.injector.broker_index());
        }
        // After `resolve`, which makes the log again for the faulted broker.
        cfg.outcomes = Some(self.injector.log.clone());
        board.restarting = true;
        Ok(())
    }

    fn load_started(&mut self, load: LoadStarted<'_>) {
        let warmup = load
            .cfg
            .phases
            .first()
            .map_or(Default::default(), |p| p.duration);
        self.injector
            .arm(load.start + warmup, load.start + load.cfg.total());
        // Without the keys nothing is read back (`fault.read_back = false`).
        if self.injector.reads_back() {
            self.injector.keys = Some(load.keys.clone());
        }
    }

    fn next_due(&self) -> Option<std::time::Instant> {
        self.injector.next_due()
    }

    fn tick(
        &mut self,
        now: std::time::Instant,
        brokers: &mut Brokers<'_>,
        board: &mut Board,
    ) -> Result<(), PartError> {
        let target = target(&self.injector, brokers);
        let done = self.injector.tick(now, target).map_err(PartError::Inject);
        self.publish(board);
        done
    }

    fn busy(&self) -> bool {
        self.injector.restarting()
    }

    fn second(&mut self, _second: &mut crate::part::Second<'_>, row: &mut TimeseriesRow) {
        row.event = TimeseriesEvent {
            event: self.injector.take_events(),
        };
    }

    fn finish(&mut self, cols: JobColumns<'_>) -> Result<(), PartError> {
        if self.injector.killed() {
            // The broker's counters started again at zero with the restarted process.
            cols.res.broker_flow_control_total = None;
            cols.res.broker_counters_match = None;
        }
        Ok(())
    }

    fn before_stop(
        &mut self,
        brokers: &mut Brokers<'_>,
        interrupted: bool,
    ) -> Result<(), PartError> {
        // A restart still under way is waited for: the broker that runs is the one the job
        // reads and stops (and no JVM is left behind).
        self.injector
            .finish_restart(target(&self.injector, brokers))
            .map_err(PartError::Inject)?;
        // Only the job's own broker, up at the end (never killed, or restarted): reading it
        // here spares a stop that must be clean (a 5.3.3 JVM takes 8-15 s) and a second broker
        // opened on its store. A broker killed for good, a cluster, a run being stopped: after
        // the stop, as before.
        let (Some(conf), Some(p)) = (self.own_conf.as_ref(), brokers.process.as_deref_mut()) else {
            return Ok(());
        };
        if interrupted
            || brokers.cluster.is_some()
            || !self.owned
            || self.injector.broker_dead()
            || p.exited().is_some()
        {
            return Ok(());
        }
        match crate::fault::job::read_running(&self.injector, p.addr(), conf, &self.cell) {
            Some(Ok(c)) => self.live = Some(c),
            Some(Err(e)) => {
                eprintln!("warning: {e}; the broker's store is read back after its stop instead")
            }
            None => {}
        }
        Ok(())
    }

    /// Not when the broker was read live, nor when nothing is read back
    /// (`fault.read_back = false` leaves the keys unset).
    fn reads_stopped_store(&self) -> bool {
        self.live.is_none() && self.injector.keys.is_some()
    }

    fn after_stop(&mut self, s: Stopped<'_>, cols: JobColumns<'_>) -> Result<(), PartError> {
        let inj = &self.injector;
        let kind: &dyn BrokerKind = self.kind.as_ref();
        // `fault.role`: broker 0's pair is stopped and both its stores read together (a send
        // is kept when either has it), before the cluster removes them.
        let pair_fault = inj.role().is_some();
        match s.cluster {
            Some(c) if self.owned && pair_fault => {
                let w = &self.cell.workload;
                match crate::ha::reconcile::reconcile_pair(c, kind, &self.dir, w, inj) {
                    Ok(Some(t)) => t.fill(cols.fault, &mut cols.res.ha),
                    Ok(None) => {}
                    Err(e) => return Err(PartError::Fault(e)),
                }
                Ok(())
            }
            Some(c) => {
                let (done, stop) =
                    crate::fault::cluster::finish(inj, c, kind, &self.dir, &self.cell);
                *cols.fault = done.map_err(PartError::Fault)?;
                match stop.filter(|_| s.outcome_ok && !s.interrupted) {
                    Some(reason) => Err(PartError::Stop(reason)),
                    None => Ok(()),
                }
            }
            None => {
                let own = self.own_conf.as_ref().map(|conf| (&self.kind, conf));
                *cols.fault =
                    crate::fault::job::finish(inj, own, &self.dir, &self.cell, self.live.take())
                        .map_err(PartError::Fault)?;
                Ok(())
            }
        }
    }
}
