//! CONSUMER_SEND_MSG_BACK (36) and the schedule service on the wire (retention-retry
//! reference B2, B4): the request headers are written by hand, field by field as
//! ConsumerSendMsgBackRequestHeader names them, so a bug shared by our encoder and decoder
//! cannot hide here. Delays are shortened with RocketMQ's own `messageDelayLevel` key.

mod common;

use std::time::{Duration, Instant};

use broker_under_test::{config::BrokerConfig, RunningBroker};
use common::*;
use remoting::message::{property, MessageRecord};
use remoting::RemotingCommand;

/// Level 3 (the first retry of a message consumed once) is 2 s; level 1 and 4 are 1 s.
const LEVELS: &str = "1s 1s 2s 1s 3s 1s";

fn frame(header: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&((4 + header.len()) as u32).to_be_bytes());
    f.extend_from_slice(&(header.len() as u32).to_be_bytes());
    f.extend_from_slice(header);
    f
}

/// A send-back request as the Java client writes it (B2.1), JSON header by hand.
fn send_back_frame(
    opaque: i32,
    offset: i64,
    group: &str,
    delay_level: i32,
    max: Option<i32>,
) -> Vec<u8> {
    let max = max.map_or(String::new(), |m| format!(r#","maxReconsumeTimes":"{m}""#));
    let header = format!(
        r#"{{"code":36,"extFields":{{"bname":"broker-a","delayLevel":"{delay_level}","group":"{group}","offset":"{offset}","originMsgId":"7F00000100002A9F0000000000000000","originTopic":"T"{max},"unitMode":"false"}},"flag":0,"language":"JAVA","opaque":{opaque},"serializeTypeCurrentRPC":"JSON","version":401}}"#
    );
    frame(header.as_bytes())
}

async fn send_back(
    c: &mut Client,
    offset: i64,
    group: &str,
    level: i32,
    max: Option<i32>,
) -> RemotingCommand {
    let o = c.opaque();
    c.write_raw(&send_back_frame(o, offset, group, level, max))
        .await;
    loop {
        let r = c.read().await;
        if r.opaque == o {
            return r;
        }
    }
}

async fn send_one(c: &mut Client, topic: &str, body: &[u8]) -> MessageRecord {
    let o = c.opaque();
    let r = c.call(send_v2(o, topic, 0, body)).await;
    assert_eq!(r.code, 0, "send: {:?}", r.remark);
    // The answer comes before ReputMessageService has written the consume-queue entry.
    c.dispatched().await;
    c.pull_all(topic, 0)
        .await
        .pop()
        .expect("the message just sent")
}

/// Waits until `topic`/`queue` holds `n` messages; returns them and when the n-th showed up.
async fn wait_for(
    c: &mut Client,
    topic: &str,
    queue: i32,
    n: usize,
    within: Duration,
) -> (Vec<MessageRecord>, Instant) {
    let deadline = Instant::now() + within;
    loop {
        let got = c.pull_all(topic, queue).await;
        if got.len() >= n {
            return (got, Instant::now());
        }
        assert!(
            Instant::now() < deadline,
            "{topic}/{queue}: {} of {n} messages",
            got.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_sent_back_message_returns_in_the_retry_topic_after_its_level_then_dead_letters() {
    let b = TestBroker::start(&[("messageDelayLevel", LEVELS)]).await;
    let mut c = b.client().await;
    let first = send_one(&mut c, "T", b"payload").await;
    let uniq = property(&first.properties, "UNIQ_KEY").unwrap().to_owned();

    let r = send_back(&mut c, first.physical_offset, "G", 0, Some(1)).await;
    assert_eq!((r.code, r.remark.as_deref()), (0, None));
    let answered = Instant::now();
    // Level 3 + 0: parked in SCHEDULE_TOPIC_XXXX queue 2, not yet in the retry topic.
    // Waited for, not read at once: the consume queue may be built by another thread.
    let (parked, _) = wait_for(&mut c, "SCHEDULE_TOPIC_XXXX", 2, 1, Duration::from_secs(20)).await;
    assert_eq!(parked.len(), 1);
    assert_eq!(
        property(&parked[0].properties, "REAL_TOPIC"),
        Some("%RETRY%G")
    );
    assert_eq!(property(&parked[0].properties, "REAL_QID"), Some("0"));
    assert_eq!(property(&parked[0].properties, "DELAY"), Some("3"));

    let (retry, at) = wait_for(&mut c, "%RETRY%G", 0, 1, Duration::from_secs(20)).await;
    let waited = at - answered;
    // Due 2 s after the store time; the pick-up adds at most a 100 ms round (and our polling).
    assert!(
        waited >= Duration::from_millis(1_900),
        "back after {waited:?}"
    );
    let m = &retry[0];
    assert!(m.store_timestamp - parked[0].store_timestamp >= 2_000);
    assert_eq!(m.reconsume_times, 1);
    assert_eq!(m.body, b"payload");
    assert_eq!(property(&m.properties, "RETRY_TOPIC"), Some("T"));
    assert_eq!(property(&m.properties, "UNIQ_KEY"), Some(uniq.as_str()));
    assert_eq!(property(&m.properties, "DELAY"), None);
    assert_eq!(property(&m.properties, "WAIT"), Some("false"));
    let origin = property(&m.properties, "ORIGIN_MESSAGE_ID")
        .unwrap()
        .to_owned();
    assert_eq!(
        origin,
        remoting::message::offset_msg_id(first.store_host, first.physical_offset)
    );
    assert_eq!(m.born_timestamp, first.born_timestamp);

    // Consumed once more and failed again: reconsumeTimes 1 ≥ maxReconsumeTimes 1 → DLQ at once.
    let r = send_back(&mut c, m.physical_offset, "G", 0, Some(1)).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let (dlq, _) = wait_for(&mut c, "%DLQ%G", 0, 1, Duration::from_secs(20)).await;
    assert_eq!(dlq.len(), 1);
    assert_eq!(dlq[0].reconsume_times, 2);
    assert_eq!(property(&dlq[0].properties, "DELAY"), Some("0"));
    assert_eq!(
        property(&dlq[0].properties, "ORIGIN_MESSAGE_ID"),
        Some(origin.as_str())
    );
    assert_eq!(property(&dlq[0].properties, "RETRY_TOPIC"), Some("T"));

    // delayLevel −1: straight to the DLQ whatever the count.
    let other = send_one(&mut c, "T", b"x").await;
    assert_eq!(
        send_back(&mut c, other.physical_offset, "G", -1, None)
            .await
            .code,
        0
    );
    wait_for(&mut c, "%DLQ%G", 0, 2, Duration::from_secs(20)).await;

    let info = c.runtime_info().await;
    assert_eq!(counter(&info, "SNDBCK_PUT_NUMS"), 3);
    assert_eq!(counter(&info, "SNDBCK2DLQ_TIMES"), 2);
    assert_eq!(counter(&info, "scheduleMessagePutNums_3"), 1);
    // The DLQ is written directly, never through SCHEDULE_TOPIC_XXXX.
    assert_eq!(counter(&info, "scheduleMessagePutNums"), 1);
    assert_eq!(counter(&info, "scheduleMessageDeliverNums"), 1);
    assert_eq!(info["scheduleMessageOffset_3"], "1,1");
    b.stop().await;
}

#[tokio::test]
async fn failures_answer_with_rocketmq_s_codes_and_remarks() {
    let b = TestBroker::start(&[("autoCreateSubscriptionGroup", "false")]).await;
    let mut c = b.client().await;
    let r = send_back(&mut c, 0, "NoSuchGroup", 0, None).await;
    assert_eq!(r.code, 26);
    assert_eq!(
        remark(&r),
        "subscription group not exist, NoSuchGroup \nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
    );
    b.stop().await;

    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    send_one(&mut c, "T", b"x").await;
    let r = send_back(&mut c, 99_999_999, "G", 0, None).await;
    assert_eq!(
        (r.code, remark(&r)),
        (1, "look message by offset failed, 99999999")
    );
    // A missing required field is refused before anything else.
    let o = c.opaque();
    let header = format!(
        r#"{{"code":36,"extFields":{{"group":"G","delayLevel":"0"}},"flag":0,"language":"JAVA","opaque":{o},"serializeTypeCurrentRPC":"JSON","version":401}}"#
    );
    c.write_raw(&frame(header.as_bytes())).await;
    let r = c.read().await;
    assert_eq!(
        (r.code, remark(&r)),
        (1, "the custom field <offset> is null")
    );
    let info = c.runtime_info().await;
    assert_eq!(counter(&info, "sndbckFailedNums"), 2);
    assert_eq!(counter(&info, "SNDBCK_PUT_NUMS"), 0);
    // The delay topic itself takes no sends (4.9/5.3).
    let o = c.opaque();
    let r = c.call(send_v2(o, "SCHEDULE_TOPIC_XXXX", 0, b"x")).await;
    assert_eq!(
        (r.code, remark(&r)),
        (
            16,
            "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden."
        )
    );
    b.stop().await;
}

#[tokio::test]
async fn a_producer_s_delay_property_takes_the_same_road() {
    let b = TestBroker::start(&[("messageDelayLevel", LEVELS)]).await;
    let mut c = b.client().await;
    let o = c.opaque();
    let mut req = send_v2(o, "D", 1, b"later");
    let h: remoting::headers::SendMessageRequestHeaderV2 = req.header().unwrap();
    let mut h = h;
    h.i = Some(props(&[
        ("WAIT", "true"),
        ("UNIQ_KEY", "U1"),
        ("DELAY", "1"),
    ]));
    req = req.with_header(&h);
    let sent = Instant::now();
    assert_eq!(c.call(req).await.code, 0);
    assert!(c.pull_all("D", 1).await.is_empty(), "not before its delay");
    let (got, at) = wait_for(&mut c, "D", 1, 1, Duration::from_secs(20)).await;
    assert!(at - sent >= Duration::from_millis(900), "{:?}", at - sent);
    assert_eq!(got[0].body, b"later");
    assert_eq!(got[0].reconsume_times, 0);
    assert_eq!(property(&got[0].properties, "REAL_TOPIC"), Some("D"));
    b.stop().await;
}

#[tokio::test]
async fn the_schedule_survives_a_restart_without_repeating_deliveries() {
    let overrides = [("messageDelayLevel", "1s 1s 1s 3s"), ("listenPort", "0")];
    let mut b = TestBroker::start(&overrides).await;
    let mut c = b.client().await;
    let first = send_one(&mut c, "T", b"one").await;
    let second = send_one(&mut c, "T", b"two").await;
    // Level 3 (1 s) for the first; level 4 (3 s) for the second, due after the restart.
    assert_eq!(
        send_back(&mut c, first.physical_offset, "G", 3, None)
            .await
            .code,
        0
    );
    wait_for(&mut c, "%RETRY%G", 0, 1, Duration::from_secs(20)).await;
    assert_eq!(
        send_back(&mut c, second.physical_offset, "G", 4, None)
            .await
            .code,
        0
    );
    drop(c);
    b.broker.take().unwrap().stop().await.unwrap();
    let file = std::fs::read_to_string(b.dir.path().join("config/delayOffset.json")).unwrap();
    assert!(file.contains("\"offsetTable\""), "{file}");
    assert!(file.contains("\t\t3:1"), "level 3 delivered one: {file}");

    let config = BrokerConfig::for_test(b.dir.path(), &overrides).unwrap();
    b.broker = Some(RunningBroker::start(config).await.unwrap());
    let mut c = b.client().await;
    let (retry, _) = wait_for(&mut c, "%RETRY%G", 0, 2, Duration::from_secs(20)).await;
    assert_eq!(retry.len(), 2);
    assert_eq!(retry[1].body, b"two");
    // Both levels' delivered offsets reach their ends (`delivered,max` = 1,1): the schedule has
    // nothing left to deliver, and a repeat would have been put before its offset moved, so
    // the retry queue holds each message once.
    let addr = b.addr();
    common::wait_for(
        "both levels' delivered offsets at their ends",
        || async move {
            let info = common::info(addr).await;
            (info["scheduleMessageOffset_3"] == "1,1" && info["scheduleMessageOffset_4"] == "1,1")
                .then_some(())
        },
    )
    .await;
    assert_eq!(c.pull_all("%RETRY%G", 0).await.len(), 2);
    b.stop().await;
}

/// The Java client's fallback: a plain send to `%RETRY%<group>` carrying the counts; 4.x
/// dead-letters at `reconsumeTimes ≥ max`, 5.x only above it, with DELAY=-1 (reference B3).
#[tokio::test]
async fn a_plain_send_to_the_retry_topic_dead_letters_by_each_release_s_rule() {
    for (profile, times, dlq) in [("4.9", 16, true), ("5.3", 16, false), ("5.3", 17, true)] {
        let b = TestBroker::start(&[("brokerVersionProfile", profile)]).await;
        let mut c = b.client().await;
        let o = c.opaque();
        let req = send_v1(o, "%RETRY%G", 0, b"fallback");
        let mut h: remoting::headers::SendMessageRequestHeader = req.header().unwrap();
        h.reconsume_times = Some(times);
        h.max_reconsume_times = Some(16);
        let r = c.call(req.with_header(&h)).await;
        assert_eq!(r.code, 0, "{profile}: {:?}", r.remark);
        let (stored, other) = if dlq {
            ("%DLQ%G", "%RETRY%G")
        } else {
            ("%RETRY%G", "%DLQ%G")
        };
        let (in_stored, _) = wait_for(&mut c, stored, 0, 1, Duration::from_secs(20)).await;
        assert_eq!(in_stored.len(), 1, "{profile} {times}");
        assert!(c.pull_all(other, 0).await.is_empty(), "{profile} {times}");
        if dlq && profile == "5.3" {
            assert_eq!(property(&in_stored[0].properties, "DELAY"), Some("-1"));
        }
        b.stop().await;
    }
}

/// Audit #22 (fidelity-after-wave-3): a request of version ≥ 121 (here 401) without
/// `maxReconsumeTimes` is a NullPointerException on 4.3.2 (the header's Integer unboxed,
/// SendMessageProcessor l.178 and l.268), answered 1 by the remoting layer; 4.9 takes the
/// group's limit and stores the retry.
#[tokio::test]
async fn a_request_without_max_reconsume_times_fails_on_4_3_only() {
    for profile in ["4.3", "4.9"] {
        let b = TestBroker::start(&[("brokerVersionProfile", profile)]).await;
        let mut c = b.client().await;
        let m = send_one(&mut c, "T", b"x").await;
        let r = send_back(&mut c, m.physical_offset, "G", 0, None).await;
        let o = c.opaque();
        let req = send_v1(o, "%RETRY%G", 0, b"fallback");
        let mut h: remoting::headers::SendMessageRequestHeader = req.header().unwrap();
        h.reconsume_times = Some(1);
        h.max_reconsume_times = None;
        let plain = c.call(req.with_header(&h)).await;
        if profile == "4.3" {
            let npe = "java.lang.NullPointerException, org.apache.rocketmq.broker.processor.SendMessageProcessor.";
            assert_eq!(
                (r.code, remark(&r)),
                (
                    1,
                    &*format!("{npe}consumerSendMsgBack(SendMessageProcessor.java:178)")
                )
            );
            assert_eq!(
                (plain.code, remark(&plain)),
                (
                    1,
                    &*format!("{npe}handleRetryAndDLQ(SendMessageProcessor.java:268)")
                )
            );
        } else {
            assert_eq!(
                (r.code, plain.code),
                (0, 0),
                "{:?} {:?}",
                r.remark,
                plain.remark
            );
        }
        b.stop().await;
    }
}

/// A SEND_MESSAGE_V2 (310) to `%RETRY%<group>` as an orderly consumer's inner producer writes
/// it for a message at its retry limit (ConsumeMessageOrderlyService.sendMessageBack, 4.9.8
/// l.377-398): header `j` (reconsumeTimes) = r for a 4.x client (r + 1 from 5.1.1), `l`
/// (maxReconsumeTimes), property DELAY = 3 + r; JSON header and properties by hand.
fn retry_send_frame(opaque: i32, group: &str, r: i32, max: i32, body: &[u8]) -> Vec<u8> {
    let delay = 3 + r;
    let props = format!(
        r"DELAY\u0001{delay}\u0002RETRY_TOPIC\u0001T\u0002UNIQ_KEY\u0001ORDERLY{opaque:025}\u0002WAIT\u0001true\u0002"
    );
    let header = format!(
        r#"{{"code":310,"extFields":{{"a":"CLIENT_INNER_PRODUCER","b":"%RETRY%{group}","c":"TBW102","d":"4","e":"0","f":"0","g":"1700000000000","h":"0","i":"{props}","j":"{r}","k":"false","l":"{max}","m":"false"}},"flag":0,"language":"JAVA","opaque":{opaque},"serializeTypeCurrentRPC":"JSON","version":401}}"#
    );
    let mut f = Vec::new();
    f.extend_from_slice(&((4 + header.len() + body.len()) as u32).to_be_bytes());
    f.extend_from_slice(&(header.len() as u32).to_be_bytes());
    f.extend_from_slice(header.as_bytes());
    f.extend_from_slice(body);
    f
}

async fn retry_send(c: &mut Client, group: &str, r: i32, max: i32, body: &[u8]) -> RemotingCommand {
    let o = c.opaque();
    c.write_raw(&retry_send_frame(o, group, r, max, body)).await;
    loop {
        let answer = c.read().await;
        if answer.opaque == o {
            return answer;
        }
    }
}

/// LOCK_BATCH_MQ (41) or UNLOCK_BATCH_MQ (42) of queue 0 of topic T for `group`, body by hand.
async fn lock_frame(c: &mut Client, code: i32, group: &str, client: &str) -> RemotingCommand {
    let o = c.opaque();
    let header = format!(
        r#"{{"code":{code},"flag":0,"language":"JAVA","opaque":{o},"serializeTypeCurrentRPC":"JSON","version":401}}"#
    );
    let body = format!(
        r#"{{"clientId":"{client}","consumerGroup":"{group}","mqSet":[{{"brokerName":"broker-a","queueId":0,"topic":"T"}}]}}"#
    );
    let mut f = Vec::new();
    f.extend_from_slice(&((4 + header.len() + body.len()) as u32).to_be_bytes());
    f.extend_from_slice(&(header.len() as u32).to_be_bytes());
    f.extend_from_slice(header.as_bytes());
    f.extend_from_slice(body.as_bytes());
    c.write_raw(&f).await;
    loop {
        let answer = c.read().await;
        if answer.opaque == o {
            assert_eq!(answer.code, 0, "{code}: {:?}", answer.remark);
            return answer;
        }
    }
}

/// 5.3 (5.3.3 SendMessageProcessor.handleRetryAndDLQ l.201-209, DELAY=-1 l.217; since 5.1.1):
/// while the group holds an unexpired queue lock, a send to its retry topic goes to the DLQ at
/// once, whatever the count. A 4.x orderly client sends r = max, which 5.x's `>` alone sends
/// back to the retry topic: released, the same send is parked for level 3 + r instead.
#[tokio::test]
async fn on_5_3_a_retry_send_of_a_group_holding_a_lock_goes_to_the_dlq_at_once() {
    let b = TestBroker::start(&[
        ("brokerVersionProfile", "5.3"),
        ("messageDelayLevel", LEVELS),
    ])
    .await;
    let mut c = b.client().await;
    let granted = lock_frame(&mut c, 41, "OG", "orderly-client").await;
    assert!(String::from_utf8_lossy(&granted.body).contains("\"queueId\":0"));
    let r = retry_send(&mut c, "OG", 1, 1, b"orderly").await;
    assert_eq!((r.code, r.remark.as_deref()), (0, None));
    let (dlq, _) = wait_for(&mut c, "%DLQ%OG", 0, 1, Duration::from_secs(20)).await;
    let m = &dlq[0];
    assert_eq!(m.body, b"orderly");
    assert_eq!(m.reconsume_times, 1, "the header's count, as sent");
    assert_eq!(property(&m.properties, "DELAY"), Some("-1"));
    assert_eq!(property(&m.properties, "RETRY_TOPIC"), Some("T"));
    c.dispatched().await;
    assert!(c.pull_all("SCHEDULE_TOPIC_XXXX", 3).await.is_empty());

    // Unlocked, the group holds no lock: 1 > 1 is false, so to the retry topic at level 4.
    lock_frame(&mut c, 42, "OG", "orderly-client").await;
    let r = retry_send(&mut c, "OG", 1, 1, b"orderly").await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let (parked, _) = wait_for(&mut c, "SCHEDULE_TOPIC_XXXX", 3, 1, Duration::from_secs(20)).await;
    assert_eq!(
        property(&parked[0].properties, "REAL_TOPIC"),
        Some("%RETRY%OG")
    );
    assert_eq!(c.pull_all("%DLQ%OG", 0).await.len(), 1);
    // A SEND, not a send-back: the SNDBCK counters stay still.
    let info = c.runtime_info().await;
    assert_eq!(counter(&info, "SNDBCK_PUT_NUMS"), 0);
    assert_eq!(counter(&info, "SNDBCK2DLQ_TIMES"), 0);
    assert_eq!(counter(&info, "scheduleMessagePutNums"), 1);
    b.stop().await;
}

/// 4.x (4.9.8 handleRetryAndDLQ l.364-373, then asyncSendMessage l.296): a send to the retry
/// topic at the limit is bound for the DLQ, but the request's properties replace the DELAY=0
/// handleRetryAndDLQ set, so CommitLog parks it in SCHEDULE_TOPIC_XXXX at level 3 + r (clamped
/// to the highest level) and it reaches `%DLQ%<group>` only after that level's delay. A lock
/// held by the group changes nothing before 5.1.1.
#[tokio::test]
async fn on_4_9_a_retry_send_at_the_limit_reaches_the_dlq_through_the_schedule() {
    let b = TestBroker::start(&[
        ("brokerVersionProfile", "4.9"),
        ("messageDelayLevel", LEVELS),
    ])
    .await;
    let mut c = b.client().await;
    lock_frame(&mut c, 41, "OG", "orderly-client").await;
    // r = 1: level 4 (1 s); r = 16: DELAY 19, clamped to level 6 (1 s).
    for r in [1, 16] {
        let answer = retry_send(&mut c, "OG", r, r, b"orderly").await;
        assert_eq!(answer.code, 0, "{r}: {:?}", answer.remark);
    }
    let (at4, _) = wait_for(&mut c, "SCHEDULE_TOPIC_XXXX", 3, 1, Duration::from_secs(20)).await;
    let (at6, _) = wait_for(&mut c, "SCHEDULE_TOPIC_XXXX", 5, 1, Duration::from_secs(20)).await;
    for parked in [&at4[0], &at6[0]] {
        assert_eq!(property(&parked.properties, "REAL_TOPIC"), Some("%DLQ%OG"));
        assert_eq!(property(&parked.properties, "REAL_QID"), Some("0"));
    }
    assert_eq!(property(&at6[0].properties, "DELAY"), Some("6"));
    let (mut dlq, _) = wait_for(&mut c, "%DLQ%OG", 0, 2, Duration::from_secs(20)).await;
    // Both levels are 1 s: either may be delivered first.
    dlq.sort_by_key(|m| m.reconsume_times);
    for (m, parked, r) in [(&dlq[0], &at4[0], 1), (&dlq[1], &at6[0], 16)] {
        assert_eq!((m.body.as_slice(), m.reconsume_times), (&b"orderly"[..], r));
        assert!(
            m.store_timestamp - parked.store_timestamp >= 1_000,
            "in the DLQ {} ms after it was parked",
            m.store_timestamp - parked.store_timestamp
        );
    }
    assert!(c.pull_all("%RETRY%OG", 0).await.is_empty());
    let info = c.runtime_info().await;
    assert_eq!(counter(&info, "SNDBCK_PUT_NUMS"), 0);
    assert_eq!(counter(&info, "SNDBCK2DLQ_TIMES"), 0);
    assert_eq!(counter(&info, "scheduleMessagePutNums_4"), 1);
    assert_eq!(counter(&info, "scheduleMessagePutNums_6"), 1);
    assert_eq!(counter(&info, "scheduleMessageDeliverNums"), 2);
    b.stop().await;
}
