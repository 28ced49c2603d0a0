//! A cell's cluster: a name server and `[cluster] brokers` brokers of the run's kind
//! ([`crate::kind`]), each with its own store and broker.conf (the cell's keys, then its own
//! `broker.<i>.<key>` keys), registered with that name server.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use super::error::ClusterError;
use crate::kind::{BrokerKind, Member, MemberSpec, NameServer};
use harness_model::matrix::Cell;
use harness_model::profile::{
    in_tree_version_profile, is_harness_key, per_broker_key, IN_TREE_PROFILE_KEY,
};

/// The broker name of broker `i` (what `broker.<i>.<key>` refers to).
pub fn broker_name(i: usize) -> String {
    format!("broker-{i}")
}

/// Broker `index`'s broker.conf: the cell's keys, its own per-broker keys over them, an
/// ephemeral port, its own store, and the name server when there is one.
pub fn broker_conf(
    cell: &Cell,
    index: usize,
    store: &Path,
    namesrv: Option<SocketAddr>,
) -> BTreeMap<String, String> {
    let mut conf: BTreeMap<String, String> = cell
        .broker
        .iter()
        .filter(|(k, _)| per_broker_key(k).is_none() && !is_harness_key(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in &cell.broker {
        if let Some((i, key)) = per_broker_key(k) {
            if i == index {
                conf.insert(key.to_owned(), v.clone());
            }
        }
    }
    // `version` with `kind = "in-tree"`: the release the model imitates.
    if let Some(profile) = in_tree_version_profile(&cell.broker) {
        conf.insert(IN_TREE_PROFILE_KEY.into(), profile.into());
    }
    conf.insert("listenPort".into(), "0".into());
    conf.entry("storePathRootDir".into())
        .or_insert_with(|| store.display().to_string());
    if let Some(ns) = namesrv {
        conf.insert("brokerName".into(), broker_name(index));
        conf.insert("namesrvAddr".into(), ns.to_string());
    }
    conf
}

/// CPUs of broker `i` of `n`: its own share of the broker CPUs when there are enough, else
/// all of them (shared).
pub fn broker_cpus(all: &[usize], i: usize, n: usize) -> Vec<usize> {
    if all.len() >= n && n > 0 {
        let per = all.len() / n;
        all[i * per..(i + 1) * per].to_vec()
    } else {
        all.to_vec()
    }
}

/// The running name server and brokers of one job.
pub struct CellCluster {
    namesrv: Option<Box<dyn NameServer>>,
    pub namesrv_addr: SocketAddr,
    pub brokers: Vec<Box<dyn Member>>,
    /// `[cluster] slaves = 1`: broker `i`'s slave (`cluster::slaves`), in broker order.
    pub slaves: Vec<Box<dyn Member>>,
    /// The broker.conf each broker and slave was started with (reconciliation reopens stores).
    pub confs: Vec<BTreeMap<String, String>>,
    pub slave_confs: Vec<BTreeMap<String, String>>,
    stores: Vec<PathBuf>,
    /// The slaves' stores, apart from `stores` (which is indexed by broker).
    pub(super) slave_stores: Vec<PathBuf>,
}

impl CellCluster {
    /// Starts the name server, then the brokers one after the other. Any failure stops what
    /// was started and names the broker and its log's last line.
    pub fn start(
        kind: &dyn BrokerKind,
        cell: &Cell,
        n: usize,
        job_dir: &Path,
        cpus: Option<&[usize]>,
    ) -> Result<CellCluster, ClusterError> {
        Self::start_pairs(kind, cell, (n, 0), job_dir, cpus)
    }

    /// [`CellCluster::start`] with `slaves` (0 or 1) slaves per broker, each started right
    /// after its master; returns once every slave is connected (`cluster::slaves`).
    pub fn start_pairs(
        kind: &dyn BrokerKind,
        cell: &Cell,
        (n, slaves): (usize, usize),
        job_dir: &Path,
        cpus: Option<&[usize]>,
    ) -> Result<CellCluster, ClusterError> {
        let ns = kind
            .start_namesrv(job_dir)
            .map_err(ClusterError::NameServer)?;
        let mut cluster = CellCluster {
            namesrv_addr: ns.addr(),
            namesrv: Some(ns),
            brokers: Vec::new(),
            slaves: Vec::new(),
            confs: Vec::new(),
            slave_confs: Vec::new(),
            stores: Vec::new(),
            slave_stores: Vec::new(),
        };
        for i in 0..n {
            let store = job_dir.join(format!("store-{i}"));
            let conf = broker_conf(cell, i, &store, Some(cluster.namesrv_addr));
            let pin = cpus.map(|c| broker_cpus(c, i, n));
            cluster.stores.push(store);
            let stem = broker_name(i);
            let spec = MemberSpec::new(&stem, job_dir, &conf).pinned(pin.as_deref());
            let p = kind
                .start_broker(&spec)
                .map_err(|source| ClusterError::Broker {
                    member: stem.clone(),
                    source,
                })?;
            cluster.brokers.push(p);
            cluster.confs.push(conf);
            if slaves > 0 {
                cluster.start_slave(kind, i, job_dir, pin.as_deref())?;
            }
        }
        if slaves > 0 {
            cluster.wait_slaves_connected()?;
        }
        Ok(cluster)
    }

    /// The first broker that exited, if any, other than `skip` (a broker a fault killed).
    pub fn exited(&mut self, skip: Option<usize>) -> Option<(usize, ExitStatus)> {
        self.brokers
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| Some(*i) != skip)
            .find_map(|(i, b)| b.exited().map(|s| (i, s)))
    }

    /// Broker `i`'s store folder.
    pub fn store(&self, i: usize) -> Option<&Path> {
        self.stores.get(i).map(PathBuf::as_path)
    }

    /// How many brokers were started (their stores outlive them until [`CellCluster::stop`]).
    pub fn store_count(&self) -> usize {
        self.stores.len()
    }

    /// Stops the brokers (SIGTERM, `grace`) and keeps their stores (a fault's reconciliation
    /// reads them next). Returns each broker's exit status; empty when already stopped.
    pub fn stop_brokers(&mut self, grace: Duration) -> Vec<Option<ExitStatus>> {
        self.brokers.drain(..).map(|b| b.stop(grace)).collect()
    }

    /// Stops the brokers (if still running), then the name server; removes the stores.
    /// Returns each broker's exit status.
    pub fn stop(mut self, grace: Duration) -> Vec<Option<ExitStatus>> {
        let statuses = self.stop_brokers(grace);
        for s in self.slaves.drain(..) {
            s.stop(grace);
        }
        self.stop_namesrv();
        for s in self.stores.iter().chain(&self.slave_stores) {
            let _ = std::fs::remove_dir_all(s);
        }
        statuses
    }

    /// Ends the brokers, the slaves and the name server the quickest way their kind has
    /// ([`Member::discard`]) and removes the stores: for a cluster whose exit statuses and
    /// stores nobody reads (a JVM's clean stop took 12-15 s a member).
    pub fn discard(mut self, grace: Duration) {
        for m in self.brokers.drain(..).chain(self.slaves.drain(..)) {
            m.discard(grace);
        }
        if let Some(ns) = self.namesrv.take() {
            ns.discard();
        }
        for s in self.stores.iter().chain(&self.slave_stores) {
            let _ = std::fs::remove_dir_all(s);
        }
    }

    fn stop_namesrv(&mut self) {
        if let Some(reason) = self.namesrv.take().and_then(|ns| ns.stop()) {
            eprintln!("{reason}");
        }
    }
}

impl Drop for CellCluster {
    fn drop(&mut self) {
        // Brokers the harness owns are killed on drop; the name server stops here.
        self.brokers.clear();
        self.slaves.clear();
        self.stop_namesrv();
    }
}
