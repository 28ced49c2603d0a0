//! What a cluster job does before its load: find the masters, create the topic on each, wait
//! for the name server's route to list them, and build the router (with its 30-s refresh).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::discover::{brokers_of, wait_for_route, Refresher, ROUTE_REFRESH};
use super::error::ClusterError;
use super::latency_fault::FaultVersion;
use super::router::{Router, Selection};
use harness_model::profile::{RetryPolicy, Workload};
use rmq_client::admin::AdminConn;
use rmq_client::name_server::master_addrs;

/// The cluster side of one job's load; dropping it stops the route refresh.
pub struct ClusterLoad {
    pub router: Arc<Router>,
    pub namesrv: SocketAddr,
    _refresher: Refresher,
}

/// The selection a workload asks for: latency fault tolerance with the tables of its retry
/// policy's client (4.x for `rocketmq-4`, else 5.x), or plain round robin.
pub fn selection(w: &Workload) -> Selection {
    match (w.latency_fault, w.retry) {
        (false, _) => Selection::RoundRobin,
        (true, RetryPolicy::Rocketmq4) => Selection::LatencyFault(FaultVersion::V4),
        (true, _) => Selection::LatencyFault(FaultVersion::V5),
    }
}

/// `expect`: brokers that must be registered before the load (the harness's own cluster);
/// `None` for an existing cluster (`--namesrv`), which is taken as the name server lists it.
pub fn prepare(
    namesrv: SocketAddr,
    expect: Option<usize>,
    w: &Workload,
) -> Result<ClusterLoad, ClusterError> {
    let end = Instant::now() + Duration::from_secs(20);
    let masters = loop {
        let m = master_addrs(namesrv)?;
        let enough = m.len() >= expect.unwrap_or(1);
        if enough || Instant::now() >= end {
            if m.is_empty() {
                return Err(ClusterError::NoBroker { namesrv });
            }
            if !enough {
                return Err(ClusterError::TooFewBrokers {
                    registered: m.len(),
                    expected: expect.unwrap_or(1),
                    namesrv,
                });
            }
            break m;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if w.create_topic {
        for (name, addr) in &masters {
            let mut admin =
                AdminConn::connect(*addr, Duration::from_secs(2)).map_err(|source| {
                    ClusterError::Admin {
                        broker: name.clone(),
                        addr: *addr,
                        source: Box::new(source),
                    }
                })?;
            admin
                .create_topic(&w.topic, w.queues, Duration::from_secs(5))
                .map_err(|source| ClusterError::CreateTopic {
                    topic: w.topic.clone(),
                    broker: name.clone(),
                    addr: *addr,
                    source: Box::new(source),
                })?;
        }
    }
    let want = if w.create_topic { masters.len() } else { 1 };
    let route = wait_for_route(namesrv, &w.topic, want, Duration::from_secs(15))?;
    let brokers = brokers_of(&route)?;
    if brokers.iter().all(|b| b.write_queues == 0) {
        return Err(ClusterError::NoWriteableQueue {
            topic: w.topic.clone(),
        });
    }
    let router = Arc::new(Router::new(brokers, selection(w), fastrand::u64(..)));
    let refresher = Refresher::start(namesrv, w.topic.clone(), router.clone(), ROUTE_REFRESH)
        .map_err(ClusterError::RouteRefresh)?;
    Ok(ClusterLoad {
        router,
        namesrv,
        _refresher: refresher,
    })
}
