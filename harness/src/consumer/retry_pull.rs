//! The subscription to `%RETRY%<group>` (retention-retry reference B5): a CLUSTERING push
//! consumer subscribes its retry topic with `*` at start, and the retry queue is rebalanced,
//! pulled and committed like any other queue. With the default `retryQueueNums` of 1 the queue
//! goes to the first client id of the group (AllocateMessageQueueAveragely); a new retry queue
//! starts at offset 0 (consumer §8.6). On a cluster every broker has its own retry queue
//! `(brokerName, 0)`, allocated over the group like the topic's queues.
//!
//! One task per instance: every 5 s it persists the retry queue's offset (oneway
//! UPDATE_CONSUMER_OFFSET, as `persistAll`), every 20 s it rebalances (GET_CONSUMER_LIST_BY_GROUP,
//! which the Java client sends per subscribed topic), and while the queue is its own it runs
//! the ordinary pull loop on it. Messages pulled from it go through the same consume path,
//! with their topic restored from RETRY_TOPIC (see `body.rs`).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use remoting::headers::UpdateConsumerOffsetRequestHeader;
use remoting::{RemotingCommand, RequestCode};

use crate::consumer::allocate::allocate_averagely;
use crate::consumer::offsets::consumer_ids;
use crate::consumer::pull::pull_loop;
use crate::consumer::pull_gate::Thresholds;
use crate::consumer::route::{retry_topic, Mq};
use crate::consumer::state::{Instance, QueueState};

const PERSIST_EVERY: Duration = Duration::from_secs(5);
/// Rebalance every fourth persist tick (20 s).
const REBALANCE_EVERY_TICKS: u32 = 4;
const API_TIMEOUT: Duration = Duration::from_secs(3);

/// The retry topic's queues: `retryQueueNums` (1) on every broker of the route, each broker
/// having made the topic when the group's heartbeat reached it.
fn retry_queues(inst: &Instance) -> Vec<Mq> {
    let mut out: Vec<Mq> = inst
        .shared
        .route
        .brokers()
        .iter()
        .map(|b| Mq {
            broker: b.name.clone(),
            queue_id: 0,
        })
        .collect();
    out.sort();
    out
}

/// Runs until the instance stops; then the retry queues' offsets are persisted a last time.
pub async fn retry_loop(inst: Arc<Instance>) {
    let topic = retry_topic(&inst.shared.cfg.group);
    let mut owned: BTreeMap<Mq, Arc<QueueState>> = BTreeMap::new();
    let mut tick = 0u32;
    loop {
        if tick.is_multiple_of(REBALANCE_EVERY_TICKS) {
            rebalance(&inst, &topic, &mut owned).await;
        } else {
            for q in owned.values() {
                persist(&inst, &topic, q).await;
            }
        }
        tick = tick.wrapping_add(1);
        tokio::select! {
            _ = inst.stop.cancelled() => break,
            _ = tokio::time::sleep(PERSIST_EVERY) => {}
        }
    }
    for q in owned.values() {
        q.dropped.store(true, Ordering::Release);
        persist(&inst, &topic, q).await;
    }
}

async fn rebalance(inst: &Arc<Instance>, topic: &str, owned: &mut BTreeMap<Mq, Arc<QueueState>>) {
    let Ok(ids) = consumer_ids(inst).await else {
        return;
    };
    let mine = allocate_averagely(&retry_queues(inst), &ids, &inst.client_id);
    let gone: Vec<Mq> = owned
        .keys()
        .filter(|m| !mine.contains(m))
        .cloned()
        .collect();
    for mq in gone {
        if let Some(q) = owned.remove(&mq) {
            q.dropped.store(true, Ordering::Release);
            persist(inst, topic, &q).await;
        }
    }
    for mq in mine {
        if owned.contains_key(&mq) {
            continue;
        }
        let Some(start) = start_offset(inst, topic, &mq).await else {
            continue;
        };
        let cfg = &inst.shared.cfg;
        let q = Arc::new(
            QueueState::new(
                &mq,
                start,
                true,
                Thresholds {
                    count: cfg.pull_threshold_for_queue,
                    size_mib: cfg.pull_threshold_size_for_queue,
                    span: cfg.consume_concurrently_max_span,
                },
            )
            .with_topic(topic),
        );
        inst.log("INFO", &format!("doRebalance, {}, add a new mq, MessageQueue [topic={topic}, brokerName={}, queueId=0], nextOffset={start}", cfg.group, mq.broker));
        inst.shared
            .tracker
            .spawn(pull_loop(inst.clone(), q.clone()));
        owned.insert(mq, q);
    }
}

/// The committed offset, else 0 (a retry queue without one starts at its beginning).
async fn start_offset(inst: &Instance, topic: &str, mq: &Mq) -> Option<i64> {
    let (code, offset) = inst
        .link(&mq.broker)?
        .query_consumer_offset(&inst.shared.cfg.group, topic, mq.queue_id, API_TIMEOUT)
        .await?;
    match code {
        0 => offset,
        _ => Some(0),
    }
}

async fn persist(inst: &Instance, topic: &str, q: &QueueState) {
    let offset = q.offset.load(Ordering::Acquire);
    if offset < 0 {
        return;
    }
    let header = UpdateConsumerOffsetRequestHeader {
        consumer_group: inst.shared.cfg.group.clone(),
        topic: topic.to_owned(),
        queue_id: q.queue_id,
        commit_offset: offset,
    };
    let cmd = RemotingCommand::request(RequestCode::UPDATE_CONSUMER_OFFSET, 0).with_header(&header);
    let _ = inst.oneway(&q.broker, cmd).await;
}
