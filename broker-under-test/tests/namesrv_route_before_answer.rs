//! A topic reaches the name servers before the answer of the request that created it (issue
//! 23 item 3; name-server reference §8): its route is readable the moment the answer arrives,
//! where RocketMQ promises it:
//! - UPDATE_AND_CREATE_TOPIC, every profile (synchronous registration);
//! - a send that auto-creates the topic, 5.3 (synchronous); 4.x registers it oneway, so the
//!   route follows shortly after the answer, without the promise.

mod common;

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use common::{send_v2, TestBroker};
use name_server::{NamesrvConfig, RunningNameServer};
use remoting::{
    headers::{CreateTopicRequestHeader, GetRouteInfoRequestHeader},
    RemotingCommand, RequestCode,
};

/// Topics created per case: a registration that races the answer (a poll of the topic table)
/// would have to win every one of them.
const TOPICS: usize = 5;

async fn route_code(ns: SocketAddr, topic: &str) -> i32 {
    let mut c = common::Client::connect(ns).await;
    c.call(
        RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, 1).with_header(
            &GetRouteInfoRequestHeader {
                topic: topic.into(),
                accept_standard_json_only: None,
            },
        ),
    )
    .await
    .code
}

/// A name server and a broker of `profile` registered with it (TBW102 routed).
async fn start(profile: &str) -> (RunningNameServer, TestBroker) {
    let ns = RunningNameServer::start(NamesrvConfig::load(None, &["listenPort=0".into()]).unwrap())
        .await
        .unwrap();
    let ns_addr = ns.addr.to_string();
    let b = TestBroker::start(&[
        ("namesrvAddr", ns_addr.as_str()),
        ("brokerVersionProfile", profile),
    ])
    .await;
    let end = Instant::now() + Duration::from_secs(15);
    while route_code(ns.addr, "TBW102").await != 0 {
        assert!(
            Instant::now() < end,
            "{profile}: the broker never registered"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (ns, b)
}

fn create_topic(opaque: i32, topic: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, opaque).with_header(
        &CreateTopicRequestHeader {
            topic: topic.into(),
            default_topic: "TBW102".into(),
            read_queue_nums: 2,
            write_queue_nums: 2,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".into(),
            topic_sys_flag: Some(0),
            order: Some(false),
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_created_topic_is_routed_when_the_answer_arrives_in_every_profile() {
    for profile in ["4.3", "4.9", "5.3"] {
        let (ns, b) = start(profile).await;
        let mut c = b.client().await;
        for i in 0..TOPICS {
            let topic = format!("Admin{i}");
            assert_eq!(c.call(create_topic(i as i32 + 1, &topic)).await.code, 0);
            assert_eq!(
                route_code(ns.addr, &topic).await,
                0,
                "{profile}: {topic} has no route right after its creation was answered"
            );
        }
        b.stop().await;
        ns.stop().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auto_created_topic_is_routed_when_the_send_is_answered_in_5_3() {
    let (ns, b) = start("5.3").await;
    let mut c = b.client().await;
    for i in 0..TOPICS {
        let topic = format!("Auto{i}");
        assert_eq!(c.call(send_v2(i as i32 + 1, &topic, 0, b"x")).await.code, 0);
        assert_eq!(
            route_code(ns.addr, &topic).await,
            0,
            "{topic} has no route right after the send that created it was answered"
        );
    }
    b.stop().await;
    ns.stop().await.unwrap();
}

/// 4.x: the oneway registration has left before the answer; the name server routes the topic
/// moments later (well before any periodic round, 30 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auto_created_topic_is_routed_moments_after_the_send_in_4_x() {
    for profile in ["4.3", "4.9"] {
        let (ns, b) = start(profile).await;
        let mut c = b.client().await;
        assert_eq!(c.call(send_v2(1, "Auto4x", 0, b"x")).await.code, 0);
        let end = Instant::now() + Duration::from_secs(5);
        while route_code(ns.addr, "Auto4x").await != 0 {
            assert!(
                Instant::now() < end,
                "{profile}: no route 5 s after the send"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        b.stop().await;
        ns.stop().await.unwrap();
    }
}
