//! Route discovery through a name server (name-server reference §9): the topic's route at the
//! start of a job, and a refresh every 30 s (`pollNameServerInterval`) that keeps the old
//! route when the name server cannot answer.

use std::net::SocketAddr;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use remoting::route::TopicRouteData;

use super::error::ClusterError;
use super::router::{BrokerRoute, Router};
use rmq_client::name_server::{fetch_route, resolve, NameServerError};

/// The client's `pollNameServerInterval`.
pub const ROUTE_REFRESH: Duration = Duration::from_secs(30);

/// The brokers of a route that have a master and a writeable queue (`topicRouteData2TopicPublishInfo`).
pub fn brokers_of(route: &TopicRouteData) -> Result<Vec<BrokerRoute>, NameServerError> {
    let mut out = Vec::new();
    for q in &route.queue_datas {
        let Some(b) = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == q.broker_name)
        else {
            continue;
        };
        let Some(addr) = b.master_addr() else {
            continue;
        };
        out.push(BrokerRoute {
            name: q.broker_name.clone(),
            addr: resolve(addr)?,
            write_queues: if q.writeable() {
                q.write_queue_nums.max(0) as u32
            } else {
                0
            },
        });
    }
    Ok(out)
}

/// Polls the route until it lists `expect` brokers (registrations arrive within moments of a
/// topic's creation) or `wait` passes; returns the last route seen.
pub fn wait_for_route(
    namesrv: SocketAddr,
    topic: &str,
    expect: usize,
    wait: Duration,
) -> Result<TopicRouteData, ClusterError> {
    let end = Instant::now() + wait;
    loop {
        let route = fetch_route(namesrv, topic)?;
        let listed = route.as_ref().map_or(0, |r| r.queue_datas.len());
        match route {
            Some(r) if listed >= expect => return Ok(r),
            r if Instant::now() >= end => {
                return r.ok_or_else(|| ClusterError::NoRoute {
                    namesrv,
                    topic: topic.to_owned(),
                    wait,
                })
            }
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// The refresh thread of one job; stopped and joined on drop.
pub struct Refresher {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Refresher {
    pub fn start(
        namesrv: SocketAddr,
        topic: String,
        router: Arc<Router>,
        period: Duration,
    ) -> std::io::Result<Refresher> {
        let (tx, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("harness-route-refresh".into())
            .spawn(move || loop {
                match rx.recv_timeout(period) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
                // As the client: an error keeps the old route.
                if let Ok(Some(route)) = fetch_route(namesrv, &topic) {
                    router.refresh(&route);
                }
            })?;
        Ok(Refresher {
            stop: Some(tx),
            thread: Some(thread),
        })
    }
}

impl Drop for Refresher {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::router::Selection;
    use name_server::{NamesrvConfig, RunningNameServer};
    use remoting::headers::RegisterBrokerRequestHeader;
    use remoting::route::{body_crc32, RegisterBrokerBody, TopicConfigData};
    use remoting::{RemotingCommand, RequestCode};
    use rmq_client::admin::AdminConn;
    use rmq_client::name_server::{master_addrs, CALL_TIMEOUT};

    fn register(ns: SocketAddr, write_queues: i32, counter: i64) -> AdminConn {
        let mut body = RegisterBrokerBody::default();
        let w = &mut body.topic_config_serialize_wrapper;
        w.data_version.counter = counter;
        for (name, queues) in [("T", write_queues), ("TBW102", 8)] {
            w.topic_config_table.insert(
                name.into(),
                TopicConfigData {
                    topic_name: name.into(),
                    read_queue_nums: queues,
                    write_queue_nums: queues,
                    ..Default::default()
                },
            );
        }
        let body = body.encode();
        let mut c = AdminConn::connect(ns, CALL_TIMEOUT).unwrap();
        let answer = c
            .call(
                RemotingCommand::request(RequestCode::REGISTER_BROKER, 0)
                    .with_header(&RegisterBrokerRequestHeader {
                        broker_name: "broker-0".into(),
                        broker_addr: "127.0.0.1:10911".into(),
                        cluster_name: "c".into(),
                        ha_server_addr: "127.0.0.1:10912".into(),
                        broker_id: 0,
                        body_crc32: Some(body_crc32(&body)),
                        ..Default::default()
                    })
                    .with_body(body),
                CALL_TIMEOUT,
            )
            .unwrap();
        assert_eq!(answer.code, 0, "{answer:?}");
        c
    }

    /// The route is read at start and re-read by the refresh thread: a broker that now
    /// registers 2 write queues instead of 4 gets sends on queues 0 and 1 only.
    #[test]
    fn routes_are_discovered_and_refreshed() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let config = NamesrvConfig::load(None, &["listenPort=0".into()]).unwrap();
        let ns = rt.block_on(RunningNameServer::start(config)).unwrap();
        // The registering connection stays open: closing it would unregister the broker.
        let _first = register(ns.addr, 4, 1);
        assert_eq!(fetch_route(ns.addr, "Nope").unwrap(), None);
        let route = wait_for_route(ns.addr, "T", 1, Duration::from_secs(5)).unwrap();
        let brokers = brokers_of(&route).unwrap();
        assert_eq!(brokers[0].write_queues, 4);
        assert_eq!(master_addrs(ns.addr).unwrap().len(), 1);
        let router = Arc::new(Router::new(brokers, Selection::RoundRobin, 1));
        let now = Instant::now();
        assert!((0..8).any(|_| router.select(None, now).unwrap().queue_id >= 2));

        let _refresh = Refresher::start(
            ns.addr,
            "T".into(),
            router.clone(),
            Duration::from_millis(50),
        )
        .unwrap();
        let _second = register(ns.addr, 2, 2);
        let end = Instant::now() + Duration::from_secs(10);
        let refreshed = loop {
            let now = Instant::now();
            if (0..8).all(|_| router.select(None, now).unwrap().queue_id < 2) {
                break true;
            }
            if now > end {
                break false;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(refreshed, "the refresh picked up the new route");
        rt.block_on(ns.stop()).unwrap();
    }
}
