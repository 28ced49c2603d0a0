//! Reconciliation against the store directory a job left behind: a fresh broker is opened on
//! it (recovering it exactly as a restart after a crash would), every queue is read, and the
//! broker is stopped. Used after every fault job, whether or not the broker was restarted
//! mid-run: the job's own broker has been stopped by then (a clean stop commits and flushes,
//! so nothing it acknowledged after a restart is missed).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::broker::{self, BrokerProcess};
use crate::fault::OutcomeLog;
use crate::reconcile::pull::{read_queue, Stored};
use crate::reconcile::tally::{tally, Tally};
use crate::runner::client::{AdminConn, KeySpace};

/// Opens a broker on `conf` (the job's configuration and store) with an ephemeral port, reads
/// `queues` queues of `topic`, and tallies them against `log`. Files go to `dir`.
pub fn reconcile_store(
    bin: &Path,
    conf: &BTreeMap<String, String>,
    dir: &Path,
    topic: &str,
    queues: u32,
    keys: &KeySpace,
    log: &OutcomeLog,
) -> Result<Tally, String> {
    let mut conf = conf.clone();
    conf.insert("listenPort".into(), "0".into());
    let conf_path = dir.join("reconcile-broker.conf");
    broker::write_conf(&conf_path, &conf)
        .map_err(|e| format!("writing {}: {e}", conf_path.display()))?;
    let process = BrokerProcess::start(
        bin,
        &conf_path,
        &dir.join("reconcile-broker.log"),
        None,
        Duration::from_secs(30),
    )
    .map_err(|e| format!("reconcile: opening the store: {e}"))?;
    let result = read_all(process.addr, topic, queues, keys, log);
    process.stop(Duration::from_secs(10));
    result
}

fn read_all(
    addr: std::net::SocketAddr,
    topic: &str,
    queues: u32,
    keys: &KeySpace,
    log: &OutcomeLog,
) -> Result<Tally, String> {
    let c = read_live(addr, topic, queues, keys, log.len())?;
    Ok(tally(log, &c.copies, c.corrupt, c.foreign))
}

/// What one broker's queues hold of a job's sends: copies per send number (saturating at 255),
/// and the records that were corrupt or not the job's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Copies {
    pub copies: Vec<u8>,
    pub corrupt: u64,
    pub foreign: u64,
}

/// Reads `queues` queues of `topic` from the broker at `addr`, counting copies of the load's
/// `sends` send numbers.
pub fn read_live(
    addr: std::net::SocketAddr,
    topic: &str,
    queues: u32,
    keys: &KeySpace,
    sends: u64,
) -> Result<Copies, String> {
    let mut conn =
        AdminConn::connect(addr, Duration::from_secs(2)).map_err(|e| format!("reconcile: {e}"))?;
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
        .map_err(|e| format!("reconcile: reading {topic} queue {q}: {e}"))?;
    }
    Ok(Copies {
        copies,
        corrupt,
        foreign,
    })
}
