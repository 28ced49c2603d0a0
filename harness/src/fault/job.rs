//! The points where a job meets its faults: before the load (an [`Injector`] for the cell's
//! plan), and after it the reconciliation (as `summary.csv` columns): of the job's broker while
//! it still runs, else of its store once it stopped.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use crate::fault::injector::{Injector, Restarter};
use crate::fault::FaultError;
use crate::kind::Kind;
use crate::reconcile::{
    quiet_for, read_live, reconcile_store, tally, wait_settled, Copies, ReconcileError, Tally,
};
use crate::report::FaultColumns;
use harness_model::matrix::Cell;
use harness_results::cells::Fixed;

/// The injector of a cell with `[fault]`, over `sends` scheduled sends. `kind` and `conf` are
/// the job's own broker (None with `--target`).
pub fn injector_for(
    cell: &Cell,
    sends: u64,
    own_broker: Option<(&Kind, &BTreeMap<String, String>)>,
    dir: &Path,
    cpus: Option<&[usize]>,
    target_pid: Option<u32>,
) -> Option<Injector> {
    let plan = cell.fault.as_ref()?;
    let restarter = own_broker.map(|(kind, conf)| Restarter {
        name: "broker".into(),
        kind: kind.clone(),
        conf: conf.clone(),
        dir: dir.to_owned(),
        cpus: cpus.map(<[usize]>::to_vec),
    });
    Some(Injector::new(plan, sends, restarter, target_pid, false))
}

/// How long a running broker may take to make readable what it acknowledged.
const SETTLE_WITHIN: Duration = Duration::from_secs(30);

/// The job's own broker at `addr`, still running after the load: every queue read once it has
/// committed and dispatched everything (`reconcile::wait_settled`). None without the load's
/// keys (`fault.read_back = false`).
pub fn read_running(
    injector: &Injector,
    addr: SocketAddr,
    conf: &BTreeMap<String, String>,
    cell: &Cell,
) -> Option<Result<Copies, ReconcileError>> {
    let keys = injector.keys.as_ref()?;
    let w = &cell.workload;
    Some(
        wait_settled(addr, quiet_for(conf), SETTLE_WITHIN)
            .and_then(|()| read_live(addr, &w.topic, w.queues, keys, injector.log.len())),
    )
}

/// After the job's broker stopped: the fault columns, from `live` (the broker read while it
/// still ran, [`read_running`]) or else from its store read back (when the harness owns it).
/// An unreadable store is an error: the experiment has no result.
pub fn finish(
    injector: &Injector,
    own_broker: Option<(&Kind, &BTreeMap<String, String>)>,
    dir: &Path,
    cell: &Cell,
    live: Option<Copies>,
) -> Result<FaultColumns, FaultError> {
    let mut cols = FaultColumns {
        recovery_ms: injector.recovery().map(ms),
        app_recovery_ms: injector.app_recovery().map(ms),
        ..FaultColumns::default()
    };
    let (Some((kind, conf)), Some(keys)) = (own_broker, injector.keys.as_ref()) else {
        return Ok(cols);
    };
    if let Some(c) = live {
        set_totals(
            &mut cols,
            &tally(&injector.log, &c.copies, c.corrupt, c.foreign),
        );
        return Ok(cols);
    }
    let w = &cell.workload;
    let t = reconcile_store(
        kind.as_ref(),
        conf,
        dir,
        &w.topic,
        w.queues,
        keys,
        &injector.log,
    )?;
    set_totals(&mut cols, &t);
    Ok(cols)
}

/// Milliseconds with one decimal, as the recovery columns hold them.
pub fn ms(d: std::time::Duration) -> Fixed<1> {
    Fixed(d.as_secs_f64() * 1000.0)
}

/// The reconciliation's totals into their columns.
pub fn set_totals(cols: &mut FaultColumns, t: &Tally) {
    cols.acked_lost = Some(t.acked_lost);
    cols.phantom = Some(t.phantom);
    cols.busy_stored = Some(t.busy_stored);
    cols.duplicates = Some(t.duplicates);
    cols.corrupt = Some(t.corrupt);
    cols.unacked_in_flight = Some(t.unacked_in_flight);
}

/// Why the cells' faults cannot run against a broker at `--target`, if they cannot: a kill
/// or restart needs a broker the harness started (and can start again on the same store); a
/// pause needs the broker's pid.
pub fn target_problem(cells: &[Cell], broker_pid: Option<u32>) -> Option<String> {
    let plans = cells.iter().filter_map(|c| c.fault.as_ref());
    for plan in plans {
        if plan.kill.is_some() {
            return Some(
                "--target drives a broker the harness did not start, so `fault.kill` / `fault.restart` cannot be used (the harness could not start it again on its store); run without --target, or use `fault.pause` with --broker-pid"
                    .into(),
            );
        }
        if plan.pause.is_some() && broker_pid.is_none() {
            return Some(
                "`fault.pause` with --target needs the broker's process id: add --broker-pid PID"
                    .into(),
            );
        }
    }
    None
}
