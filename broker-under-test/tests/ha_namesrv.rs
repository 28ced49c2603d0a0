//! Replication through the name server (issue 26; HA reference §1.4, §5.1): master and slave
//! register under one brokerName with ids 0 and 1, the route carries both addresses, and a
//! slave without `haMasterAddress` learns its master's HA address from the registration answer.

mod common;

use std::time::{Duration, Instant};

use broker_under_test::{config::BrokerConfig, RunningBroker};
use common::{send_v2, Client};
use name_server::{NamesrvConfig, RunningNameServer};
use remoting::{
    headers::{CreateTopicRequestHeader, GetRouteInfoRequestHeader},
    route::TopicRouteData,
    RemotingCommand, RequestCode,
};

const DEADLINE: Duration = Duration::from_secs(60);

async fn route(ns: std::net::SocketAddr, topic: &str) -> Option<TopicRouteData> {
    let r = Client::connect(ns)
        .await
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_registers_as_id_1_and_finds_its_master_through_the_name_server() {
    let ns = RunningNameServer::start(NamesrvConfig::load(None, &["listenPort=0".into()]).unwrap())
        .await
        .unwrap();
    let ns_addr = ns.addr.to_string();
    let (mdir, sdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let common_keys = [
        ("namesrvAddr", ns_addr.as_str()),
        ("registerNameServerPeriod", "1000"),
    ];
    let master = RunningBroker::start(BrokerConfig::for_test(mdir.path(), &common_keys).unwrap())
        .await
        .unwrap();
    let mut slave_keys = common_keys.to_vec();
    slave_keys.extend([("brokerRole", "SLAVE"), ("brokerId", "1")]);
    let slave = RunningBroker::start(BrokerConfig::for_test(sdir.path(), &slave_keys).unwrap())
        .await
        .unwrap();
    let mut m = Client::connect(master.addr).await;
    let r = m
        .call(
            RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, 1).with_header(
                &CreateTopicRequestHeader {
                    topic: "RoutedHa".into(),
                    default_topic: "TBW102".into(),
                    read_queue_nums: 4,
                    write_queue_nums: 4,
                    perm: 6,
                    topic_filter_type: "SINGLE_TAG".into(),
                    topic_sys_flag: Some(0),
                    order: Some(false),
                },
            ),
        )
        .await;
    assert_eq!(r.code, 0);

    let end = Instant::now() + DEADLINE;
    let addrs = loop {
        let addrs = route(ns.addr, "RoutedHa")
            .await
            .and_then(|r| r.broker_datas.into_iter().next())
            .map(|b| b.broker_addrs)
            .unwrap_or_default();
        if addrs.len() == 2 || Instant::now() > end {
            break addrs;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_eq!(addrs.get(&0), Some(&master.addr.to_string()));
    assert_eq!(addrs.get(&1), Some(&slave.addr.to_string()));

    // The slave learnt the master's HA address from its registration answer and replicates.
    assert_eq!(m.call(send_v2(2, "RoutedHa", 0, b"via namesrv")).await.code, 0);
    let mut s = Client::connect(slave.addr).await;
    loop {
        let mi = m.runtime_info().await;
        let si = s.runtime_info().await;
        if si["haMasterAddress"] == master.ha_addr.to_string()
            && si["commitLogMaxOffset"] == mi["commitLogMaxOffset"]
        {
            break;
        }
        assert!(Instant::now() < end, "slave never caught up: {si:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    slave.stop().await.unwrap();
    master.stop().await.unwrap();
    ns.stop().await.unwrap();
}
