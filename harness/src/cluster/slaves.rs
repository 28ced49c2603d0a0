//! `[cluster] slaves = 1`: each broker of a cell gets a slave (issue 26). The slave's broker.conf
//! is its master's (the cell's keys, the master's per-broker keys, the same `brokerName` and name
//! server) with `brokerRole = SLAVE`, `brokerId = 1`, the master's bound HA address as
//! `haMasterAddress`, its own ephemeral ports and its own store. Before the load the harness waits
//! until every master's runtime info shows a slave connected and reporting
//! (`haSlaveConnections` ≥ 1 and `haSlaveRequestOffset` ≥ 0): a SYNC_MASTER answers 11 before
//! that, and a 4.x slave's first report comes `haSendHeartbeatInterval` (5 s) after it connects.
//! With `--namesrv` the slaves are the route's `brokerAddrs` with an id above 0.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use remoting::route::TopicRouteData;

use crate::broker::{self, BrokerProcess};
use crate::runner::client::AdminConn;

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

/// Starts broker `index`'s slave next to `master` (its conf `master_conf`), files in `job_dir`.
pub fn start_slave(
    bin: &Path,
    master_conf: &BTreeMap<String, String>,
    master: &BrokerProcess,
    index: usize,
    job_dir: &Path,
    cpus: Option<&[usize]>,
) -> Result<(BrokerProcess, BTreeMap<String, String>), String> {
    let ha = master.ha_addr(Duration::from_secs(2)).ok_or_else(|| {
        format!("broker-{index}: no `ha listening on` line: this broker does not replicate")
    })?;
    let store = job_dir.join(format!("store-{index}-slave"));
    let conf = slave_conf(master_conf, ha, &store);
    let conf_path = job_dir.join(format!("broker-{index}-slave.conf"));
    let log = job_dir.join(format!("broker-{index}-slave.log"));
    broker::write_conf(&conf_path, &conf)
        .map_err(|e| format!("writing {}: {e}", conf_path.display()))?;
    let p = BrokerProcess::start(bin, &conf_path, &log, cpus, Duration::from_secs(20))
        .map_err(|e| format!("broker-{index}-slave: {e}; see broker-{index}-slave.log"))?;
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
    fn route_slaves_are_the_ids_above_zero() {
        let json = r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"},"brokerName":"broker-0","cluster":"c"},{"brokerAddrs":{"0":"127.0.0.1:10931"},"brokerName":"broker-1","cluster":"c"}],"queueDatas":[]}"#;
        let route = TopicRouteData::decode(json.as_bytes()).unwrap();
        let s = slaves_of(&route);
        assert_eq!(s["broker-0"], vec!["127.0.0.1:10921".to_string()]);
        assert!(s["broker-1"].is_empty());
    }
}
