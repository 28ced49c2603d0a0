//! SlaveSynchronize (audit #6, fidelity-after-wave-3): a slave registered with a name server
//! copies its master's consumer offsets, topics and subscription groups (4.9.8: first 3 s
//! after start, then every 10 s; BrokerController.handleSlaveSynchronize l.1122-1138), so a
//! consumer that moves to the slave after the master dies resumes from them.

mod common;

use broker_under_test::{config::BrokerConfig, RunningBroker};
use common::Client;
use name_server::{NamesrvConfig, RunningNameServer};
use remoting::{
    headers::{
        CreateTopicRequestHeader, QueryConsumerOffsetRequestHeader,
        UpdateConsumerOffsetRequestHeader,
    },
    RemotingCommand, RequestCode,
};

const TOPIC: &str = "SyncedTopic";
const GROUP: &str = "synced_group";

async fn query_offset(c: &mut Client, queue_id: i32) -> (i32, Option<i64>) {
    let o = c.opaque();
    let r = c
        .call(
            RemotingCommand::request(RequestCode::QUERY_CONSUMER_OFFSET, o).with_header(
                &QueryConsumerOffsetRequestHeader {
                    consumer_group: GROUP.into(),
                    topic: TOPIC.into(),
                    queue_id,
                    set_zero_if_not_found: None,
                },
            ),
        )
        .await;
    (r.code, r.ext("offset").map(|v| v.parse().unwrap()))
}

async fn body(c: &mut Client, code: RequestCode) -> String {
    let o = c.opaque();
    let r = c.call(RemotingCommand::request(code, o)).await;
    assert_eq!(r.code, 0, "{code:?}: {:?}", r.remark);
    String::from_utf8(r.body.to_vec()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_49_slave_copies_its_masters_offsets_topics_and_groups() {
    let ns = RunningNameServer::start(NamesrvConfig::load(None, &["listenPort=0".into()]).unwrap())
        .await
        .unwrap();
    let ns_addr = ns.addr.to_string();
    let (mdir, sdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let keys = [
        ("namesrvAddr", ns_addr.as_str()),
        ("registerNameServerPeriod", "1000"),
        ("brokerVersionProfile", "4.9"),
    ];
    let master = RunningBroker::start(BrokerConfig::for_test(mdir.path(), &keys).unwrap())
        .await
        .unwrap();
    let mut m = Client::connect(master.addr).await;
    let o = m.opaque();
    let r = m
        .call(
            RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, o).with_header(
                &CreateTopicRequestHeader {
                    topic: TOPIC.into(),
                    default_topic: "TBW102".into(),
                    read_queue_nums: 2,
                    write_queue_nums: 2,
                    perm: 6,
                    topic_filter_type: "SINGLE_TAG".into(),
                    topic_sys_flag: Some(0),
                    order: Some(false),
                },
            ),
        )
        .await;
    assert_eq!(r.code, 0);
    for (queue_id, offset) in [(0, 42), (1, 7)] {
        let o = m.opaque();
        let r = m
            .call(
                RemotingCommand::request(RequestCode::UPDATE_CONSUMER_OFFSET, o).with_header(
                    &UpdateConsumerOffsetRequestHeader {
                        consumer_group: GROUP.into(),
                        topic: TOPIC.into(),
                        queue_id,
                        commit_offset: offset,
                    },
                ),
            )
            .await;
        assert_eq!(r.code, 0);
    }
    let master_groups = body(&mut m, RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG).await;

    let mut slave_keys = keys.to_vec();
    slave_keys.extend([("brokerRole", "SLAVE"), ("brokerId", "1")]);
    let slave = RunningBroker::start(BrokerConfig::for_test(sdir.path(), &slave_keys).unwrap())
        .await
        .unwrap();
    let mut s = Client::connect(slave.addr).await;
    // Before the first sync the slave has no offset for the queue: its "not found" answer
    // (0 for a queue that starts at 0, which is where a consumer would start over).
    let started = std::time::Instant::now();
    let before = query_offset(&mut s, 0).await;
    assert_ne!(
        before,
        (0, Some(42)),
        "the slave had the offset before any sync"
    );
    let deadline = started + common::DEADLINE;
    let offsets = loop {
        let a = query_offset(&mut s, 0).await;
        let b = query_offset(&mut s, 1).await;
        if a == (0, Some(42)) && b == (0, Some(7)) {
            break (a.1, b.1);
        }
        assert!(std::time::Instant::now() < deadline, "no sync: {a:?} {b:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let took = started.elapsed();
    assert_eq!(offsets, (Some(42), Some(7)));
    // 4.9: the first sync 3 s after the slave started (registration first: it learns the
    // master's address from the answer).
    assert!(took.as_secs_f64() < 12.0, "first sync after {took:?}");
    let topics = body(&mut s, RequestCode::GET_ALL_TOPIC_CONFIG).await;
    assert!(topics.contains(TOPIC), "{topics}");
    assert_eq!(
        body(&mut s, RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG).await,
        master_groups
    );
    drop((s, m));
    slave.stop().await.unwrap();
    master.stop().await.unwrap();
}
