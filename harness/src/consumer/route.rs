//! Where the consumers' queues are (consumer §8.6, name-server reference §9): one broker, or
//! the topic's route read from a name server and refreshed every `poll_name_server_interval`
//! (`pollNameServerInterval`, 30 s), as `updateTopicRouteInfoFromNameServer` does.
//!
//! A message queue is `(brokerName, queueId)` of the run's topic, ordered as Java's
//! `MessageQueue.compareTo` (topic, then brokerName, then queueId; the topic is the same for
//! all). The subscribe set is `topicRouteData2TopicSubscribeInfo`: `readQueueNums` queues of
//! every readable queue data. A broker the route no longer lists (killed: the name server
//! drops it when its channel closes) loses its queues at the next rebalance, and gets them
//! back when it registers again.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use remoting::route::{TopicRouteData, PERM_READ};
use tokio_util::sync::CancellationToken;

use crate::consumer::start_error::RouteError;
use harness_model::profile::ClientVersion;
use rmq_client::name_server::fetch_route;

/// The broker name of a run on one broker (no name server): the name in MessageQueue bodies
/// (locks), where equality is all the broker needs.
pub const BROKER_NAME: &str = "broker-under-test";

/// What the consumers connect to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// One broker: a route of one broker, `queues` read queues, never refreshed.
    Broker(SocketAddr),
    /// A cluster: the topic's route from this name server.
    NameServer(SocketAddr),
}

/// One message queue of the run's topic.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mq {
    pub broker: Arc<str>,
    pub queue_id: i32,
}

impl Mq {
    pub fn new(broker: &str, queue_id: i32) -> Mq {
        Mq {
            broker: broker.into(),
            queue_id,
        }
    }
}

/// `%RETRY%<group>` (`MixAll.getRetryTopic`).
pub fn retry_topic(group: &str) -> String {
    format!("%RETRY%{group}")
}

/// A subscription of the consumer (`RebalanceImpl.subscriptionInner`): the run's topic, and
/// `%RETRY%<group>`, which `DefaultMQPushConsumerImpl.copySubscription` adds for every
/// CLUSTERING push consumer, orderly included. `doRebalance` rebalances each in turn, and the
/// process queue table holds both topics' queues: a queue is `(Sub, Mq)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sub {
    Topic,
    Retry,
}

impl Sub {
    /// Both, in the order `doRebalance` takes them here.
    pub const ALL: [Sub; 2] = [Sub::Topic, Sub::Retry];
}

/// `MixAll.MASTER_ID`.
pub const MASTER_ID: i64 = 0;

/// One broker name of the route, its addresses and its read queues of the topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteBroker {
    pub name: Arc<str>,
    /// Where calls for the broker name go: `findBrokerAddressInSubscribe(name, MASTER_ID,
    /// false)`, the master, else (master gone from the route) another address of the name.
    pub addr: SocketAddr,
    /// Every address of the name by `brokerId` (`brokerAddrs`: 0 the master, > 0 slaves).
    pub addrs: BTreeMap<i64, SocketAddr>,
    pub read_queues: u32,
}

/// `MQClientInstance.findBrokerAddressInSubscribe(name, id, onlyThisBroker)` over one name's
/// addresses: `id`'s address, else for a slave id the next id's (4.9 and 5.3 clients: the
/// `brokerId + 1` step came in 4.8.0, commit d5cb67ff80; 4.3.2 l.1014-1042 has none), else
/// (unless `only_this`) the first address of the name. The id found comes with it (> 0: a
/// slave).
pub fn find_in_subscribe(
    addrs: &BTreeMap<i64, SocketAddr>,
    id: i64,
    only_this: bool,
    client: ClientVersion,
) -> Option<(i64, SocketAddr)> {
    if let Some(a) = addrs.get(&id) {
        return Some((id, *a));
    }
    if id != MASTER_ID && client != ClientVersion::V43 {
        if let Some(a) = addrs.get(&(id + 1)) {
            return Some((id + 1, *a));
        }
    }
    if only_this {
        return None;
    }
    addrs.iter().next().map(|(i, a)| (*i, *a))
}

/// The current route, shared by every task of the run.
pub struct Route {
    pub target: Target,
    brokers: RwLock<Vec<RouteBroker>>,
}

impl Route {
    /// The first route: one broker, or what the name server answers now.
    pub async fn start(target: Target, topic: &str, queues: u32) -> Result<Route, RouteError> {
        let brokers = match target {
            Target::Broker(addr) => vec![RouteBroker {
                name: BROKER_NAME.into(),
                addr,
                addrs: BTreeMap::from([(MASTER_ID, addr)]),
                read_queues: queues,
            }],
            Target::NameServer(ns) => match read_route(ns, topic).await? {
                Some(b) if !b.is_empty() => b,
                _ => {
                    return Err(RouteError::NoRoute {
                        namesrv: ns,
                        topic: topic.to_owned(),
                    })
                }
            },
        };
        Ok(Route {
            target,
            brokers: RwLock::new(brokers),
        })
    }

    /// The brokers, sorted by name.
    pub fn brokers(&self) -> Vec<RouteBroker> {
        self.brokers.read().clone()
    }

    /// Every address of `broker` by id (empty when the route no longer lists it).
    pub fn addrs_of(&self, broker: &str) -> BTreeMap<i64, SocketAddr> {
        self.brokers
            .read()
            .iter()
            .find(|b| &*b.name == broker)
            .map(|b| b.addrs.clone())
            .unwrap_or_default()
    }

    /// Every queue of the topic, sorted as Java sorts `MessageQueue`.
    pub fn queues(&self) -> Vec<Mq> {
        queues_of(&self.brokers.read())
    }

    /// The queues of `sub`. The retry topic's are `retryQueueNums` (1) on every broker of the
    /// route, `(brokerName, 0)`: each broker made the topic when the group's heartbeat reached
    /// it (retention-retry reference B5).
    pub fn sub_queues(&self, sub: Sub) -> Vec<Mq> {
        match sub {
            Sub::Topic => self.queues(),
            Sub::Retry => {
                let brokers = self.brokers.read();
                let mut out: Vec<Mq> = brokers
                    .iter()
                    .map(|b| Mq {
                        broker: b.name.clone(),
                        queue_id: 0,
                    })
                    .collect();
                out.sort();
                out
            }
        }
    }

    /// Replaces the brokers; true when they changed.
    fn set(&self, brokers: Vec<RouteBroker>) -> bool {
        let mut current = self.brokers.write();
        if *current == brokers {
            return false;
        }
        *current = brokers;
        true
    }
}

/// Every queue of `brokers`, sorted as Java sorts `MessageQueue`.
pub fn queues_of(brokers: &[RouteBroker]) -> Vec<Mq> {
    let mut out: Vec<Mq> = brokers
        .iter()
        .flat_map(|b| {
            (0..b.read_queues as i32).map(|q| Mq {
                broker: b.name.clone(),
                queue_id: q,
            })
        })
        .collect();
    out.sort();
    out
}

/// The broker names of a route with their addresses and read queues
/// (`topicRouteData2TopicSubscribeInfo`), sorted by broker name. A name whose master is gone
/// keeps its queues while a slave is listed: the consumer reads them from the slave.
pub fn subscribe_brokers(route: &TopicRouteData) -> Vec<RouteBroker> {
    let mut out: Vec<RouteBroker> = route
        .queue_datas
        .iter()
        .filter(|q| q.perm & PERM_READ == PERM_READ)
        .filter_map(|q| {
            let b = route
                .broker_datas
                .iter()
                .find(|b| b.broker_name == q.broker_name)?;
            let addrs: BTreeMap<i64, SocketAddr> = b
                .broker_addrs
                .iter()
                .filter_map(|(id, a)| Some((*id, a.to_socket_addrs().ok()?.next()?)))
                .collect();
            // The master's id: no version takes the id + 1 step for it.
            let (_, addr) = find_in_subscribe(&addrs, MASTER_ID, false, ClientVersion::V49)?;
            Some(RouteBroker {
                name: q.broker_name.as_str().into(),
                addr,
                addrs,
                read_queues: q.read_queue_nums.max(0) as u32,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.dedup_by(|a, b| a.name == b.name);
    out
}

/// GET_ROUTEINFO_BY_TOPIC off the runtime (the name-server call blocks); `Ok(None)` when the
/// topic has no route.
async fn read_route(ns: SocketAddr, topic: &str) -> Result<Option<Vec<RouteBroker>>, RouteError> {
    let topic = topic.to_owned();
    let route = tokio::task::spawn_blocking(move || fetch_route(ns, &topic))
        .await
        .map_err(|e| RouteError::Lookup(e.to_string()))??;
    Ok(route.map(|r| subscribe_brokers(&r)))
}

/// `pollNameServerInterval`: re-reads the route every `period` until `cancel`; an error or an
/// empty answer keeps the old route, as the client does. `log(level, text)` notes changes and
/// errors; `changed` runs after the route changed (it wakes every instance's rebalance).
pub async fn refresh_loop(
    route: &Route,
    topic: &str,
    period: Duration,
    cancel: &CancellationToken,
    log: impl Fn(&str, &str),
    changed: impl Fn(),
) {
    let Target::NameServer(ns) = route.target else {
        return;
    };
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(period) => {}
        }
        let brokers = match read_route(ns, topic).await {
            Ok(Some(b)) if !b.is_empty() => b,
            Ok(_) => continue,
            Err(e) => {
                log(
                    "WARN",
                    &format!("updateTopicRouteInfoFromNameServer Exception: {e}"),
                );
                continue;
            }
        };
        let names: Vec<&str> = brokers.iter().map(|b| &*b.name).collect();
        let text = format!("the topic route changed: brokers {names:?}");
        if route.set(brokers) {
            log("INFO", &text);
            changed();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use name_server::{NamesrvConfig, RunningNameServer};
    use remoting::headers::RegisterBrokerRequestHeader;
    use remoting::route::{body_crc32, RegisterBrokerBody, TopicConfigData};
    use remoting::{RemotingCommand, RequestCode};
    use rmq_client::admin::AdminConn;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Instant;

    const WAIT: Duration = Duration::from_secs(3);

    /// Registers `name` (master at `port`) with 4 queues of topic T (and TBW102); the broker stays
    /// registered while the returned connection is open.
    fn register(ns: SocketAddr, name: &str, port: u16) -> AdminConn {
        let mut body = RegisterBrokerBody::default();
        let w = &mut body.topic_config_serialize_wrapper;
        w.data_version.counter = 1;
        // A first registration carries at least two topics (5.x, #4523).
        for (topic, queues) in [("T", 4), ("TBW102", 8)] {
            w.topic_config_table.insert(
                topic.into(),
                TopicConfigData {
                    topic_name: topic.into(),
                    read_queue_nums: queues,
                    write_queue_nums: queues,
                    ..Default::default()
                },
            );
        }
        let body = body.encode();
        let mut c = AdminConn::connect(ns, WAIT).unwrap();
        let header = RegisterBrokerRequestHeader {
            broker_name: name.into(),
            broker_addr: format!("127.0.0.1:{port}"),
            cluster_name: "c".into(),
            ha_server_addr: format!("127.0.0.1:{}", port + 1),
            broker_id: 0,
            body_crc32: Some(body_crc32(&body)),
            ..Default::default()
        };
        let cmd = RemotingCommand::request(RequestCode::REGISTER_BROKER, 0)
            .with_header(&header)
            .with_body(body);
        let answer = c.call(cmd, WAIT).unwrap();
        assert_eq!(answer.code, 0, "{answer:?}");
        c
    }

    fn names(route: &Route) -> Vec<String> {
        let mut n: Vec<String> = route
            .queues()
            .iter()
            .map(|q| q.broker.to_string())
            .collect();
        n.dedup();
        n
    }

    /// A broker whose registration ends (killed: its channel to the name server closes) leaves
    /// the route at the next refresh, its queues with it; registered again, it comes back.
    /// Each change runs `changed` (the instances' rebalance).
    #[test]
    fn the_refresh_drops_and_regains_a_broker() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let config = NamesrvConfig::load(None, &["listenPort=0".into()]).unwrap();
        let ns = rt.block_on(RunningNameServer::start(config)).unwrap();
        let _a = register(ns.addr, "broker-a", 20911);
        let b = register(ns.addr, "broker-b", 30911);
        let route = Arc::new(
            rt.block_on(Route::start(Target::NameServer(ns.addr), "T", 0))
                .unwrap(),
        );
        assert_eq!(route.queues().len(), 8);
        assert_eq!(names(&route), ["broker-a", "broker-b"]);
        assert_eq!(route.addrs_of("broker-b")[&MASTER_ID].port(), 30911);

        let cancel = CancellationToken::new();
        let changes = Arc::new(AtomicU32::new(0));
        let task = {
            let (route, cancel, changes) = (route.clone(), cancel.clone(), changes.clone());
            rt.spawn(async move {
                let changed = || {
                    changes.fetch_add(1, Ordering::Relaxed);
                };
                refresh_loop(
                    &route,
                    "T",
                    Duration::from_millis(50),
                    &cancel,
                    |_, _| {},
                    changed,
                )
                .await;
            })
        };
        let wait_for = |want: &[&str]| {
            let end = Instant::now() + Duration::from_secs(10);
            while names(&route) != want && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(20));
            }
            assert_eq!(names(&route), want);
        };
        drop(b);
        wait_for(&["broker-a"]);
        assert_eq!(route.queues().len(), 4);
        assert_eq!(changes.load(Ordering::Relaxed), 1);
        let _b = register(ns.addr, "broker-b", 30911);
        wait_for(&["broker-a", "broker-b"]);
        assert_eq!(changes.load(Ordering::Relaxed), 2);
        cancel.cancel();
        rt.block_on(task).unwrap();
        rt.block_on(ns.stop()).unwrap();
    }

    fn b(name: &str, n: u32) -> RouteBroker {
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        RouteBroker {
            name: name.into(),
            addr,
            addrs: BTreeMap::from([(MASTER_ID, addr)]),
            read_queues: n,
        }
    }

    #[test]
    fn queues_sort_by_broker_name_then_queue_id() {
        let qs = queues_of(&[b("broker-b", 2), b("broker-a", 3)]);
        let got: Vec<(&str, i32)> = qs.iter().map(|q| (&*q.broker, q.queue_id)).collect();
        assert_eq!(
            got,
            [
                ("broker-a", 0),
                ("broker-a", 1),
                ("broker-a", 2),
                ("broker-b", 0),
                ("broker-b", 1)
            ]
        );
        // Java's String.compareTo: "broker-10" sorts before "broker-2".
        let qs = queues_of(&[b("broker-2", 1), b("broker-10", 1)]);
        assert_eq!(&*qs[0].broker, "broker-10");
    }

    /// The node choice: the suggested id when the route lists it, else another address of the
    /// name (a slave id falls to the next id first); with the master gone from the route, a
    /// master-suggested pull goes to the slave; only-this finds nothing else.
    #[test]
    fn find_in_subscribe_picks_the_suggested_node_else_any() {
        let a = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
        let find = |addrs: &BTreeMap<i64, SocketAddr>, id, only| {
            find_in_subscribe(addrs, id, only, ClientVersion::V49)
        };
        let both = BTreeMap::from([(0, a(1)), (1, a(2))]);
        assert_eq!(find(&both, 1, false), Some((1, a(2))));
        assert_eq!(find(&both, 0, false), Some((0, a(1))));
        // Suggested id absent: a slave id looks at id + 1, then any address.
        let master_only = BTreeMap::from([(0, a(1))]);
        assert_eq!(find(&master_only, 1, false), Some((0, a(1))));
        assert_eq!(find(&master_only, 1, true), None);
        let two_slaves = BTreeMap::from([(0, a(1)), (2, a(3))]);
        assert_eq!(find(&two_slaves, 1, true), Some((2, a(3))));
        assert_eq!(find(&two_slaves, 1, false), Some((2, a(3))));
        // The master missing from the route: the slave answers.
        let slave_only = BTreeMap::from([(1, a(2))]);
        assert_eq!(find(&slave_only, 0, false), Some((1, a(2))));
        assert_eq!(find(&slave_only, 0, true), None);
        assert_eq!(find(&BTreeMap::new(), 0, false), None);
    }

    /// Audit #17 (fidelity-after-wave-3): a 4.3 client has no id + 1 step; slave 1 missing, it
    /// takes the name's first address (the master), or nothing with only-this. 5.3 as 4.9.
    #[test]
    fn a_4_3_client_has_no_next_slave_step() {
        let a = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
        let two_slaves = BTreeMap::from([(0, a(1)), (2, a(3))]);
        let v43 = ClientVersion::V43;
        assert_eq!(
            find_in_subscribe(&two_slaves, 1, false, v43),
            Some((0, a(1)))
        );
        assert_eq!(find_in_subscribe(&two_slaves, 1, true, v43), None);
        assert_eq!(
            find_in_subscribe(&two_slaves, 2, true, v43),
            Some((2, a(3)))
        );
        let v53 = ClientVersion::V53;
        assert_eq!(
            find_in_subscribe(&two_slaves, 1, false, v53),
            Some((2, a(3)))
        );
    }

    /// The route keeps a name's every address, and the name (with its queues) while only its
    /// slave is registered.
    #[test]
    fn subscribe_brokers_keep_slaves_and_a_masterless_name() {
        use remoting::route::{BrokerData, QueueData};
        let mut r = TopicRouteData::default();
        r.queue_datas.push(QueueData {
            broker_name: "b".into(),
            read_queue_nums: 2,
            perm: PERM_READ,
            ..Default::default()
        });
        r.broker_datas.push(BrokerData {
            broker_name: "b".into(),
            broker_addrs: BTreeMap::from([
                (0, "127.0.0.1:10".to_string()),
                (1, "127.0.0.1:11".to_string()),
            ]),
            ..Default::default()
        });
        let got = subscribe_brokers(&r);
        assert_eq!(got[0].addrs.len(), 2);
        assert_eq!(got[0].addr.port(), 10);
        r.broker_datas[0].broker_addrs.remove(&0);
        let got = subscribe_brokers(&r);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].addr.port(), 11);
        assert_eq!(queues_of(&got).len(), 2);
    }
}
