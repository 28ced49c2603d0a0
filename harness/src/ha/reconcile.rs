//! After a fault on a replicating pair (`fault.role` with `[cluster] slaves = 1`): broker 0's
//! master and slave are stopped (the one the fault killed is already dead), each store is
//! opened by a fresh standalone broker — recovering it as a restart after a crash would — and
//! read back. A send answered SUCCESS is kept when either store has it; `acked_lost` is the
//! pair's (in neither store), `acked_lost_master` / `acked_lost_slave` each store's, so the
//! slave's figure is what losing the master's machine would have cost.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::cluster::{ExitedAtStop, JobCluster};
use crate::fault::FaultError;
use crate::fault::Injector;
use crate::kind::{BrokerKind, Member, MemberSpec};

use crate::reconcile::{read_live, tally, Copies, Tally};
use crate::report::{FaultColumns, HaColumns};
use harness_model::profile::Workload;
use rmq_client::admin::AdminConn;
use rmq_client::uniq_key::KeySpace;

/// The pair's reconciliation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairTally {
    /// Over the union of both stores.
    pub pair: Tally,
    pub master_lost: u64,
    pub slave_lost: u64,
}

/// A member's broker.conf made a standalone broker: no name server (it must not join the
/// route), no role, its own ephemeral ports.
pub fn standalone(conf: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut c = conf.clone();
    for k in ["namesrvAddr", "haMasterAddress", "brokerId"] {
        c.remove(k);
    }
    c.insert("brokerRole".into(), "ASYNC_MASTER".into());
    c.insert("listenPort".into(), "0".into());
    c.insert("haListenPort".into(), "0".into());
    c
}

/// Copies per send number in both stores: the pair keeps a send when either store has it.
pub fn union(master: &[u8], slave: &[u8]) -> Vec<u8> {
    master
        .iter()
        .zip(slave)
        .map(|(m, s)| (*m).max(*s))
        .collect()
}

/// Stops broker 0's pair and reads both stores. `None` when the job has no pair of its own.
pub fn reconcile_pair(
    cluster: &mut JobCluster,
    kind: &dyn BrokerKind,
    dir: &Path,
    w: &Workload,
    inj: &Injector,
) -> Result<Option<PairTally>, FaultError> {
    let Some(keys) = inj.keys.as_ref() else {
        return Ok(None);
    };
    let Some(cell) = cluster.cell_mut() else {
        return Ok(None);
    };
    if cell.slaves.is_empty() || cell.brokers.is_empty() {
        return Ok(None);
    }
    let members = [
        ("broker-0", cell.brokers.remove(0), cell.confs[0].clone()),
        (
            "broker-0-slave",
            cell.slaves.remove(0),
            cell.slave_confs[0].clone(),
        ),
    ];
    let mut read = Vec::new();
    for (name, process, conf) in members {
        stop_member(name, process)?;
        read.push(read_store(
            kind,
            name,
            &standalone(&conf),
            dir,
            w,
            keys,
            inj.log.len(),
        )?);
    }
    let (m, s) = (&read[0], &read[1]);
    let both = union(&m.copies, &s.copies);
    let pair = tally(
        &inj.log,
        &both,
        m.corrupt + s.corrupt,
        m.foreign.max(s.foreign),
    );
    Ok(Some(PairTally {
        pair,
        master_lost: tally(&inj.log, &m.copies, 0, 0).acked_lost,
        slave_lost: tally(&inj.log, &s.copies, 0, 0).acked_lost,
    }))
}

impl PairTally {
    /// The pair's figures go to the fault columns, each store's loss to the replication ones.
    pub fn fill(&self, fault: &mut FaultColumns, ha: &mut HaColumns) {
        let t = &self.pair;
        fault.acked_lost = Some(t.acked_lost);
        fault.phantom = Some(t.phantom);
        fault.busy_stored = Some(t.busy_stored);
        fault.duplicates = Some(t.duplicates);
        fault.corrupt = Some(t.corrupt);
        fault.unacked_in_flight = Some(t.unacked_in_flight);
        ha.acked_lost_master = Some(self.master_lost);
        ha.acked_lost_slave = Some(self.slave_lost);
    }
}

/// A member still running is stopped cleanly (a clean stop flushes); one that exits badly then
/// makes the experiment invalid. The killed one is already dead.
fn stop_member(name: &str, mut p: Box<dyn Member>) -> Result<(), ExitedAtStop> {
    if p.exited().is_some() {
        return Ok(());
    }
    match p.stop(Duration::from_secs(10)) {
        Some(status) if !status.success() => Err(ExitedAtStop {
            member: name.to_owned(),
            status,
        }),
        _ => Ok(()),
    }
}

/// Opens `conf`'s store with a fresh broker, creates the topic (a slave's store has the
/// messages but not the topic: slaves do not copy their master's topic config), and reads it.
fn read_store(
    kind: &dyn BrokerKind,
    name: &str,
    conf: &BTreeMap<String, String>,
    dir: &Path,
    w: &Workload,
    keys: &KeySpace,
    sends: u64,
) -> Result<Copies, FaultError> {
    let stem = format!("reconcile-{name}");
    let spec = MemberSpec::new(&stem, dir, conf).ready_within(Duration::from_secs(30));
    let p = kind
        .start_broker(&spec)
        .map_err(|source| FaultError::PairOpen {
            name: name.to_owned(),
            source,
        })?;
    let result = AdminConn::connect(p.addr(), Duration::from_secs(2))
        .and_then(|mut a| a.create_topic(&w.topic, w.queues, Duration::from_secs(5)))
        .map_err(|e| FaultError::PairTopic {
            name: name.to_owned(),
            topic: w.topic.clone(),
            source: Box::new(e),
        })
        .and_then(|()| {
            read_live(p.addr(), &w.topic, w.queues, keys, sends).map_err(|source| {
                FaultError::PairRead {
                    name: name.to_owned(),
                    source,
                }
            })
        });
    // Everything is read: nothing opens this store again.
    p.discard(Duration::from_secs(10));
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::OutcomeLog;
    use crate::recorder::Outcome;
    use std::time::Instant;

    #[test]
    fn a_send_is_kept_when_either_store_has_it() {
        let log = OutcomeLog::new(4);
        let t = Instant::now();
        for seq in 0..3 {
            log.record(seq, Outcome::Ok, None, t, t);
        }
        log.record(3, Outcome::FlushSlaveTimeout, None, t, t);
        // 0 in both, 1 only on the master, 2 only on the slave (the master lost its page
        // cache), 3 answered 12: stored on the master, not acknowledged by the slave.
        let master = [1, 1, 0, 1];
        let slave = [1, 0, 1, 0];
        let both = union(&master, &slave);
        assert_eq!(both, vec![1, 1, 1, 1]);
        assert_eq!(tally(&log, &both, 0, 0).acked_lost, 0);
        assert_eq!(tally(&log, &master, 0, 0).acked_lost, 1);
        assert_eq!(tally(&log, &slave, 0, 0).acked_lost, 1);
        // A 12 is no acknowledgement: present, it is a phantom, not a loss.
        assert_eq!(tally(&log, &both, 0, 0).phantom, 1);
    }

    #[test]
    fn standalone_drops_the_pair_wiring() {
        let conf: BTreeMap<String, String> = [
            ("brokerRole", "SLAVE"),
            ("brokerId", "1"),
            ("haMasterAddress", "127.0.0.1:1"),
            ("namesrvAddr", "127.0.0.1:2"),
            ("storePathRootDir", "/s"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let s = standalone(&conf);
        assert_eq!(s["brokerRole"], "ASYNC_MASTER");
        assert_eq!(s["storePathRootDir"], "/s");
        for k in ["brokerId", "haMasterAddress", "namesrvAddr"] {
            assert!(!s.contains_key(k), "{k}");
        }
    }
}
