//! The send path end to end: 10,000 messages through every send code and both header
//! serializations, read back via PULL_MESSAGE with bodies and CRCs verified; the §7.1 checks.

mod common;

use std::collections::BTreeSet;

use common::*;
use remoting::{
    headers::SendMessageRequestHeaderV2,
    message::{encode_batch, property, BatchEntry},
    RemotingCommand, RequestCode,
};

const TOPIC: &str = "BulkTopic";

fn batch(opaque: i32, topic: &str, bodies: &[Vec<u8>]) -> RemotingCommand {
    let entries: Vec<BatchEntry> = bodies
        .iter()
        .enumerate()
        .map(|(i, b)| BatchEntry {
            flag: 0,
            body: b.clone(),
            properties: props(&[("UNIQ_KEY", &format!("B{opaque:010}{i:04}"))]),
        })
        .collect();
    let mut h = send_v2(opaque, topic, 0, b"")
        .header::<SendMessageRequestHeaderV2>()
        .unwrap();
    h.m = Some(true);
    RemotingCommand::request(RequestCode::SEND_BATCH_MESSAGE, opaque)
        .with_header(&h)
        .with_body(encode_batch(&entries).freeze())
}

async fn bulk(lock: &str) {
    // Round trips, not flow control: 200 pipelined sends can wait past the default 200 ms
    // waitTimeMillsInSendQueue on a busy machine (TIMEOUT_CLEAN_QUEUE seen at load 18).
    let b = TestBroker::start(&[
        ("useReentrantLockWhenPutMessage", lock),
        ("waitTimeMillsInSendQueue", "60000"),
    ])
    .await;
    let mut c = b.client().await;
    let mut expected = BTreeSet::new();
    let mut requests = Vec::new();
    let mut n = 0usize;
    let mut i = 0i32;
    while n < 10_000 {
        i += 1;
        let body = |k: usize| format!("message {k} of the bulk test, lock {lock}").into_bytes();
        let cmd = match i % 5 {
            0 => {
                let bodies: Vec<Vec<u8>> = (n..n + 10).map(body).collect();
                expected.extend(bodies.iter().cloned());
                n += 10;
                let cmd = batch(i, TOPIC, &bodies);
                if i % 2 == 0 {
                    rocketmq(cmd)
                } else {
                    cmd
                }
            }
            k => {
                expected.insert(body(n));
                let cmd = if k % 2 == 0 {
                    send_v1(i, TOPIC, 0, &body(n))
                } else {
                    send_v2(i, TOPIC, 0, &body(n))
                };
                n += 1;
                if k > 2 {
                    rocketmq(cmd)
                } else {
                    cmd
                }
            }
        };
        requests.push(cmd);
    }
    assert_eq!(expected.len(), 10_000);
    for chunk in requests.chunks(200) {
        for r in chunk {
            c.send(r).await;
        }
        for _ in chunk {
            let r = c.read().await;
            assert_eq!(r.code, 0, "send failed: {:?}", r.remark);
            assert_eq!(r.ext("MSG_REGION"), Some("DefaultRegion"));
            assert_eq!(r.ext("TRACE_ON"), Some("true"));
            let id = r.ext("msgId").expect("msgId");
            assert!(id.split(',').all(|m| m.len() == 32
                && m.chars()
                    .all(|ch| ch.is_ascii_hexdigit() && !ch.is_ascii_lowercase())));
        }
    }
    let records = c.pull_all(TOPIC, 0).await;
    assert_eq!(records.len(), 10_000);
    let got: BTreeSet<Vec<u8>> = records.iter().map(|r| r.body.clone()).collect();
    assert_eq!(got, expected);
    for (k, r) in records.iter().enumerate() {
        assert_eq!(r.queue_offset, k as i64);
        assert_eq!(property(&r.properties, "CLUSTER"), Some("DefaultCluster"));
    }
    b.stop().await;
}

#[tokio::test]
async fn ten_thousand_messages_round_trip_with_reentrant_lock() {
    bulk("true").await;
}

#[tokio::test]
async fn ten_thousand_messages_round_trip_with_spin_lock() {
    bulk("false").await;
}

#[tokio::test]
async fn broker_checks_answer_like_rocketmq_per_version() {
    for (profile, invalid) in [("4.9", 1), ("5.3", 29)] {
        let b = TestBroker::start(&[
            ("brokerVersionProfile", profile),
            ("maxMessageSize", "1024"),
        ])
        .await;
        let mut c = b.client().await;
        let r = c.call(send_v2(1, "bad topic", 0, b"x")).await;
        assert_eq!(r.code, invalid, "{profile}");
        assert_eq!(
            remark(&r),
            "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        );
        let r = c.call(send_v2(2, &"t".repeat(128), 0, b"x")).await;
        assert_eq!(
            (r.code, remark(&r)),
            (
                invalid,
                "The specified topic is longer than topic max length."
            )
        );
        let r = c.call(send_v2(3, "Checked", 4, b"x")).await;
        assert_eq!(r.code, invalid);
        assert!(
            remark(&r).starts_with("request queueId[4] is illegal, TopicConfig [topicName=Checked"),
            "{}",
            remark(&r)
        );
        let r = c.call(send_v2(4, "Checked", 0, &[7u8; 2048])).await;
        assert_eq!(r.code, 13);
        assert_eq!(
            remark(&r),
            "the message is illegal, maybe msg body or properties length not matched. \
             msg body length limit 1024B, msg properties length limit 32KB."
        );
        let r = c.call(send_v2(5, "Checked", -1, b"ok")).await;
        assert_eq!(r.code, 0);
        let q: i32 = r.ext("queueId").unwrap().parse().unwrap();
        assert!((0..4).contains(&q), "random queue {q}");
        // 5.x returns the UNIQ_KEY as transactionId; 4.x's send processor does not.
        assert_eq!(r.ext("transactionId").is_some(), profile == "5.3");
        b.stop().await;
    }
}

#[tokio::test]
async fn unknown_topic_without_auto_create_is_topic_not_exist() {
    let b = TestBroker::start(&[("autoCreateTopicEnable", "false")]).await;
    let mut c = b.client().await;
    let r = c.call(send_v2(1, "NoSuchTopic", 0, b"x")).await;
    assert_eq!(r.code, 17);
    assert!(remark(&r).starts_with("topic[NoSuchTopic] not exist, apply first please!"));
    // After UPDATE_AND_CREATE_TOPIC it is accepted.
    let h = remoting::headers::CreateTopicRequestHeader {
        topic: "NoSuchTopic".into(),
        default_topic: "TBW102".into(),
        read_queue_nums: 2,
        write_queue_nums: 2,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        topic_sys_flag: Some(0),
        order: Some(false),
    };
    let r = c
        .call(RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, 2).with_header(&h))
        .await;
    assert_eq!(r.code, 0);
    assert_eq!(c.call(send_v2(3, "NoSuchTopic", 1, b"x")).await.code, 0);
    b.stop().await;
}

#[tokio::test]
async fn consumer_offsets_heartbeat_and_end_transaction_are_accepted() {
    use remoting::headers::{QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader};
    // 4.x commits any offset without checks (5.3's checks: tests/consumer_offsets.rs).
    let b = TestBroker::start(&[("brokerVersionProfile", "4.9")]).await;
    let mut c = b.client().await;
    let up = UpdateConsumerOffsetRequestHeader {
        consumer_group: "g".into(),
        topic: "T".into(),
        queue_id: 1,
        commit_offset: 42,
    };
    let r = c
        .call(RemotingCommand::request(RequestCode::UPDATE_CONSUMER_OFFSET, 1).with_header(&up))
        .await;
    assert_eq!(r.code, 0);
    let q = QueryConsumerOffsetRequestHeader {
        consumer_group: "g".into(),
        topic: "T".into(),
        queue_id: 1,
        set_zero_if_not_found: None,
    };
    let r = c
        .call(RemotingCommand::request(RequestCode::QUERY_CONSUMER_OFFSET, 2).with_header(&q))
        .await;
    assert_eq!((r.code, r.ext("offset")), (0, Some("42")));
    let r = c
        .call(RemotingCommand::request(RequestCode::HEART_BEAT, 3).with_body(&b"{}"[..]))
        .await;
    assert_eq!(r.code, 0);
    let info = c.runtime_info().await;
    for key in [
        "sendThreadPoolQueueSize",
        "sendThreadPoolQueueCapacity",
        "sendThreadPoolQueueHeadWaitTimeMills",
        "pullThreadPoolQueueSize",
        "EndTransactionQueueSize",
        "EndTransactionThreadPoolQueueCapacity",
        "brokerVersionDesc",
        "bootTimestamp",
        "runtime",
        "flowControlTotal",
    ] {
        assert!(info.contains_key(key), "runtime info lacks {key}");
    }
    assert_eq!(info["brokerVersionDesc"], "V4_9_8");
    assert_eq!(info["sendThreadPoolQueueCapacity"], "10000");
    b.stop().await;
}

#[tokio::test]
async fn a_slave_refuses_sends_per_version() {
    let b = TestBroker::start(&[
        ("brokerVersionProfile", "5.3"),
        ("brokerRole", "SLAVE"),
        ("brokerId", "1"),
    ])
    .await;
    let mut c = b.client().await;
    let r = c.call(send_v2(1, "SlaveTopic", 0, b"x")).await;
    assert_eq!(
        (r.code, remark(&r)),
        (
            2,
            "[REJECTREQUEST]system busy, start flow control for a while"
        )
    );
    let info = c.runtime_info().await;
    assert_eq!(counter(&info, "flowControlRejectRequestSlave"), 1);
    b.stop().await;

    let b = TestBroker::start(&[
        ("brokerVersionProfile", "4.9"),
        ("brokerRole", "SLAVE"),
        ("brokerId", "1"),
    ])
    .await;
    let mut c = b.client().await;
    let r = c.call(send_v2(1, "SlaveTopic", 0, b"x")).await;
    assert_eq!(r.code, 14);
    assert!(remark(&r).starts_with(
        "service not available now. It may be caused by one of the following reasons: \
         the broker's disk is full [CL: "
    ));
    assert!(c.pull_all("SlaveTopic", 0).await.is_empty());
    b.stop().await;
}

/// A batch to a retry topic: 4.3.2 and 5.3.3 answer 13 (sendBatchMessage's "batch request does
/// not support retry group"); 4.9.8 has no such check and stores the batch in the retry topic
/// as sent (no handleRetryAndDLQ on its batch path either).
#[tokio::test]
async fn a_batch_to_a_retry_topic_per_version() {
    let topic = "%RETRY%BatchGroup";
    for profile in ["4.3", "4.9", "5.3"] {
        let b = TestBroker::start(&[("brokerVersionProfile", profile)]).await;
        let mut c = b.client().await;
        let bodies = vec![b"one".to_vec(), b"two".to_vec()];
        let r = c.call(batch(1, topic, &bodies)).await;
        if profile == "4.9" {
            assert_eq!(r.code, 0, "{profile}: {}", remark(&r));
            // Readable once the reput has dispatched it (asynchronous, as in RocketMQ).
            c.dispatched().await;
            let stored: Vec<Vec<u8>> = c
                .pull_all(topic, 0)
                .await
                .into_iter()
                .map(|m| m.body.to_vec())
                .collect();
            assert_eq!(
                stored, bodies,
                "{profile}: stored in the retry topic as sent"
            );
        } else {
            assert_eq!(
                (r.code, remark(&r)),
                (
                    13,
                    "batch request does not support retry group %RETRY%BatchGroup"
                ),
                "{profile}"
            );
        }
        b.stop().await;
    }
}
