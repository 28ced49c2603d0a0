//! Reconciliation against the store directory a job left behind: a fresh broker is opened on
//! it (recovering it exactly as a restart after a crash would), every queue is read, and the
//! broker is stopped. Used after a fault job whose broker is not running at its end (killed and
//! not restarted) or could not be read live, and for a cluster's stores; the job's own broker
//! has been stopped by then (a clean stop commits and flushes, so nothing it acknowledged after
//! a restart is missed). A job's broker still running at the end is read where it runs
//! ([`read_live`], once settled: `reconcile::settle`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::fault::OutcomeLog;
use crate::kind::{BrokerKind, MemberSpec};
use crate::reconcile::error::ReconcileError;
use crate::reconcile::pull::{read_queue, Stored};
use crate::reconcile::tally::{tally, Tally};
use rmq_client::admin::AdminConn;
use rmq_client::uniq_key::KeySpace;

/// What one broker's queues hold of a job's sends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Copies {
    /// Records found per send number, saturating at 255.
    pub copies: Vec<u8>,
    /// Records whose body CRC does not match.
    pub corrupt: u64,
    /// Records without one of the job's keys.
    pub foreign: u64,
}

/// Opens a broker on `conf` (the job's configuration and store) with an ephemeral port, reads
/// `queues` queues of `topic`, and tallies them against `log`. Files go to `dir`.
pub fn reconcile_store(
    kind: &dyn BrokerKind,
    conf: &BTreeMap<String, String>,
    dir: &Path,
    topic: &str,
    queues: u32,
    keys: &KeySpace,
    log: &OutcomeLog,
) -> Result<Tally, ReconcileError> {
    let c = read_store(
        kind,
        conf,
        dir,
        "reconcile-broker",
        topic,
        queues,
        keys,
        log.len(),
    )?;
    Ok(tally(log, &c.copies, c.corrupt, c.foreign))
}

/// Opens a broker on `conf`'s store (files `<stem>.conf` / `<stem>.log` in `dir`), reads
/// `queues` queues of `topic`, stops it. The broker is not registered anywhere: a cluster
/// broker's `namesrvAddr` is dropped.
#[allow(clippy::too_many_arguments)]
pub fn read_store(
    kind: &dyn BrokerKind,
    conf: &BTreeMap<String, String>,
    dir: &Path,
    stem: &str,
    topic: &str,
    queues: u32,
    keys: &KeySpace,
    sends: u64,
) -> Result<Copies, ReconcileError> {
    let mut conf = conf.clone();
    conf.insert("listenPort".into(), "0".into());
    conf.remove("namesrvAddr");
    let spec = MemberSpec::new(stem, dir, &conf).ready_within(Duration::from_secs(30));
    let process = kind
        .start_broker(&spec)
        .map_err(ReconcileError::OpenStore)?;
    let result = read_live(process.addr(), topic, queues, keys, sends);
    // Everything is read: nothing opens this store again.
    process.discard(Duration::from_secs(10));
    result
}

/// Reads `queues` queues of `topic` from the broker at `addr` through PULL_MESSAGE (from
/// offset 0; a queue whose first records were deleted answers PULL_OFFSET_MOVED with its
/// minimum offset, where the reader goes on).
pub fn read_live(
    addr: std::net::SocketAddr,
    topic: &str,
    queues: u32,
    keys: &KeySpace,
    sends: u64,
) -> Result<Copies, ReconcileError> {
    let mut conn =
        AdminConn::connect(addr, Duration::from_secs(2)).map_err(|e| ReconcileError::Connect {
            addr,
            source: Box::new(e),
        })?;
    let mut copies = vec![0u8; sends as usize];
    let (mut corrupt, mut foreign) = (0u64, 0u64);
    for q in 0..queues {
        read_queue(
            &mut conn,
            topic,
            q as i32,
            Duration::from_secs(5),
            |s| match s {
                Stored::Corrupt => corrupt += 1,
                Stored::Key(k) => match k.as_deref().and_then(|k| keys.seq_of(k)) {
                    Some(seq) if (seq as usize) < copies.len() => {
                        let c = &mut copies[seq as usize];
                        *c = c.saturating_add(1);
                    }
                    _ => foreign += 1,
                },
            },
        )
        .map_err(|e| ReconcileError::ReadQueue {
            topic: topic.to_owned(),
            queue: q,
            addr,
            source: Box::new(e),
        })?;
    }
    Ok(Copies {
        copies,
        corrupt,
        foreign,
    })
}
