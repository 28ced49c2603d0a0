//! `[cluster] slaves = 1`: each broker of a cell gets a slave (issue 26). The slave's broker.conf
//! is its master's (the cell's keys, the master's per-broker keys, the same `brokerName` and name
//! server) with `brokerRole = SLAVE`, `brokerId = 1`, the master's bound HA address as
//! `haMasterAddress`, its own ephemeral ports and its own store. Before the load the harness waits
//! until every master's runtime info shows a slave connected and reporting
//! (`haSlaveConnections` ≥ 1 and `haSlaveRequestOffset` ≥ 0), or, for a kind that tells it
//! another way (Apache's store log, [`Member::slave_reported`]), that way: a SYNC_MASTER answers
//! 11 before that, and a 4.x slave's first report comes `haSendHeartbeatInterval` (5 s) after
//! it connects.
//! With `--namesrv` the slaves are the route's `brokerAddrs` with an id above 0.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use remoting::route::TopicRouteData;

use super::cell::CellCluster;
use super::error::ClusterError;
use super::router::Router;
use crate::kind::{BrokerKind, Member, MemberSpec};
use rmq_client::admin::{AdminConn, ClientError};
use rmq_client::name_server::fetch_route;

/// The slave's `brokerId` (RocketMQ: any id above 0 is a slave; the route lists it under it).
pub const SLAVE_ID: &str = "1";

/// How long the harness waits for a slave to connect and make its first report.
pub const CONNECT_WAIT: Duration = Duration::from_secs(30);

/// The roles a master may be given in a profile with slaves.
const MASTER_ROLES: [&str; 2] = ["ASYNC_MASTER", "SYNC_MASTER"];

/// Why a master's configuration cannot have a slave, if it cannot.
pub fn master_problem(master: &BTreeMap<String, String>) -> Option<String> {
    let role = master
        .get("brokerRole")
        .map_or("ASYNC_MASTER", |r| r.trim());
    (!MASTER_ROLES.contains(&role)).then(|| {
        format!(
            "brokerRole = {role} with [cluster] slaves = 1: the harness starts the slaves itself; give the masters ASYNC_MASTER or SYNC_MASTER"
        )
    })
}

/// The slave's broker.conf: its master's, made a slave of `master_ha` on `store`.
pub fn slave_conf(
    master: &BTreeMap<String, String>,
    master_ha: SocketAddr,
    store: &Path,
) -> BTreeMap<String, String> {
    let mut conf = master.clone();
    conf.insert("brokerRole".into(), "SLAVE".into());
    conf.insert("brokerId".into(), SLAVE_ID.into());
    conf.insert("haMasterAddress".into(), master_ha.to_string());
    conf.insert("listenPort".into(), "0".into());
    // With listenPort = 0 the HA port is this value, 0 = ephemeral: two brokers on one host.
    conf.insert("haListenPort".into(), "0".into());
    conf.insert("storePathRootDir".into(), store.display().to_string());
    conf
}

/// A started slave and the broker.conf it runs with.
pub type StartedSlave = (Box<dyn Member>, BTreeMap<String, String>);

/// Starts broker `index`'s slave next to `master` (its conf `master_conf`), files in `job_dir`.
pub fn start_slave(
    kind: &dyn BrokerKind,
    master_conf: &BTreeMap<String, String>,
    master: &dyn Member,
    index: usize,
    job_dir: &Path,
    cpus: Option<&[usize]>,
) -> Result<StartedSlave, ClusterError> {
    let ha = master
        .ha_addr(Duration::from_secs(2))
        .ok_or(ClusterError::NotReplicating { broker: index })?;
    let store = job_dir.join(format!("store-{index}-slave"));
    let conf = slave_conf(master_conf, ha, &store);
    let stem = format!("broker-{index}-slave");
    let spec = MemberSpec::new(&stem, job_dir, &conf).pinned(cpus);
    let p = kind
        .start_broker(&spec)
        .map_err(|source| ClusterError::Slave {
            member: stem.clone(),
            source,
        })?;
    Ok((p, conf))
}

/// Waits until `master` reports a connected slave that has made its first report.
pub fn wait_connected(master: SocketAddr, wait: Duration) -> Result<(), String> {
    let end = Instant::now() + wait;
    loop {
        let last;
        match AdminConn::connect(master, Duration::from_secs(1))
            .and_then(|mut c| c.runtime_info(Duration::from_secs(1)))
        {
            Ok(info) => {
                let n = |k: &str| info.get(k).and_then(|v| v.trim().parse::<i64>().ok());
                match (n("haSlaveConnections"), n("haSlaveRequestOffset")) {
                    (Some(c), Some(o)) if c >= 1 && o >= 0 => return Ok(()),
                    (None, _) => {
                        return Err(format!(
                            "master {master} reports no haSlaveConnections: it does not replicate"
                        ))
                    }
                    (c, o) => {
                        last = format!(
                            "haSlaveConnections {}, haSlaveRequestOffset {}",
                            c.unwrap_or(0),
                            o.unwrap_or(-1)
                        )
                    }
                }
            }
            Err(e) => last = e.to_string(),
        }
        if Instant::now() >= end {
            return Err(format!(
                "no slave connected to master {master} within {wait:?} ({last})"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `master` says, its own way ([`Member::slave_reported`]), that a slave made its
/// first report; the runtime info's keys when it has no other way.
pub fn wait_reported(master: &dyn Member, wait: Duration) -> Result<(), String> {
    if master.slave_reported().is_none() {
        return wait_connected(master.addr(), wait);
    }
    let end = Instant::now() + wait;
    while master.slave_reported() != Some(true) {
        if Instant::now() >= end {
            return Err(format!(
                "no slave of master {} made its first offset report within {wait:?} (its store log has no `slave[..] request offset` line)",
                master.addr()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// The slaves of a route (`brokerAddrs` ids above 0), by broker name: how a cluster behind
/// `--namesrv` shows its pairs.
pub fn slaves_of(route: &TopicRouteData) -> BTreeMap<String, Vec<String>> {
    route
        .broker_datas
        .iter()
        .map(|b| {
            let slaves = b
                .broker_addrs
                .iter()
                .filter(|(id, _)| **id > 0)
                .map(|(_, a)| a.clone())
                .collect();
            (b.broker_name.clone(), slaves)
        })
        .collect()
}

/// `[cluster] slaves = 1` before a load, for the harness's own cluster and a `--namesrv` one
/// alike: every broker of `router` has a slave in the topic's route and, with `ask_masters`
/// (a `--namesrv` cluster: the harness's own waited for its slaves when it started them, each
/// kind its own way), its master's runtime info reports that slave connected. Returns each
/// broker's slave addresses, by name.
pub fn ready(
    namesrv: SocketAddr,
    topic: &str,
    router: &Router,
    wait: Duration,
    ask_masters: bool,
) -> Result<BTreeMap<String, Vec<String>>, ClusterError> {
    let end = Instant::now() + wait;
    let slaves = loop {
        let route = fetch_route(namesrv, topic)?;
        let slaves = route.as_ref().map(slaves_of).unwrap_or_default();
        let missing = router
            .brokers
            .iter()
            .find(|b| slaves.get(&b.name).is_none_or(Vec::is_empty));
        match missing {
            None => break slaves,
            Some(b) if Instant::now() >= end => {
                return Err(ClusterError::NoSlaveInRoute {
                    topic: topic.to_owned(),
                    namesrv,
                    broker: b.name.clone(),
                    wait,
                })
            }
            Some(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    for b in router.brokers.iter().filter(|_| ask_masters) {
        let left = end.saturating_duration_since(Instant::now());
        wait_connected(b.addr, left.max(Duration::from_secs(1))).map_err(|reason| {
            ClusterError::SlaveNotConnected {
                member: b.name.clone(),
                reason,
            }
        })?;
    }
    Ok(slaves)
}

/// The topic on every slave too, as `SlaveSynchronize.syncTopicConfig` copies it from the
/// master (3 s after a slave starts, then every 10 s; not modelled by the broker): a slave
/// answers a consumer's pull only for a topic it has (else 17 TOPIC_NOT_EXIST), which it must
/// when its master is gone. Apache's slaves refuse the request (code 1, `Can't modify topic or
/// subscription group from slave broker`: AdminBrokerProcessor.validateSlave, 4.9.7
/// :1665-1673, 5.3.3 :3302-3310) and copy the topic themselves; that answer is no error.
pub fn create_topic(
    slaves: &BTreeMap<String, Vec<String>>,
    w: &harness_model::profile::Workload,
) -> Result<(), ClusterError> {
    for (name, addrs) in slaves {
        for addr in addrs {
            let sock: SocketAddr = addr.parse().map_err(|source| ClusterError::SlaveAddress {
                broker: name.clone(),
                addr: addr.clone(),
                source,
            })?;
            AdminConn::connect(sock, Duration::from_secs(2))
                .and_then(|mut a| a.create_topic(&w.topic, w.queues, Duration::from_secs(5)))
                .or_else(|e| if syncs_its_topics(&e) { Ok(()) } else { Err(e) })
                .map_err(|source| ClusterError::SlaveCreateTopic {
                    topic: w.topic.clone(),
                    broker: name.clone(),
                    addr: addr.clone(),
                    source: Box::new(source),
                })?;
        }
    }
    Ok(())
}

/// A slave's refusal to create a topic because it copies its master's (RocketMQ's own slaves).
fn syncs_its_topics(e: &ClientError) -> bool {
    matches!(e, ClientError::Refused { code: 1, remark } if remark.contains("from slave broker"))
}

impl CellCluster {
    /// Starts broker `i`'s slave (the broker was just started, its conf is `confs[i]`).
    pub(super) fn start_slave(
        &mut self,
        kind: &dyn BrokerKind,
        i: usize,
        job_dir: &Path,
        cpus: Option<&[usize]>,
    ) -> Result<(), ClusterError> {
        if let Some(why) = master_problem(&self.confs[i]) {
            return Err(ClusterError::NotAMaster { broker: i, why });
        }
        let (p, conf) = start_slave(
            kind,
            &self.confs[i],
            self.brokers[i].as_ref(),
            i,
            job_dir,
            cpus,
        )?;
        self.slave_stores
            .push(job_dir.join(format!("store-{i}-slave")));
        self.slaves.push(p);
        self.slave_confs.push(conf);
        Ok(())
    }

    /// Waits until every master has its slave connected and reporting.
    pub(super) fn wait_slaves_connected(&self) -> Result<(), ClusterError> {
        let end = Instant::now() + CONNECT_WAIT;
        for (i, b) in self.brokers.iter().enumerate() {
            let left = end.saturating_duration_since(Instant::now());
            wait_reported(b.as_ref(), left).map_err(|reason| ClusterError::SlaveNotConnected {
                member: format!("broker-{i}"),
                reason,
            })?;
        }
        Ok(())
    }

    /// The first slave that exited, if any.
    pub fn slave_exited(&mut self) -> Option<(usize, std::process::ExitStatus)> {
        self.slaves
            .iter_mut()
            .enumerate()
            .find_map(|(i, b)| b.exited().map(|s| (i, s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slave_is_its_master_with_role_id_address_and_store() {
        let master: BTreeMap<String, String> = [
            ("brokerRole", "SYNC_MASTER"),
            ("brokerName", "broker-0"),
            ("namesrvAddr", "127.0.0.1:9876"),
            ("flushDiskType", "SYNC_FLUSH"),
            ("storePathRootDir", "/tmp/j/store-0"),
            ("listenPort", "0"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let ha: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        let s = slave_conf(&master, ha, Path::new("/tmp/j/store-0-slave"));
        assert_eq!(s["brokerRole"], "SLAVE");
        assert_eq!(s["brokerId"], "1");
        assert_eq!(s["haMasterAddress"], "127.0.0.1:40001");
        assert_eq!(s["storePathRootDir"], "/tmp/j/store-0-slave");
        assert_eq!(s["haListenPort"], "0");
        // The pair shares its name, name server and store settings.
        for k in ["brokerName", "namesrvAddr", "flushDiskType"] {
            assert_eq!(s[k], master[k], "{k}");
        }
        assert_eq!(master_problem(&master), None);
        let mut slave_role = master.clone();
        slave_role.insert("brokerRole".into(), "SLAVE".into());
        assert!(master_problem(&slave_role)
            .unwrap()
            .contains("give the masters ASYNC_MASTER or SYNC_MASTER"));
        assert_eq!(master_problem(&BTreeMap::new()), None);
    }

    #[test]
    fn only_a_slave_s_own_refusal_to_create_a_topic_is_no_error() {
        let refused = |code, remark: &str| ClientError::Refused {
            code,
            remark: remark.into(),
        };
        assert!(syncs_its_topics(&refused(
            1,
            "Can't modify topic or subscription group from slave broker, please execute it from master broker."
        )));
        assert!(!syncs_its_topics(&refused(1, "create topic failed")));
        assert!(!syncs_its_topics(&refused(17, "from slave broker")));
    }

    #[test]
    fn route_slaves_are_the_ids_above_zero() {
        let json = r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"},"brokerName":"broker-0","cluster":"c"},{"brokerAddrs":{"0":"127.0.0.1:10931"},"brokerName":"broker-1","cluster":"c"}],"queueDatas":[]}"#;
        let route = TopicRouteData::decode(json.as_bytes()).unwrap();
        let s = slaves_of(&route);
        assert_eq!(s["broker-0"], vec!["127.0.0.1:10921".to_string()]);
        assert!(s["broker-1"].is_empty());
    }
}
