//! Consumer registration (HEART_BEAT, 38, 40, 35, expiry), queue locks (41/42) and the offset
//! calls (14/15) per version profile (consumer §5–§7).

mod common;

use std::time::{Duration, Instant};

use common::{counter, remark, send_v2, Client, TestBroker};
use remoting::{
    headers::{
        ConsumerGroupHeader, QueryConsumerOffsetRequestHeader, UnregisterClientRequestHeader,
        UpdateConsumerOffsetRequestHeader,
    },
    RemotingCommand, RequestCode,
};

async fn consumer_list(c: &mut Client, group: &str) -> (i32, Vec<String>, String) {
    let o = c.opaque();
    let r = c
        .call(
            RemotingCommand::request(RequestCode::GET_CONSUMER_LIST_BY_GROUP, o).with_header(
                &ConsumerGroupHeader {
                    consumer_group: group.into(),
                },
            ),
        )
        .await;
    let mut ids = Vec::new();
    if r.code == 0 {
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        ids = v["consumerIdList"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect();
        ids.sort();
    }
    (r.code, ids, remark(&r).to_owned())
}

/// The next NOTIFY_CONSUMER_IDS_CHANGED on `c` within `wait`, skipping responses.
async fn notified(c: &mut Client, wait: Duration) -> Option<String> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let cmd = c.try_read(left).await?;
        if cmd.code == RequestCode::NOTIFY_CONSUMER_IDS_CHANGED.as_i32() && !cmd.is_response() {
            assert!(cmd.is_oneway());
            return cmd.ext("consumerGroup").map(str::to_owned);
        }
    }
}

#[tokio::test]
async fn membership_changes_notify_every_member() {
    let b = TestBroker::start(&[]).await;
    let mut a = b.client().await;
    a.heartbeat("10.0.0.1@1", "G", &["T"], "*").await;
    // The registering connection is a member too: it hears about its own arrival.
    assert_eq!(
        notified(&mut a, Duration::from_secs(5)).await.as_deref(),
        Some("G")
    );
    let mut bb = b.client().await;
    bb.heartbeat("10.0.0.2@2", "G", &["T"], "*").await;
    assert_eq!(
        notified(&mut a, Duration::from_secs(5)).await.as_deref(),
        Some("G")
    );
    // A repeated heartbeat changes nothing: no notification.
    a.heartbeat("10.0.0.1@1", "G", &["T"], "*").await;
    assert_eq!(notified(&mut a, Duration::from_millis(300)).await, None);
    let (code, ids, _) = consumer_list(&mut a, "G").await;
    assert_eq!(
        (code, ids),
        (0, vec!["10.0.0.1@1".into(), "10.0.0.2@2".into()])
    );
    // The retry topic was created by the heartbeat.
    assert!(
        std::fs::read_to_string(b.dir.path().join("config/topics.json"))
            .unwrap()
            .contains("%RETRY%G")
    );

    // A connection that closes leaves the group; the others are told.
    drop(bb);
    assert_eq!(
        notified(&mut a, Duration::from_secs(5)).await.as_deref(),
        Some("G")
    );
    assert_eq!(
        consumer_list(&mut a, "G").await.1,
        vec!["10.0.0.1@1".to_owned()]
    );

    // UNREGISTER_CLIENT removes at once.
    let o = a.opaque();
    let r = a
        .call(
            RemotingCommand::request(RequestCode::UNREGISTER_CLIENT, o).with_header(
                &UnregisterClientRequestHeader {
                    client_id: "10.0.0.1@1".into(),
                    producer_group: Some("CLIENT_INNER_PRODUCER".into()),
                    consumer_group: Some("G".into()),
                },
            ),
        )
        .await;
    assert_eq!(r.code, 0);
    assert_eq!(
        consumer_list(&mut a, "G").await,
        (1, vec![], "no consumer for this group, G".to_owned())
    );
    // A body that does not parse: an error with a reason; the connection keeps working.
    let o = a.opaque();
    let r = a
        .call(RemotingCommand::request(RequestCode::HEART_BEAT, o).with_body(&b"{not json"[..]))
        .await;
    assert_eq!(r.code, 1);
    assert!(remark(&r).contains("does not decode"), "{}", remark(&r));
    assert_eq!(counter(&a.runtime_info().await, "consumerGroupCount"), 0);
    b.stop().await;
}

#[tokio::test]
async fn a_client_without_heartbeats_is_dropped_and_disconnected() {
    let b = TestBroker::start(&[("channelExpiredTimeout", "500")]).await;
    let mut silent = b.client().await;
    silent.heartbeat("10.0.0.3@3", "E", &["T"], "*").await;
    let mut live = b.client().await;
    live.heartbeat("10.0.0.4@4", "E", &["T"], "*").await;
    let start = Instant::now();
    // `live` keeps heartbeating; `silent` stops. The scan runs every 10 s.
    loop {
        live.heartbeat("10.0.0.4@4", "E", &["T"], "*").await;
        let (_, ids, _) = consumer_list(&mut live, "E").await;
        if ids == ["10.0.0.4@4"] {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(25),
            "never expired: {ids:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // RocketMQ closes the expired connection (and, removing it first, sends no notification).
    assert!(silent.is_closed_within(Duration::from_secs(5)).await);
    b.stop().await;
}

fn lock_body(client: &str, queues: &[i32]) -> Vec<u8> {
    let mqs: Vec<_> = queues
        .iter()
        .map(|q| serde_json::json!({"brokerName": "broker-a", "queueId": q, "topic": "T"}))
        .collect();
    serde_json::json!({"clientId": client, "consumerGroup": "OG", "mqSet": mqs, "onlyThisBroker": false})
        .to_string()
        .into_bytes()
}

async fn lock(c: &mut Client, client: &str, queues: &[i32]) -> Vec<i64> {
    let o = c.opaque();
    let r = c
        .call(
            RemotingCommand::request(RequestCode::LOCK_BATCH_MQ, o)
                .with_body(lock_body(client, queues)),
        )
        .await;
    assert_eq!(r.code, 0);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let mut q: Vec<i64> = v["lockOKMQSet"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["queueId"].as_i64().unwrap())
        .collect();
    q.sort();
    q
}

async fn unlock(c: &mut Client, client: &str, queues: &[i32]) {
    let o = c.opaque();
    let r = c
        .call(
            RemotingCommand::request(RequestCode::UNLOCK_BATCH_MQ, o)
                .with_body(lock_body(client, queues)),
        )
        .await;
    assert_eq!(r.code, 0);
}

#[tokio::test]
async fn a_queue_lock_is_refused_until_unlocked_or_expired() {
    let b = TestBroker::start(&[("rebalanceLockMaxLiveTime", "400")]).await;
    let mut a = b.client().await;
    let mut c2 = b.client().await;
    let renewed = Instant::now();
    assert_eq!(lock(&mut a, "A", &[0, 1]).await, [0, 1]);
    assert_eq!(lock(&mut c2, "B", &[0, 2]).await, [2]);
    unlock(&mut c2, "B", &[0]).await; // not the holder: no effect
    assert_eq!(lock(&mut c2, "B", &[0]).await, Vec::<i64>::new());
    unlock(&mut a, "A", &[0]).await;
    assert_eq!(lock(&mut c2, "B", &[0]).await, [0]);
    // A's lock on 1 expires 400 ms after its last renewal.
    // Polled, not slept: B's tries renew nothing of A's, and the first success must come no
    // earlier than the expiry and not long after it.
    loop {
        let got = lock(&mut c2, "B", &[1]).await;
        if got == [1] {
            break;
        }
        assert_eq!(got, Vec::<i64>::new());
        assert!(renewed.elapsed() < Duration::from_secs(10), "never expired");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        renewed.elapsed() >= Duration::from_millis(400),
        "expired early: {:?}",
        renewed.elapsed()
    );
    assert_eq!(lock(&mut a, "A", &[1]).await, Vec::<i64>::new());
    // A body that does not parse.
    let o = a.opaque();
    let r = a
        .call(RemotingCommand::request(RequestCode::LOCK_BATCH_MQ, o).with_body(&b"[1,2"[..]))
        .await;
    assert_eq!(r.code, 1);
    assert!(remark(&r).starts_with("the lock batch body does not decode"));
    assert_eq!(counter(&a.runtime_info().await, "rebalanceLockCount"), 3);
    b.stop().await;
}

fn query(o: i32, group: &str, topic: &str, q: i32, zero: Option<bool>) -> RemotingCommand {
    RemotingCommand::request(RequestCode::QUERY_CONSUMER_OFFSET, o).with_header(
        &QueryConsumerOffsetRequestHeader {
            consumer_group: group.into(),
            topic: topic.into(),
            queue_id: q,
            set_zero_if_not_found: zero,
        },
    )
}

fn update(o: i32, group: &str, topic: &str, q: i32, offset: i64) -> RemotingCommand {
    RemotingCommand::request(RequestCode::UPDATE_CONSUMER_OFFSET, o).with_header(
        &UpdateConsumerOffsetRequestHeader {
            consumer_group: group.into(),
            topic: topic.into(),
            queue_id: q,
            commit_offset: offset,
        },
    )
}

#[tokio::test]
async fn offset_calls_follow_the_profile() {
    // 4.x: no checks on update; a young or empty queue without an offset answers 0.
    let b = TestBroker::start(&[("brokerVersionProfile", "4.9")]).await;
    let mut c = b.client().await;
    let r = c.call(query(1, "NG", "Nowhere", 0, None)).await;
    assert_eq!((r.code, r.ext("offset")), (0, Some("0")));
    assert_eq!(c.call(update(2, "NG", "Nowhere", 0, 7)).await.code, 0);
    assert_eq!(
        c.call(query(3, "NG", "Nowhere", 0, None))
            .await
            .ext("offset"),
        Some("7")
    );
    // A stored negative offset reads as none.
    assert_eq!(c.call(update(4, "NG", "Nowhere", 0, -1)).await.code, 0);
    assert_eq!(
        c.call(query(5, "NG", "Nowhere", 0, None))
            .await
            .ext("offset"),
        Some("0")
    );
    b.stop().await;

    // 5.3: 22 for an empty queue; 0 when the first message is in the page cache; checks on update.
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    let r = c.call(query(1, "G5", "Fresh", 0, None)).await;
    assert_eq!(
        (r.code, remark(&r)),
        (
            22,
            "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
        )
    );
    assert_eq!(c.call(send_v2(2, "Fresh", 0, b"x")).await.code, 0);
    c.dispatched().await;
    let r = c.call(query(3, "G5", "Fresh", 0, None)).await;
    assert_eq!((r.code, r.ext("offset")), (0, Some("0")));
    let r = c.call(query(4, "G5", "Fresh", 0, Some(false))).await;
    assert_eq!(
        (r.code, remark(&r)),
        (
            22,
            "Not found, do not set to zero, maybe this group boot first"
        )
    );
    let r = c.call(update(5, "G5", "Fresh", 0, 1)).await;
    assert_eq!((r.code, remark(&r)), (26, "Group G5 not exist!"));
    c.heartbeat("10.0.0.9@9", "G5", &["Fresh"], "*").await;
    let r = c.call(update(6, "G5", "Nowhere", 0, 1)).await;
    assert_eq!((r.code, remark(&r)), (17, "Topic Nowhere not exist!"));
    let mut no_queue = update(7, "G5", "Fresh", 0, 1);
    no_queue.ext_fields.remove("queueId");
    let r = c.call(no_queue).await;
    assert_eq!(
        (r.code, remark(&r)),
        (29, "QueueId is null, topic is Fresh")
    );
    assert_eq!(c.call(update(8, "G5", "Fresh", 0, 1)).await.code, 0);
    assert_eq!(
        c.call(query(9, "G5", "Fresh", 0, None)).await.ext("offset"),
        Some("1")
    );
    b.stop().await;
}
