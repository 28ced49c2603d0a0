//! Registration with the in-tree name server: a broker with `namesrvAddr` appears in the
//! routes of its topics (a topic created at run time within moments, not at the next 30-s
//! round), and leaves them at a clean stop.

mod common;

use std::time::{Duration, Instant};

use broker_under_test::config::BrokerConfig;
use common::{send_v2, TestBroker};
use name_server::{NamesrvConfig, RunningNameServer};
use remoting::{
    headers::{CreateTopicRequestHeader, GetRouteInfoRequestHeader},
    route::{ClusterInfo, TopicRouteData},
    RemotingCommand, RequestCode,
};

async fn route(ns: std::net::SocketAddr, topic: &str) -> Option<TopicRouteData> {
    let mut c = common::Client::connect(ns).await;
    let r = c
        .call(
            RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, 1).with_header(
                &GetRouteInfoRequestHeader {
                    topic: topic.into(),
                    accept_standard_json_only: None,
                },
            ),
        )
        .await;
    (r.code == 0).then(|| TopicRouteData::decode(&r.body).unwrap())
}

async fn eventually_route(
    ns: std::net::SocketAddr,
    topic: &str,
    pred: impl Fn(&Option<TopicRouteData>) -> bool,
) -> Option<TopicRouteData> {
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let r = route(ns, topic).await;
        if pred(&r) || Instant::now() > end {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_registers_its_topics_and_unregisters_at_stop() {
    let ns = RunningNameServer::start(NamesrvConfig::load(None, &["listenPort=0".into()]).unwrap())
        .await
        .unwrap();
    let ns_addr = ns.addr.to_string();
    let b = TestBroker::start(&[
        ("namesrvAddr", ns_addr.as_str()),
        ("brokerClusterName", "TestCluster"),
    ])
    .await;
    let broker_addr = b.addr().to_string();

    // TBW102 (the auto-create template) is registered at start.
    let r = eventually_route(ns.addr, "TBW102", Option::is_some)
        .await
        .expect("TBW102 route");
    assert_eq!(r.queue_datas[0].perm, 7);
    assert_eq!(r.broker_datas[0].broker_name, "broker-a");
    assert_eq!(r.broker_datas[0].cluster, "TestCluster");
    assert_eq!(r.broker_datas[0].master_addr(), Some(broker_addr.as_str()));

    // A topic created now reaches the name server without waiting for the 30-s round.
    let mut c = b.client().await;
    let created = c
        .call(
            RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, 1).with_header(
                &CreateTopicRequestHeader {
                    topic: "RoutedTopic".into(),
                    default_topic: "TBW102".into(),
                    read_queue_nums: 3,
                    write_queue_nums: 3,
                    perm: 6,
                    topic_filter_type: "SINGLE_TAG".into(),
                    topic_sys_flag: Some(0),
                    order: Some(false),
                },
            ),
        )
        .await;
    assert_eq!(created.code, 0);
    let t = Instant::now();
    let r = eventually_route(ns.addr, "RoutedTopic", Option::is_some)
        .await
        .expect("the new topic's route");
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(r.queue_datas[0].write_queue_nums, 3);
    // So does one auto-created by a send.
    assert_eq!(c.call(send_v2(2, "AutoTopic", 0, b"x")).await.code, 0);
    assert!(eventually_route(ns.addr, "AutoTopic", Option::is_some)
        .await
        .is_some());

    let mut nc = common::Client::connect(ns.addr).await;
    let info = nc
        .call(RemotingCommand::request(
            RequestCode::GET_BROKER_CLUSTER_INFO,
            1,
        ))
        .await;
    let info = ClusterInfo::decode(&info.body).unwrap();
    assert!(info.cluster_addr_table["TestCluster"].contains("broker-a"));

    // A clean stop unregisters: the route is gone as soon as the broker has stopped.
    b.stop().await;
    assert!(route(ns.addr, "RoutedTopic").await.is_none());
    ns.stop().await.unwrap();
}

#[test]
fn a_malformed_namesrv_addr_is_refused_with_rocketmqs_message() {
    let dir = tempfile::tempdir().unwrap();
    let e = BrokerConfig::for_test(dir.path(), &[("namesrvAddr", "127.0.0.1")]).unwrap_err();
    assert!(
        e.to_string().contains(
            "The Name Server Address[127.0.0.1] illegal, please set it as follows, \"127.0.0.1:9876;192.168.0.1:9876\""
        ),
        "{e}"
    );
}
