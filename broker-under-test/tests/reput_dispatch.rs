//! ReputMessageService on the wire: GET_BROKER_RUNTIME_INFO's `dispatchBehindBytes` shows the
//! backlog while the thread is held back (`injectReputStallMillis`) and 0 once it caught up, and
//! a held long-poll pull is woken by that thread's dispatch, not by the send.

mod common;

use std::time::{Duration, Instant};

use common::{counter, send_v2, Client, TestBroker};
use remoting::{
    headers::PullMessageRequestHeader, message::decode_records, RemotingCommand, RequestCode,
};

const STALL_MS: u64 = 1_500;

fn long_poll(opaque: i32, topic: &str, offset: i64) -> RemotingCommand {
    RemotingCommand::request(RequestCode::PULL_MESSAGE, opaque).with_header(
        &PullMessageRequestHeader {
            consumer_group: "reput-group".into(),
            topic: topic.into(),
            queue_id: 0,
            queue_offset: offset,
            max_msg_nums: 32,
            // SUSPEND | SUBSCRIPTION
            sys_flag: 0x2 | 0x4,
            commit_offset: 0,
            suspend_timeout_millis: 15_000,
            subscription: Some("*".into()),
            sub_version: 0,
            expression_type: Some("TAG".into()),
            max_msg_bytes: None,
        },
    )
}

async fn behind(c: &mut Client) -> u64 {
    counter(&c.runtime_info().await, "dispatchBehindBytes")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatch_behind_bytes_shows_the_backlog_until_the_reput_catches_up() {
    let stall = STALL_MS.to_string();
    let b = TestBroker::start(&[("injectReputStallMillis", &stall)]).await;
    let mut c = b.client().await;
    assert_eq!(behind(&mut c).await, 0);
    let answer = c.call(send_v2(1, "Behind", 0, &[b'x'; 200])).await;
    assert_eq!(answer.code, 0, "{:?}", answer.remark);
    let sent = Instant::now();
    let first = behind(&mut c).await;
    // Well inside the stall: the record is readable but has no consume-queue entry.
    assert!(sent.elapsed() < Duration::from_millis(STALL_MS));
    assert!(
        first > 200,
        "dispatchBehindBytes {first} right after the send"
    );
    // The pull sees nothing yet.
    let pulled = c.pull_all("Behind", 0).await;
    assert!(pulled.is_empty() || sent.elapsed() >= Duration::from_millis(STALL_MS));
    c.dispatched().await;
    assert_eq!(behind(&mut c).await, 0);
    assert_eq!(c.pull_all("Behind", 0).await.len(), 1);
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_pull_is_woken_by_the_reput_thread() {
    let stall = STALL_MS.to_string();
    let b = TestBroker::start(&[("injectReputStallMillis", &stall)]).await;
    let mut producer = b.client().await;
    assert_eq!(
        producer.call(send_v2(1, "Woken", 0, b"first")).await.code,
        0
    );
    producer.dispatched().await;
    let mut consumer = b.client().await;
    consumer.send(&long_poll(100, "Woken", 1)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while counter(&producer.runtime_info().await, "pullRequestHoldCount") != 1 {
        assert!(Instant::now() < deadline, "the pull was never held");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let answer = producer.call(send_v2(2, "Woken", 0, b"second")).await;
    assert_eq!(answer.code, 0);
    let sent = Instant::now();
    // The send is answered and the pull is still held: the send thread woke nobody.
    let info = producer.runtime_info().await;
    assert!(sent.elapsed() < Duration::from_millis(STALL_MS));
    assert_eq!(counter(&info, "pullRequestHoldCount"), 1);
    assert!(counter(&info, "dispatchBehindBytes") > 0);
    let r = consumer.read().await;
    let woken = sent.elapsed();
    assert_eq!((r.opaque, r.code), (100, 0), "{:?}", r.remark);
    assert_eq!(decode_records(&r.body).unwrap()[0].body, b"second");
    eprintln!("held pull answered {woken:?} after the send (reput stall {STALL_MS} ms)");
    // Not before the reput got to it, and long before the 15 s hold ran out.
    assert!(woken >= Duration::from_millis(STALL_MS / 2), "{woken:?}");
    assert!(woken < Duration::from_secs(10), "{woken:?}");
    assert_eq!(behind(&mut producer).await, 0);
    b.stop().await;
}
