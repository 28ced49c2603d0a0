//! RouteInfoManager (name-server reference §2.5, §3, §4): topic queues, brokers, clusters and
//! broker liveness, all behind one lock as in RocketMQ, so a route never mixes two
//! registrations.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    time::{Duration, Instant},
};

use parking_lot::RwLock;
use remoting::route::{
    BrokerData, ClusterInfo, DataVersion, QueueData, TopicConfigWrapper, TopicRouteData, MASTER_ID,
};
use tokio_util::sync::CancellationToken;

use crate::log::Log;

/// Why a registration was refused (answered SYSTEM_ERROR with this text).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegisterError {
    /// 5.x (#4523): a broker's first registration must carry at least two topics.
    #[error("register broker failed")]
    SingleTopicFirst,
    #[error("register broker failed: {0} broker names registered already (maxBrokers)")]
    TooManyBrokers(usize),
    #[error("register broker failed: {0} topics registered already (maxTopics)")]
    TooManyTopics(usize),
}

/// Who is registering: the header fields and the connection it came on.
#[derive(Debug, Clone)]
pub struct Registration {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_addr: String,
    pub broker_id: i64,
    pub ha_server_addr: String,
    pub heartbeat_timeout: Option<Duration>,
    pub enable_acting_master: Option<bool>,
    /// The connection's id and the token that closes it (expiry closes the channel).
    pub channel: u64,
    pub close: CancellationToken,
}

/// A slave's answer: its master's address and HA address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterResult {
    pub master_addr: Option<String>,
    pub ha_server_addr: Option<String>,
}

struct Live {
    last_update: Instant,
    data_version: DataVersion,
    channel: u64,
    close: CancellationToken,
    ha_server_addr: String,
    timeout: Duration,
}

#[derive(Default)]
struct Tables {
    /// topic → brokerName → queues.
    topic_queue: HashMap<String, BTreeMap<String, QueueData>>,
    /// brokerName → addresses by id.
    broker_addr: BTreeMap<String, BrokerData>,
    /// cluster → broker names.
    cluster_addr: BTreeMap<String, BTreeSet<String>>,
    /// (cluster, brokerAddr) → liveness, as 5.x keys it.
    live: HashMap<(String, String), Live>,
}

/// The route tables.
pub struct RouteInfo {
    // One lock for every table (RocketMQ's ReentrantReadWriteLock): registrations write,
    // route queries read; no critical section awaits or does I/O.
    tables: RwLock<Tables>,
    default_timeout: Duration,
    max_brokers: usize,
    max_topics: usize,
    pub log: std::sync::Arc<Log>,
}

impl RouteInfo {
    pub fn new(default_timeout: Duration, max_brokers: usize, max_topics: usize) -> Self {
        Self::with_log(
            default_timeout,
            max_brokers,
            max_topics,
            Log::stderr().into(),
        )
    }

    pub fn with_log(
        default_timeout: Duration,
        max_brokers: usize,
        max_topics: usize,
        log: std::sync::Arc<Log>,
    ) -> Self {
        RouteInfo {
            tables: RwLock::new(Tables::default()),
            default_timeout,
            max_brokers,
            max_topics,
            log,
        }
    }

    /// `registerBroker` as 5.3 does it (§2.5), without acting-master and static topics.
    pub fn register(
        &self,
        r: Registration,
        topics: Option<&TopicConfigWrapper>,
        now: Instant,
    ) -> Result<RegisterResult, RegisterError> {
        let mut t = self.tables.write();
        let is_new_name = !t.broker_addr.contains_key(&r.broker_name);
        if is_new_name && t.broker_addr.len() >= self.max_brokers {
            return Err(RegisterError::TooManyBrokers(t.broker_addr.len()));
        }
        let id_known = t
            .broker_addr
            .get(&r.broker_name)
            .is_some_and(|b| b.broker_addrs.contains_key(&r.broker_id));
        if !id_known && topics.is_some_and(|w| w.topic_config_table.len() == 1) {
            return Err(RegisterError::SingleTopicFirst);
        }
        if let Some(w) = topics {
            let new_topics = w
                .topic_config_table
                .keys()
                .filter(|k| !t.topic_queue.contains_key(*k))
                .count();
            if t.topic_queue.len() + new_topics > self.max_topics {
                return Err(RegisterError::TooManyTopics(t.topic_queue.len()));
            }
        }
        t.cluster_addr
            .entry(r.cluster_name.clone())
            .or_default()
            .insert(r.broker_name.clone());
        let data = t
            .broker_addr
            .entry(r.broker_name.clone())
            .or_insert_with(|| BrokerData {
                broker_addrs: BTreeMap::new(),
                broker_name: r.broker_name.clone(),
                cluster: r.cluster_name.clone(),
                enable_acting_master: Some(false),
                zone_name: None,
            });
        data.enable_acting_master = Some(r.enable_acting_master.unwrap_or(false));
        // Since 4.5.1: the same address under another id is a slave that became master.
        data.broker_addrs
            .retain(|id, addr| *id == r.broker_id || *addr != r.broker_addr);
        let old = data.broker_addrs.insert(r.broker_id, r.broker_addr.clone());
        let register_first = old.is_none();
        let version = topics.map(|w| w.data_version).unwrap_or_default();
        let key = (r.cluster_name.clone(), r.broker_addr.clone());
        if r.broker_id == MASTER_ID {
            if let Some(w) = topics {
                let changed = t.live.get(&key).is_none_or(|l| l.data_version != version);
                for (name, tc) in &w.topic_config_table {
                    let per_broker = t.topic_queue.entry(name.clone()).or_default();
                    if register_first || changed || !per_broker.contains_key(&r.broker_name) {
                        per_broker.insert(
                            r.broker_name.clone(),
                            QueueData {
                                broker_name: r.broker_name.clone(),
                                perm: tc.perm,
                                read_queue_nums: tc.read_queue_nums,
                                topic_sys_flag: tc.topic_sys_flag,
                                write_queue_nums: tc.write_queue_nums,
                            },
                        );
                    }
                }
            }
        }
        let previous = t.live.insert(
            key,
            Live {
                last_update: now,
                data_version: version,
                channel: r.channel,
                close: r.close,
                ha_server_addr: r.ha_server_addr,
                timeout: r.heartbeat_timeout.unwrap_or(self.default_timeout),
            },
        );
        if previous.is_none() {
            self.log.line(format_args!(
                "new broker registered, {} {} id {} (cluster {})",
                r.broker_name, r.broker_addr, r.broker_id, r.cluster_name
            ));
        }
        let mut result = RegisterResult::default();
        if r.broker_id != MASTER_ID {
            let master = t
                .broker_addr
                .get(&r.broker_name)
                .and_then(|b| b.master_addr().map(str::to_owned));
            if let Some(m) = master {
                if let Some(l) = t.live.get(&(r.cluster_name.clone(), m.clone())) {
                    result.ha_server_addr = Some(l.ha_server_addr.clone());
                    result.master_addr = Some(m);
                }
            }
        }
        Ok(result)
    }

    /// UNREGISTER_BROKER (§3): the address leaves its broker; an emptied broker leaves its
    /// cluster and every topic.
    pub fn unregister(&self, cluster: &str, broker_name: &str, broker_addr: &str) {
        let mut t = self.tables.write();
        remove_broker(&self.log, &mut t, cluster, broker_name, broker_addr);
    }

    /// The liveness scan (§4): removes brokers silent for longer than their timeout, closes
    /// their connections, and returns `(addr, timeout)` of each.
    pub fn scan_not_active(&self, now: Instant) -> Vec<(String, Duration)> {
        let mut t = self.tables.write();
        let expired: Vec<(String, String, Duration)> = t
            .live
            .iter()
            .filter(|(_, l)| l.last_update + l.timeout < now)
            .map(|((c, a), l)| (c.clone(), a.clone(), l.timeout))
            .collect();
        for (cluster, addr, _) in &expired {
            if let Some(l) = t.live.get(&(cluster.clone(), addr.clone())) {
                l.close.cancel();
            }
            let name = broker_name_of(&t, addr);
            match name {
                Some(name) => remove_broker(&self.log, &mut t, cluster, &name, addr),
                None => {
                    t.live.remove(&(cluster.clone(), addr.clone()));
                }
            }
        }
        expired.into_iter().map(|(_, a, d)| (a, d)).collect()
    }

    /// BrokerHousekeepingService.onChannelClose (5.3): only brokers whose live entry came on
    /// this connection are removed; producer connections change nothing.
    pub fn channel_closed(&self, channel: u64) -> Vec<String> {
        let mut t = self.tables.write();
        let gone: Vec<(String, String)> = t
            .live
            .iter()
            .filter(|(_, l)| l.channel == channel)
            .map(|(k, _)| k.clone())
            .collect();
        for (cluster, addr) in &gone {
            match broker_name_of(&t, addr) {
                Some(name) => remove_broker(&self.log, &mut t, cluster, &name, addr),
                None => {
                    t.live.remove(&(cluster.clone(), addr.clone()));
                }
            }
        }
        gone.into_iter().map(|(_, a)| a).collect()
    }

    /// `pickupTopicRouteData` (§4): `None` unless the topic has queues on a known broker.
    pub fn route(&self, topic: &str) -> Option<TopicRouteData> {
        let t = self.tables.read();
        let per_broker = t.topic_queue.get(topic)?;
        let queue_datas: Vec<QueueData> = per_broker.values().cloned().collect();
        let broker_datas: Vec<BrokerData> = per_broker
            .keys()
            .filter_map(|name| t.broker_addr.get(name).cloned())
            .collect();
        if queue_datas.is_empty() || broker_datas.is_empty() {
            return None;
        }
        Some(TopicRouteData {
            broker_datas,
            filter_server_table: BTreeMap::new(),
            order_topic_conf: None,
            queue_datas,
        })
    }

    pub fn cluster_info(&self) -> ClusterInfo {
        let t = self.tables.read();
        ClusterInfo {
            broker_addr_table: t.broker_addr.clone(),
            cluster_addr_table: t.cluster_addr.clone(),
        }
    }

    /// Live broker addresses (tests and the log).
    pub fn live_count(&self) -> usize {
        self.tables.read().live.len()
    }
}

fn broker_name_of(t: &Tables, addr: &str) -> Option<String> {
    t.broker_addr
        .values()
        .find(|b| b.broker_addrs.values().any(|a| a == addr))
        .map(|b| b.broker_name.clone())
}

fn remove_broker(log: &Log, t: &mut Tables, cluster: &str, broker_name: &str, broker_addr: &str) {
    t.live.remove(&(cluster.to_owned(), broker_addr.to_owned()));
    let emptied = match t.broker_addr.get_mut(broker_name) {
        Some(b) => {
            // 5.3 removes by value: an id re-used by another address stays.
            b.broker_addrs.retain(|_, a| a != broker_addr);
            b.broker_addrs.is_empty()
        }
        None => false,
    };
    if !emptied {
        return;
    }
    t.broker_addr.remove(broker_name);
    log.line(format_args!(
        "broker {broker_name} ({broker_addr}) removed: no address left"
    ));
    if let Some(names) = t.cluster_addr.get_mut(cluster) {
        names.remove(broker_name);
        if names.is_empty() {
            t.cluster_addr.remove(cluster);
        }
    }
    t.topic_queue.retain(|_, per_broker| {
        per_broker.remove(broker_name);
        !per_broker.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::route::TopicConfigData;

    fn reg(name: &str, addr: &str, id: i64, channel: u64) -> Registration {
        Registration {
            cluster_name: "c".into(),
            broker_name: name.into(),
            broker_addr: addr.into(),
            broker_id: id,
            ha_server_addr: format!("{addr}-ha"),
            heartbeat_timeout: None,
            enable_acting_master: None,
            channel,
            close: CancellationToken::new(),
        }
    }

    fn topics(names: &[&str], counter: i64) -> TopicConfigWrapper {
        TopicConfigWrapper {
            data_version: DataVersion {
                counter,
                state_version: None,
                timestamp: 1,
            },
            topic_config_table: names
                .iter()
                .map(|n| {
                    (
                        n.to_string(),
                        TopicConfigData {
                            topic_name: n.to_string(),
                            read_queue_nums: 4,
                            write_queue_nums: 4,
                            ..Default::default()
                        },
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn routes_follow_registrations_expiry_and_closes() {
        let ri = RouteInfo::new(Duration::from_secs(120), 10, 100);
        let t0 = Instant::now();
        ri.register(
            reg("a", "h:1", 0, 1),
            Some(&topics(&["T", "TBW102"], 1)),
            t0,
        )
        .unwrap();
        ri.register(reg("b", "h:2", 0, 2), Some(&topics(&["T", "U"], 1)), t0)
            .unwrap();
        let r = ri.route("T").unwrap();
        assert_eq!(r.queue_datas.len(), 2);
        assert_eq!(r.broker_datas[1].master_addr(), Some("h:2"));
        // A slave learns its master.
        let s = ri.register(reg("a", "h:3", 1, 3), None, t0).unwrap();
        assert_eq!(s.master_addr.as_deref(), Some("h:1"));
        assert_eq!(s.ha_server_addr.as_deref(), Some("h:1-ha"));
        // b goes silent past 120 s; a re-registered in time.
        let later = t0 + Duration::from_secs(121);
        ri.register(
            reg("a", "h:1", 0, 1),
            Some(&topics(&["T", "TBW102"], 1)),
            later,
        )
        .unwrap();
        ri.register(reg("a", "h:3", 1, 3), None, later).unwrap();
        let gone = ri.scan_not_active(later);
        assert_eq!(gone, vec![("h:2".to_string(), Duration::from_secs(120))]);
        assert!(ri.route("U").is_none());
        assert_eq!(ri.route("T").unwrap().queue_datas.len(), 1);
        // The slave's connection closes: only it goes.
        assert_eq!(ri.channel_closed(3), vec!["h:3".to_string()]);
        assert_eq!(
            ri.cluster_info().broker_addr_table["a"].broker_addrs.len(),
            1
        );
        ri.unregister("c", "a", "h:1");
        assert!(ri.route("T").is_none());
        assert!(ri.cluster_info().cluster_addr_table.is_empty());
    }

    #[test]
    fn first_single_topic_registration_and_bounds_are_refused() {
        let ri = RouteInfo::new(Duration::from_secs(120), 1, 3);
        let t0 = Instant::now();
        assert_eq!(
            ri.register(reg("a", "h:1", 0, 1), Some(&topics(&["T"], 1)), t0),
            Err(RegisterError::SingleTopicFirst)
        );
        assert_eq!(
            ri.register(
                reg("a", "h:1", 0, 1),
                Some(&topics(&["A", "B", "C", "D"], 1)),
                t0
            ),
            Err(RegisterError::TooManyTopics(0))
        );
        ri.register(reg("a", "h:1", 0, 1), Some(&topics(&["A", "B"], 1)), t0)
            .unwrap();
        assert_eq!(
            ri.register(reg("b", "h:2", 0, 2), Some(&topics(&["A", "B"], 1)), t0),
            Err(RegisterError::TooManyBrokers(1))
        );
    }
}
