//! The cluster of one job: either the harness's own (`[cluster]`: a name server and brokers
//! started for the job) or an existing one (`--namesrv`), and its load-side state.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::cell::CellCluster;
use super::error::{ClusterError, ExitedAtStop};
use super::router::Router;
use super::setup::{prepare, ClusterLoad};
use crate::kind::{BrokerKind, Lifecycle, Member};
use harness_model::matrix::Cell;
use harness_model::profile::{ClusterSpec, FaultRole, Workload};
use rmq_client::admin::AdminConn;

/// A job's cluster.
pub struct JobCluster {
    pub namesrv: SocketAddr,
    /// Brokers that must have registered (the harness's own cluster).
    expect: Option<usize>,
    cell: Option<CellCluster>,
    load: Option<ClusterLoad>,
    /// `[cluster] slaves`: each broker's slave must be in the route and connected.
    slaves: u32,
}

impl JobCluster {
    /// `None` when the job drives one broker. With `namesrv` the cluster exists already;
    /// with `spec` its name server and brokers of `kind` are started now (pinned to `cpus`).
    pub fn start(
        namesrv: Option<SocketAddr>,
        spec: Option<&ClusterSpec>,
        kind: &dyn BrokerKind,
        cell: &Cell,
        job_dir: &Path,
        cpus: Option<&[usize]>,
    ) -> Result<Option<JobCluster>, ClusterError> {
        if let Some(ns) = namesrv {
            return Ok(Some(JobCluster {
                namesrv: ns,
                expect: None,
                cell: None,
                load: None,
                slaves: spec.map_or(0, |s| s.slaves),
            }));
        }
        let (Some(spec), Lifecycle::Owned) = (spec, kind.lifecycle()) else {
            return Ok(None);
        };
        // The `cluster.brokers` axis, else [cluster] brokers; `slaves` slaves per broker.
        let n = cell.brokers.unwrap_or(spec.brokers) as usize;
        let cc = CellCluster::start_pairs(kind, cell, (n, spec.slaves as usize), job_dir, cpus)?;
        Ok(Some(JobCluster {
            namesrv: cc.namesrv_addr,
            expect: Some(n),
            cell: Some(cc),
            load: None,
            slaves: spec.slaves,
        }))
    }

    /// Every broker process the harness started for this job (none with `--namesrv`).
    pub fn broker_pids(&self) -> Vec<u32> {
        self.cell.as_ref().map_or_else(Vec::new, |c| {
            c.brokers
                .iter()
                .chain(&c.slaves)
                .filter_map(|b| b.pid())
                .collect()
        })
    }

    /// The first broker started (address, pid): it answers the admin requests.
    pub fn first_broker(&self) -> Option<(SocketAddr, Option<u32>)> {
        let b = self.cell.as_ref()?.brokers.first()?;
        Some((b.addr(), b.pid()))
    }

    /// The cluster the harness started (None with `--namesrv`).
    pub fn cell_mut(&mut self) -> Option<&mut CellCluster> {
        self.cell.as_mut()
    }

    /// Topic on every broker, route, router: what the load needs.
    pub fn prepare(&mut self, w: &Workload) -> Result<Arc<Router>, ClusterError> {
        let load = prepare(self.namesrv, self.expect, w)?;
        let router = load.router.clone();
        if self.slaves > 0 {
            let wait = super::slaves::CONNECT_WAIT;
            let ask_masters = self.cell.is_none();
            let slaves = super::slaves::ready(self.namesrv, &w.topic, &router, wait, ask_masters)?;
            if w.create_topic {
                super::slaves::create_topic(&slaves, w)?;
            }
        }
        self.load = Some(load);
        Ok(router)
    }

    /// Broker names in router order (the per-broker summary columns).
    pub fn broker_names(&self) -> Vec<String> {
        self.load
            .as_ref()
            .map(|l| l.router.brokers.iter().map(|b| b.name.clone()).collect())
            .unwrap_or_default()
    }

    /// The harness's own cluster (None with `--namesrv`).
    pub fn cell(&self) -> Option<&CellCluster> {
        self.cell.as_ref()
    }

    /// Started broker `i` (cell order), for a fault to stop, kill or replace.
    pub fn broker_mut(&mut self, i: usize) -> Option<&mut Box<dyn Member>> {
        self.cell.as_mut()?.brokers.get_mut(i)
    }

    /// The route's brokers in router order (name, address, write queues); empty before
    /// [`JobCluster::prepare`].
    pub fn routes(&self) -> Vec<super::router::BrokerRoute> {
        self.load
            .as_ref()
            .map(|l| l.router.brokers.clone())
            .unwrap_or_default()
    }

    /// A started broker that exited mid-job, as an invalid-row reason; `skip` is a broker a
    /// fault killed on purpose (cell order).
    pub fn crashed(&mut self, skip: Option<usize>) -> Option<String> {
        let cell = self.cell.as_mut()?;
        if let Some((i, st)) = cell.slave_exited() {
            return Some(format!(
                "broker-{i}-slave exited mid-cell ({st}); see broker-{i}-slave.log"
            ));
        }
        let (i, st) = cell.exited(skip)?;
        Some(format!(
            "broker-{i} exited mid-cell ({st}); see broker-{i}.log"
        ))
    }

    /// GET_BROKER_RUNTIME_INFO of every broker, the `flowControl*` counters summed (so the
    /// harness's busy counts can be checked against the cluster's); other keys from the first.
    pub fn runtime_info_sum(&self, timeout: Duration) -> Option<BTreeMap<String, String>> {
        let load = self.load.as_ref()?;
        let mut total: Option<BTreeMap<String, String>> = None;
        for b in &load.router.brokers {
            let info = AdminConn::connect(b.addr, timeout)
                .ok()?
                .runtime_info(timeout)
                .ok()?;
            match &mut total {
                None => total = Some(info),
                Some(t) => {
                    for (k, v) in info {
                        if !k.starts_with("flowControl") {
                            continue;
                        }
                        let add: u64 = v.trim().parse().unwrap_or(0);
                        let e = t.entry(k).or_insert_with(|| "0".into());
                        let sum = e.trim().parse::<u64>().unwrap_or(0) + add;
                        *e = sum.to_string();
                    }
                }
            }
        }
        total
    }

    /// Stops the started brokers and keeps their stores; a broker that did not exit cleanly,
    /// other than `dead` (killed by a fault and not restarted, cell order), is the reason
    /// returned. Nothing to do with `--namesrv`.
    pub fn stop_brokers(&mut self, grace: Duration, dead: Option<usize>) -> Option<ExitedAtStop> {
        let cell = self.cell.as_mut()?;
        cell.stop_brokers(grace)
            .into_iter()
            .enumerate()
            .find_map(|(i, st)| match st {
                Some(status) if !status.success() && Some(i) != dead => Some(ExitedAtStop {
                    member: format!("broker-{i}"),
                    status,
                }),
                _ => None,
            })
    }

    /// Ends what the job started the quickest way ([`CellCluster::discard`]).
    pub fn discard(mut self, grace: Duration) {
        self.load = None;
        if let Some(cell) = self.cell.take() {
            cell.discard(grace);
        }
    }

    /// Stops what the job started; a broker that did not exit cleanly is the reason returned.
    pub fn stop(mut self, grace: Duration) -> Option<ExitedAtStop> {
        self.load = None;
        let reason = self.stop_brokers(grace, None);
        let cell = self.cell.take()?;
        cell.stop(grace);
        reason
    }
}

impl JobCluster {
    /// Broker 0's master or slave, for `fault.role` (None with `--namesrv` or without slaves).
    pub fn pair_member(&mut self, role: FaultRole) -> Option<&mut Box<dyn Member>> {
        let cell = self.cell_mut()?;
        match role {
            FaultRole::Master => cell.brokers.first_mut(),
            FaultRole::Slave => cell.slaves.first_mut(),
        }
    }
}
