//! Faults on one broker of a cluster (`[fault] broker = K`): the harness's own cluster
//! (`[cluster]`: broker K is killed, restarted on its store and port, or paused, while the
//! others go on) or one behind `--namesrv` (broker K of the route, signalled through its pid
//! from `--broker-pid NAME=PID`; never restarted, its command line is not ours).
//!
//! After the load every broker's queues are read back: from its store (a fresh broker opened on
//! it) when the harness started the cluster, through PULL_MESSAGE on the running broker
//! otherwise. The totals are the application's view, and each broker's figures sit beside them
//! ([`crate::reconcile::tally_brokers`]).

use std::path::Path;
use std::time::Duration;

use crate::cluster::cell::broker_cpus;
use crate::cluster::ExitedAtStop;
use crate::cluster::{broker_conf, broker_name, JobCluster};
use crate::fault::injector::{Injector, Restarter};
use crate::fault::job::{ms, set_totals};
use crate::fault::FaultError;
use crate::kind::{BrokerKind, Kind};
use crate::reconcile::{per_broker_text, read_live, read_store, tally_brokers, Copies};
use crate::report::FaultColumns;
use harness_model::matrix::Cell;

/// The injector of a cluster cell with `[fault]`, over `sends` scheduled sends. Broker K of the
/// harness's cluster can be restarted (`kind`, its broker.conf, its CPUs); a `--namesrv`
/// broker gets its pid once the route names it ([`resolve`]).
pub fn injector_for(
    cell: &Cell,
    sends: u64,
    cluster: &JobCluster,
    kind: &Kind,
    dir: &Path,
    cpus: Option<&[usize]>,
) -> Option<Injector> {
    let plan = cell.fault.as_ref()?;
    let k = plan.broker;
    let restarter = cluster.cell().map(|cc| Restarter {
        name: broker_name(k),
        kind: kind.clone(),
        conf: broker_conf(
            cell,
            k,
            cc.store(k).unwrap_or(&dir.join(format!("store-{k}"))),
            Some(cluster.namesrv),
        ),
        dir: dir.to_owned(),
        cpus: cpus.map(|c| broker_cpus(c, k, cc.brokers.len())),
    });
    Some(Injector::new(plan, sends, restarter, None, true))
}

/// The faulted broker's router index and name once the route is known. With `--namesrv` its
/// pid comes from `pids` (by brokerName), or the job is refused with the flag to add.
pub fn resolve(
    injector: &mut Injector,
    cluster: &JobCluster,
    pids: &std::collections::BTreeMap<String, u32>,
) -> Result<(usize, String), FaultError> {
    let pids = crate::fault::BrokerPids {
        single: None,
        named: pids.clone(),
    };
    let routes = cluster.routes();
    let k = injector.broker_index();
    let (index, name) =
        if cluster.cell().is_some() {
            // The harness's brokers are named broker-<cell index>; the router sorts by name.
            let name = broker_name(k);
            let i = routes.iter().position(|r| r.name == name).ok_or_else(|| {
                FaultError::NotInRoute {
                    broker: k,
                    name: name.clone(),
                }
            })?;
            (i, name)
        } else {
            let r = routes.get(k).ok_or_else(|| FaultError::BeyondRoute {
                broker: k,
                names: routes.iter().map(|r| r.name.clone()).collect(),
            })?;
            injector.set_target_pid(pids.of(&r.name)?);
            (k, r.name.clone())
        };
    injector.set_faulted(index);
    Ok((index, name))
}

/// After the load: stops the harness's brokers (keeping their stores), reads every broker's
/// queues, and returns the fault columns with the per-broker figures; the reason a broker did
/// not stop cleanly comes back separately (an invalid row, not a failed reconciliation).
pub fn finish(
    injector: &Injector,
    cluster: &mut JobCluster,
    kind: &dyn BrokerKind,
    dir: &Path,
    cell: &Cell,
) -> (Result<FaultColumns, FaultError>, Option<ExitedAtStop>) {
    let routes = cluster.routes();
    let names: Vec<String> = routes.iter().map(|r| r.name.clone()).collect();
    let mut cols = FaultColumns {
        recovery_ms: injector.recovery().map(ms),
        app_recovery_ms: injector.app_recovery().map(ms),
        fault_broker: injector.faulted_name(&names),
        ..FaultColumns::default()
    };
    let k = injector.broker_index();
    let dead = injector.broker_dead().then_some(k);
    let stop_reason = cluster.stop_brokers(Duration::from_secs(10), dead);
    let Some(keys) = injector.keys.as_ref() else {
        return (Ok(cols), stop_reason);
    };
    let topic = &cell.workload.topic;
    let sends = injector.log.len();
    let mut copies: Vec<Option<Copies>> = Vec::with_capacity(routes.len());
    for (index, r) in routes.iter().enumerate() {
        // A --namesrv broker killed (not restarted) answers no pull: its figures stay unknown.
        if cluster.cell().is_none() && injector.broker_dead() && injector.faulted() == Some(index) {
            copies.push(None);
            continue;
        }
        let read = match cluster.cell() {
            Some(cc) => {
                let Some(i) = (0..cc_len(cluster)).find(|&i| broker_name(i) == r.name) else {
                    return (
                        Err(FaultError::NotInCell {
                            name: r.name.clone(),
                        }),
                        stop_reason,
                    );
                };
                let store = cc.store(i).unwrap_or(dir).to_owned();
                let conf = broker_conf(cell, i, &store, None);
                read_store(
                    kind,
                    &conf,
                    dir,
                    &format!("reconcile-{}", r.name),
                    topic,
                    r.write_queues,
                    keys,
                    sends,
                )
                .map_err(FaultError::from)
            }
            // A cluster we did not start: its brokers are read where they run.
            _ => read_live(r.addr, topic, r.write_queues, keys, sends).map_err(|source| {
                FaultError::Live {
                    name: r.name.clone(),
                    source,
                }
            }),
        };
        match read {
            Ok(c) => copies.push(Some(c)),
            Err(e) => return (Err(e), stop_reason),
        }
    }
    let (total, per) = tally_brokers(&injector.log, &copies);
    if let Some(total) = &total {
        set_totals(&mut cols, total);
    }
    cols.broker_acked_lost = per_broker_text(&names, &per, |t| t.acked_lost);
    cols.broker_phantom = per_broker_text(&names, &per, |t| t.phantom);
    cols.broker_duplicates = per_broker_text(&names, &per, |t| t.duplicates);
    (Ok(cols), stop_reason)
}

/// How many brokers the harness's cluster has: the stores it made (its brokers may have been
/// stopped already).
fn cc_len(cluster: &JobCluster) -> usize {
    cluster.cell().map_or(0, |c| c.store_count())
}

/// Why the cells' faults cannot run as asked on this cluster, or None. `namesrv`: the cluster
/// is one the harness did not start; `pids`: the `--broker-pid NAME=PID` given. The broker
/// index against the route of a `--namesrv` cluster is checked when the job starts.
pub fn problem(
    cells: &[Cell],
    namesrv: bool,
    pids: &std::collections::BTreeMap<String, u32>,
) -> Option<String> {
    for cell in cells {
        let Some(plan) = cell.fault.as_ref() else {
            continue;
        };
        let k = plan.broker;
        match cell.brokers {
            Some(n) if k >= n as usize => {
                return Some(format!(
                    "`fault.broker` = {k}, but [cluster] starts {n} broker{} (brokers count from 0: use 0..{})",
                    if n == 1 { "" } else { "s" },
                    n.saturating_sub(1)
                ));
            }
            None if !namesrv && k > 0 => {
                return Some(format!(
                    "`fault.broker` = {k} names a broker of a cluster, and there is none: add [cluster] brokers = {} (or run against one with --namesrv), or drop `fault.broker`",
                    k + 1
                ));
            }
            _ => {}
        }
        if !namesrv {
            continue;
        }
        if plan.restart {
            return Some(
                "--namesrv drives a cluster the harness did not start: `fault.restart` is refused, because the harness cannot know a broker's command line to start it again; kill it without restart (with --broker-pid NAME=PID) and restart it yourself, or run the cluster with [cluster]"
                    .into(),
            );
        }
        if pids.is_empty() {
            return Some(
                "`[fault]` with --namesrv signals a broker the harness did not start and needs its process id: add --broker-pid NAME=PID (NAME = the brokerName in the route; repeatable)"
                    .into(),
            );
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn cells(fault: &str, cluster: &str) -> Vec<Cell> {
        let text =
            format!("name = \"f\"\n{cluster}\n[workload]\nduration = \"10s\"\n[fault]\n{fault}\n");
        let p = harness_model::profile::Profile::parse(&text, "f.toml", Path::new("f.toml"), &[])
            .unwrap();
        harness_model::matrix::expand(&p).unwrap()
    }

    #[test]
    fn refusals_name_what_to_do() {
        let none = BTreeMap::new();
        let pids: BTreeMap<String, u32> = [("broker-a".to_owned(), 42)].into();
        let kill1 = cells("kill = \"2s\"\nbroker = 1", "");
        let e = problem(&kill1, false, &none).unwrap();
        assert!(e.contains("[cluster] brokers = 2"), "{e}");
        // One broker against two: the one-broker cell cannot lose broker 1.
        let axis = "[cluster]\nbrokers = 2\n[matrix]\n\"cluster.brokers\" = [2, 1]";
        let e = problem(&cells("kill = \"2s\"\nbroker = 1", axis), false, &none).unwrap();
        assert!(e.contains("starts 1 broker "), "{e}");
        let two = cells("kill = \"2s\"\nbroker = 1", "[cluster]\nbrokers = 2");
        assert_eq!(problem(&two, false, &none), None);
        let e = problem(&kill1, true, &none).unwrap();
        assert!(e.contains("--broker-pid NAME=PID"), "{e}");
        assert_eq!(problem(&kill1, true, &pids), None);
        let restart = cells("kill = \"2s\"\nrestart = true", "");
        let e = problem(&restart, true, &pids).unwrap();
        assert!(e.contains("`fault.restart` is refused"), "{e}");
        assert!(e.contains("command line"), "{e}");
        let pause = cells("pause = \"1s for 1s\"", "");
        assert!(problem(&pause, true, &none).is_some());
        assert_eq!(problem(&pause, false, &none), None);
    }
}
