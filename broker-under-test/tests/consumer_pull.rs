//! PULL_MESSAGE as PullMessageProcessor answers it (consumer §2, §4): subscriptions from the
//! header or the heartbeat, TAG filtering, the per-pull limits, the answers per store status.

mod common;

use common::{props, remark, send_v2, Client, TestBroker};
use remoting::{
    headers::{PullMessageRequestHeader, QueryConsumerOffsetRequestHeader},
    message::decode_records,
    RemotingCommand, RequestCode,
};

const FAQ_5X: &str =
    "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.";

fn pull(
    o: i32,
    group: &str,
    topic: &str,
    q: i32,
    offset: i64,
    flag: i32,
) -> PullMessageRequestHeader {
    let _ = o;
    PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id: q,
        queue_offset: offset,
        max_msg_nums: 1000,
        sys_flag: flag,
        commit_offset: 0,
        suspend_timeout_millis: 0,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
    }
}

async fn call(c: &mut Client, h: PullMessageRequestHeader) -> RemotingCommand {
    let o = c.opaque();
    c.call(RemotingCommand::request(RequestCode::PULL_MESSAGE, o).with_header(&h))
        .await
}

/// A send with a TAGS property (none for `None`).
async fn send_tagged(c: &mut Client, topic: &str, body: &[u8], tag: Option<&str>) {
    let o = c.opaque();
    let mut cmd = send_v2(o, topic, 0, body);
    let mut pairs = vec![("WAIT", "true")];
    if let Some(t) = tag {
        pairs.push(("TAGS", t));
    }
    cmd.ext_fields.insert("i".into(), props(&pairs));
    assert_eq!(c.call(cmd).await.code, 0);
    c.dispatched().await;
}

#[tokio::test]
async fn subscriptions_come_from_the_header_or_the_heartbeat() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    for (i, tag) in [Some("TagA"), Some("TagC"), Some("TagB"), None, Some("TagA")]
        .into_iter()
        .enumerate()
    {
        send_tagged(&mut c, "Tagged", format!("m{i}").as_bytes(), tag).await;
    }
    // No SUBSCRIPTION flag and no heartbeat: 24.
    let r = call(&mut c, pull(0, "SG", "Tagged", 0, 0, 0)).await;
    assert_eq!(
        (r.code, remark(&r).to_owned()),
        (24, format!("the consumer's group info not exist{FAQ_5X}"))
    );
    // The heartbeat's subscription filters by tag hash.
    c.heartbeat("10.0.0.7@7", "SG", &["Tagged"], "TagA || TagB")
        .await;
    let r = call(&mut c, pull(0, "SG", "Tagged", 0, 0, 0)).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let bodies: Vec<Vec<u8>> = decode_records(&r.body)
        .unwrap()
        .into_iter()
        .map(|m| m.body)
        .collect();
    assert_eq!(bodies, [b"m0".to_vec(), b"m2".to_vec(), b"m4".to_vec()]);
    assert_eq!(r.ext("nextBeginOffset"), Some("5"));
    // Only filtered-out entries: 20, the scanned entries skipped.
    let r = call(&mut c, pull(0, "SG", "Tagged", 0, 3, 0)).await;
    assert_eq!(r.code, 0);
    let mut only_c = pull(0, "SG", "Tagged", 0, 1, 0x4);
    only_c.subscription = Some("TagB".into());
    only_c.max_msg_nums = 1;
    let r = call(&mut c, only_c.clone()).await;
    assert_eq!(r.code, 0, "TagB at offset 2");
    only_c.subscription = Some("TagZ".into());
    let r = call(&mut c, only_c).await;
    assert_eq!((r.code, remark(&r)), (20, "NO_MATCHED_MESSAGE"));
    assert_eq!(r.ext("nextBeginOffset"), Some("5"));
    // A topic the group did not subscribe to, and a newer subVersion than registered.
    let r = call(&mut c, pull(0, "SG", "%RETRY%SG", 0, 0, 0)).await;
    assert_eq!(r.code, 24);
    assert!(remark(&r).starts_with("the consumer's subscription not exist\nSee"));
    let mut newer = pull(0, "SG", "Tagged", 0, 0, 0);
    newer.sub_version = 1_717_000_000_001;
    let r = call(&mut c, newer).await;
    assert_eq!(
        (r.code, remark(&r)),
        (25, "the consumer's subscription not latest")
    );
    // Non-TAG expressions are not supported by default.
    let mut sql = pull(0, "SG", "Tagged", 0, 0, 0x4);
    sql.expression_type = Some("SQL92".into());
    let r = call(&mut c, sql).await;
    assert_eq!(
        (r.code, remark(&r)),
        (
            1,
            "The broker does not support consumer to filter message by SQL92"
        )
    );
    b.stop().await;
}

#[tokio::test]
async fn unknown_groups_and_queues_per_profile() {
    let b = TestBroker::start(&[("autoCreateSubscriptionGroup", "false")]).await;
    let mut c = b.client().await;
    send_tagged(&mut c, "Q", b"x", None).await;
    let r = call(&mut c, pull(0, "Nobody", "Q", 0, 0, 4)).await;
    assert_eq!(
        (r.code, remark(&r).to_owned()),
        (
            26,
            format!("subscription group [Nobody] does not exist, {FAQ_5X}")
        )
    );
    // System groups are created anyway.
    let r = call(&mut c, pull(0, "CID_RMQ_SYS_X", "Q", 9, 0, 4)).await;
    assert_eq!(r.code, 29, "5.3.2+: INVALID_PARAMETER");
    assert!(remark(&r).starts_with(
        "queueId[9] is illegal, topic:[Q] topicConfig.readQueueNums:[4] consumer:[/127.0.0.1:"
    ));
    b.stop().await;

    for (profile, next_badly, bad_queue) in [("4.3", "0", 1), ("4.9", "1", 1)] {
        let b = TestBroker::start(&[("brokerVersionProfile", profile)]).await;
        let mut c = b.client().await;
        send_tagged(&mut c, "Q", b"x", None).await;
        let r = call(&mut c, pull(0, "G", "Q", 0, 100, 4)).await;
        assert_eq!(
            (r.code, remark(&r)),
            (21, "OFFSET_OVERFLOW_BADLY"),
            "{profile}"
        );
        assert_eq!(r.ext("nextBeginOffset"), Some(next_badly), "{profile}");
        assert_eq!(
            call(&mut c, pull(0, "G", "Q", -1, 0, 4)).await.code,
            bad_queue
        );
        let r = call(&mut c, pull(0, "G", "Q", 1, 3, 4)).await;
        assert_eq!(
            (r.code, remark(&r)),
            (21, "NO_MESSAGE_IN_QUEUE"),
            "empty queue, offset ≠ 0"
        );
        assert_eq!(r.ext("nextBeginOffset"), Some("0"));
        b.stop().await;
    }
}

#[tokio::test]
async fn a_pull_is_capped_by_the_in_memory_or_on_disk_limits() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    for i in 0..40 {
        send_tagged(&mut c, "Big", &vec![b'a' + (i % 26) as u8; 60_000], None).await;
        send_tagged(&mut c, "Small", format!("s{i}").as_bytes(), None).await;
    }
    let count = |r: &RemotingCommand| decode_records(&r.body).unwrap().len();
    // 32 messages in memory, whatever maxMsgNums says.
    let r = call(&mut c, pull(0, "G", "Small", 0, 0, 4)).await;
    assert_eq!((r.code, count(&r)), (0, 32));
    // 256 KiB: four 60 KB records fit, a fifth would not.
    let r = call(&mut c, pull(0, "G", "Big", 0, 0, 4)).await;
    assert_eq!((r.code, count(&r)), (0, 4));
    assert_eq!(r.ext("nextBeginOffset"), Some("4"));
    b.stop().await;

    // accessMessageInMemoryMaxRatio=0: everything is "on disk": 8 messages, 64 KiB.
    let b = TestBroker::start(&[("accessMessageInMemoryMaxRatio", "0")]).await;
    let mut c = b.client().await;
    for i in 0..20 {
        send_tagged(&mut c, "Small", format!("s{i}").as_bytes(), None).await;
        send_tagged(&mut c, "Big", &[b'z'; 60_000], None).await;
    }
    let r = call(&mut c, pull(0, "G", "Small", 0, 0, 4)).await;
    // The last record sits at the CommitLog head minus its own size, so only it may count as
    // in memory; a pull from 0 stops at 8.
    assert_eq!(count(&r), 8);
    let r = call(&mut c, pull(0, "G", "Big", 0, 0, 4)).await;
    assert_eq!(
        count(&r),
        1,
        "the first message always fits, the second passes 64 KiB"
    );
    b.stop().await;
}

#[tokio::test]
async fn a_pull_commits_its_offset_on_the_first_run_only() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    send_tagged(&mut c, "C", b"x", None).await;
    let mut h = pull(0, "CG", "C", 0, 0, 0x1 | 0x4);
    h.commit_offset = 1;
    assert_eq!(call(&mut c, h).await.code, 0);
    let o = c.opaque();
    let r = c
        .call(
            RemotingCommand::request(RequestCode::QUERY_CONSUMER_OFFSET, o).with_header(
                &QueryConsumerOffsetRequestHeader {
                    consumer_group: "CG".into(),
                    topic: "C".into(),
                    queue_id: 0,
                    set_zero_if_not_found: None,
                },
            ),
        )
        .await;
    assert_eq!((r.code, r.ext("offset")), (0, Some("1")));
    b.stop().await;
}

#[tokio::test]
async fn the_fast_port_serves_the_same_broker() {
    let b = TestBroker::start(&[]).await;
    let Some(fast) = b.broker.as_ref().unwrap().fast_addr else {
        // The ephemeral port's neighbour was taken: nothing to check this time.
        b.stop().await;
        return;
    };
    assert_eq!(fast.port() + 2, b.addr().port());
    let mut main = b.client().await;
    send_tagged(&mut main, "Fast", b"x", None).await;
    let mut vip = Client::connect(fast).await;
    assert_eq!(vip.pull_all("Fast", 0).await.len(), 1);
    b.stop().await;
}
