//! The `%RETRY%<group>` queue is a subscription like the topic (fidelity audit #9):
//! `DefaultMQPushConsumerImpl.copySubscription` adds it for every CLUSTERING push consumer,
//! orderly included, and `RebalanceImpl.doRebalance` rebalances every subscription on the same
//! triggers. So the retry queue changes hands in the same rebalance as the topic's queues (a
//! consumer leaving, one joining), and an orderly consumer locks and pulls it like any queue.
//! Before, the retry queue moved only on its own 20-s tick and orderly consumers never took it.
//! Each test starts real broker-under-test processes on 127.0.0.1:0 and waits on what the
//! consumers hold, with deadlines well under 20 s.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use harness::cluster::{prepare, CellCluster};
use harness::consumer::{ConsumerRun, Mq, SendTracking, Sub, Target};
use harness::kind::in_tree::process::BrokerProcess;
use harness_model::matrix::{self, Cell};
use harness_model::profile::{Profile, Workload};
use remoting::{RemotingCommand, RequestCode};
use rmq_client::admin::AdminConn;

mod common;
use common::broker_bin;

/// How long the retry queue may trail the topic's queues: the same rebalance moves both, a
/// few calls apart; the old separate tick could trail by up to 20 s.
const SAME_REBALANCE: Duration = Duration::from_secs(5);

fn cell(text: &str) -> Cell {
    let profile = Profile::parse(text, "r.toml", Path::new("r.toml"), &[]).unwrap();
    matrix::expand(&profile).unwrap().remove(0)
}

/// One broker-under-test in `dir` with the run's topic made.
fn one_broker(dir: &Path, w: &Workload) -> BrokerProcess {
    one_broker_of(dir, w, "5.3")
}

/// One broker of `profile` (`brokerVersionProfile`) with the workload's topic.
fn one_broker_of(dir: &Path, w: &Workload, profile: &str) -> BrokerProcess {
    let broker = common::own_broker(dir, &[("brokerVersionProfile", profile)]);
    let mut conn = AdminConn::connect(broker.addr, Duration::from_secs(3)).unwrap();
    conn.create_topic(&w.topic, w.queues, Duration::from_secs(5))
        .unwrap();
    broker
}

/// The owners (instance indexes, sorted) of every queue of `sub`.
fn owners_of(run: &ConsumerRun, sub: Sub) -> BTreeMap<Mq, Vec<u32>> {
    let mut out: BTreeMap<Mq, Vec<u32>> = BTreeMap::new();
    for (i, s, mq) in run.owners() {
        if s == sub {
            out.entry(mq).or_default().push(i);
        }
    }
    for v in out.values_mut() {
        v.sort_unstable();
    }
    out
}

/// Waits (up to `within`) until `done` holds of the owners; when it does, the instant.
fn wait_for(
    run: &ConsumerRun,
    within: Duration,
    done: impl Fn(&BTreeMap<Mq, Vec<u32>>, &BTreeMap<Mq, Vec<u32>>) -> bool,
) -> Option<Instant> {
    let end = Instant::now() + within;
    loop {
        let (topic, retry) = (owners_of(run, Sub::Topic), owners_of(run, Sub::Retry));
        if done(&topic, &retry) {
            return Some(Instant::now());
        }
        if Instant::now() >= end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn log_of(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Instance 0 (the first client id, so the retry queue's owner) leaves at 3 s: its
/// UNREGISTER_CLIENT makes the broker notify instance 1, whose rebalance takes the topic's
/// queues and the retry queue at once (before: the retry queue waited for instance 1's next
/// 20-s retry tick, about 17 s, with nobody pulling it).
#[test]
fn the_retry_queue_follows_a_leaving_consumer_with_the_topic_s_queues() {
    let dir = tempfile::tempdir().unwrap();
    let c = cell(
        "name = \"leave\"\n[workload]\nqueues = 2\nmessage_size = 64\n\
         [consumer]\ngroup = \"retry_leave\"\ninstances = 2\nleave_at = { 0 = \"3s\" }\n\
         prefill = 0\ndrain_timeout = \"20s\"\n",
    );
    let w = &c.workload;
    let broker = one_broker(dir.path(), w);
    let log = dir.path().join("consumer.log");
    let cfg = c.consumer.clone().unwrap();
    let target = Target::Broker(broker.addr);
    let run = ConsumerRun::start(&cfg, w, target, Some(100), Some(&log)).unwrap();

    // Both running: the one retry queue is instance 0's, and only instance 0's.
    let both = wait_for(&run, Duration::from_secs(10), |topic, retry| {
        topic.len() == 2
            && topic.values().all(|o| o.len() == 1)
            && retry.len() == 1
            && retry.values().all(|o| o == &[0])
    });
    assert!(
        both.is_some(),
        "topic {:?} retry {:?}\n{}",
        owners_of(&run, Sub::Topic),
        owners_of(&run, Sub::Retry),
        log_of(&log)
    );

    // Instance 0 gone: instance 1 holds both topic queues...
    let topic_moved = wait_for(&run, Duration::from_secs(15), |topic, _| {
        topic.len() == 2 && topic.values().all(|o| o == &[1])
    })
    .unwrap_or_else(|| panic!("the topic's queues did not move\n{}", log_of(&log)));
    // ...and the retry queue in the same rebalance.
    let retry_moved = wait_for(&run, SAME_REBALANCE, |_, retry| {
        retry.len() == 1 && retry.values().all(|o| o == &[1])
    });
    let text = log_of(&log);
    let retry_moved = retry_moved.unwrap_or_else(|| {
        panic!(
            "the retry queue was not instance 1's within {SAME_REBALANCE:?} of the topic's \
             queues: {:?}\n{text}",
            owners_of(&run, Sub::Retry)
        )
    });
    eprintln!(
        "retry queue moved {:?} after the topic's queues",
        retry_moved.saturating_duration_since(topic_moved)
    );
    run.finish();
    // The log is flushed at the end.
    let text = log_of(&log);
    let took = "consumer-1 INFO doRebalance, retry_leave, add a new mq, MessageQueue [topic=%RETRY%retry_leave";
    assert!(text.contains(took), "{text}");
}

/// Two brokers, so two retry queues `(broker-0, 0)` and `(broker-1, 0)`. Instance 1 joins at
/// 2 s: the rebalance that splits the topic's 2 × 2 queues between the two also splits the
/// retry queues, and no retry queue is ever held by both (before: instance 0 kept both retry
/// queues until its next 20-s retry tick while instance 1 pulled one of them too).
#[test]
fn a_joining_consumer_takes_its_retry_queue_and_the_other_lets_it_go() {
    let dir = tempfile::tempdir().unwrap();
    let c = cell(
        "name = \"join\"\n[cluster]\nbrokers = 2\n[workload]\nqueues = 2\nmessage_size = 64\n\
         [broker]\nmappedFileSizeCommitLog = 16777216\n\
         [consumer]\ngroup = \"retry_join\"\ninstances = 2\njoin_at = { 1 = \"2s\" }\n\
         prefill = 0\ndrain_timeout = \"20s\"\n",
    );
    let w = &c.workload;
    let cluster = CellCluster::start(
        &harness::kind::in_tree::InTree::new(broker_bin()),
        &c,
        2,
        dir.path(),
        None,
    )
    .unwrap();
    prepare(cluster.namesrv_addr, Some(2), w).unwrap();
    let log = dir.path().join("consumer.log");
    let cfg = c.consumer.clone().unwrap();
    let target = Target::NameServer(cluster.namesrv_addr);
    let run = ConsumerRun::start(&cfg, w, target, Some(100), Some(&log)).unwrap();

    let alone = wait_for(&run, Duration::from_secs(10), |topic, retry| {
        topic.len() == 4 && retry.len() == 2 && retry.values().all(|o| o == &[0])
    });
    assert!(alone.is_some(), "instance 0 alone\n{}", log_of(&log));

    // Split: each instance one broker's two queues (AllocateMessageQueueAveragely).
    let split = |topic: &BTreeMap<Mq, Vec<u32>>| {
        topic.len() == 4
            && topic
                .iter()
                .all(|(mq, o)| o == &[u32::from(&*mq.broker == "broker-1")])
    };
    let topic_split = wait_for(&run, Duration::from_secs(15), |topic, _| split(topic))
        .unwrap_or_else(|| panic!("the topic's queues were not split\n{}", log_of(&log)));
    // The same rebalance moves the retry queues: each then has exactly one owner. (Like the
    // topic's queues, a queue is held by both for the moment between the newcomer taking it
    // and the other's rebalance letting it go.)
    let want = BTreeMap::from([
        (Mq::new("broker-0", 0), vec![0]),
        (Mq::new("broker-1", 0), vec![1]),
    ]);
    let settled = wait_for(&run, SAME_REBALANCE, |_, retry| *retry == want);
    assert!(
        settled.is_some(),
        "the retry queues were not split within {SAME_REBALANCE:?} of the topic's: {:?}\n{}",
        owners_of(&run, Sub::Retry),
        log_of(&log)
    );
    let topic_split = settled.unwrap().saturating_duration_since(topic_split);
    eprintln!("retry queues split {topic_split:?} after the topic's queues");
    run.finish();
    cluster.stop(Duration::from_secs(10));
}

/// LOCK_BATCH_MQ for `mq` of `topic` in `group` as another client: the queues granted.
fn lock_as_stranger(conn: &mut AdminConn, group: &str, topic: &str, mq: &Mq) -> usize {
    let body = serde_json::json!({
        "clientId": "127.0.0.1@stranger",
        "consumerGroup": group,
        "mqSet": [{"topic": topic, "brokerName": &*mq.broker, "queueId": mq.queue_id}],
    });
    let cmd = RemotingCommand::request(RequestCode::LOCK_BATCH_MQ, 0)
        .with_body(body.to_string().into_bytes());
    let r = conn.call(cmd, Duration::from_secs(3)).unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["lockOKMQSet"].as_array().map_or(0, Vec::len)
}

/// Sends `n` messages to queue 0 of `%RETRY%<group>` (as the inner producer's fallback
/// publish does), tracked by `tracking`.
fn send_to_retry(conn: &mut AdminConn, w: &Workload, retry: &str, tracking: &SendTracking, n: u64) {
    let mut w = w.clone();
    w.topic = retry.to_owned();
    let mut builder = harness::send_spec::builder(&w);
    builder.set_uniq_prefix(&tracking.prefix);
    let mut buf = bytes::BytesMut::new();
    for seq in 0..n {
        buf.clear();
        builder.encode_into_queue(seq, Some(0), 0, Instant::now(), &mut buf);
        let cmd = remoting::decode_frame(&mut buf, remoting::MAX_FRAME_LEN)
            .unwrap()
            .unwrap();
        let r = conn.call(cmd, Duration::from_secs(5)).unwrap();
        assert_eq!(r.code, 0, "{:?}", r.remark);
        tracking.ack(seq);
    }
}

/// An orderly consumer subscribes its retry topic too: its rebalance locks the retry queue on
/// the broker (another client's LOCK_BATCH_MQ for it is refused, as for the topic's queues) and
/// pulls and consumes what is stored there (before: the queue was never locked, and nothing
/// in it was ever consumed).
#[test]
fn an_orderly_consumer_locks_and_consumes_its_retry_queue() {
    let dir = tempfile::tempdir().unwrap();
    let c = cell(
        "name = \"orderly-retry\"\n[workload]\nqueues = 2\nmessage_size = 64\n\
         [consumer]\ngroup = \"retry_orderly\"\nmode = \"orderly\"\nprefill = 0\n\
         drain_timeout = \"20s\"\n",
    );
    let w = &c.workload;
    // 4.9: a 5.3 broker dead-letters every SEND to the retry topic of a group that holds a queue
    // lock (SendMessageProcessor.handleRetryAndDLQ, 5.3.3 l.201-209), so this test's messages
    // would never reach the retry queue there.
    let broker = one_broker_of(dir.path(), w, "4.9");
    let log = dir.path().join("consumer.log");
    let cfg = c.consumer.clone().unwrap();
    let mut run =
        ConsumerRun::start(&cfg, w, Target::Broker(broker.addr), Some(100), Some(&log)).unwrap();
    let held = wait_for(&run, Duration::from_secs(10), |topic, retry| {
        topic.len() == 2 && retry.len() == 1
    });
    assert!(held.is_some(), "{}", log_of(&log));
    let retry_mq = owners_of(&run, Sub::Retry).into_keys().next().unwrap();
    let topic_mq = owners_of(&run, Sub::Topic).into_keys().next().unwrap();

    let mut conn = AdminConn::connect(broker.addr, Duration::from_secs(3)).unwrap();
    let retry = "%RETRY%retry_orderly";
    assert_eq!(
        lock_as_stranger(&mut conn, "retry_orderly", &w.topic, &topic_mq),
        0,
        "the topic's queue is the consumer's"
    );
    assert_eq!(
        lock_as_stranger(&mut conn, "retry_orderly", retry, &retry_mq),
        0,
        "the retry queue is locked by the consumer: LOCK_BATCH_MQ included it\n{}",
        log_of(&log)
    );

    // What reaches the retry queue is pulled and consumed, in order, under that lock.
    send_to_retry(&mut conn, w, retry, &run.tracking(), 5);
    let end = Instant::now() + Duration::from_secs(15);
    let consumed =
        |run: &ConsumerRun| -> u64 { run.per_broker().iter().map(|(_, b)| b.consumed).sum() };
    while consumed(&run) < 5 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        consumed(&run),
        5,
        "the retry queue's messages consumed\n{}",
        log_of(&log)
    );
    run.drain(|_| {});
    let f = run.finish();
    assert_eq!(f.duplicates, 0, "{f:?}");
}
