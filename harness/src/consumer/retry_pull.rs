//! The subscription to `%RETRY%<group>` (retention-retry reference B5): a CLUSTERING push
//! consumer subscribes its retry topic with `*` at start, and the retry queue is rebalanced,
//! pulled and committed like any other queue. With the default `retryQueueNums` of 1 the queue
//! goes to the first client id of the group (AllocateMessageQueueAveragely); a new retry queue
//! starts at offset 0 (consumer §8.6).
//!
//! One task per instance: every 5 s it persists the retry queue's offset (oneway
//! UPDATE_CONSUMER_OFFSET, as `persistAll`), every 20 s it rebalances (GET_CONSUMER_LIST_BY_GROUP,
//! which the Java client sends per subscribed topic), and while the queue is its own it runs
//! the ordinary pull loop on it. Messages pulled from it go through the same consume path,
//! with their topic restored from RETRY_TOPIC (see `body.rs`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use remoting::headers::{ConsumerGroupHeader, UpdateConsumerOffsetRequestHeader};
use remoting::{RemotingCommand, RequestCode};

use crate::consumer::allocate::allocate_averagely;
use crate::consumer::gate::Thresholds;
use crate::consumer::pull::pull_loop;
use crate::consumer::state::{Instance, QueueState};

const PERSIST_EVERY: Duration = Duration::from_secs(5);
/// Rebalance every fourth persist tick (20 s).
const REBALANCE_EVERY_TICKS: u32 = 4;
const API_TIMEOUT: Duration = Duration::from_secs(3);
/// `retryQueueNums`' default: the retry topic has one queue.
const RETRY_QUEUES: [i32; 1] = [0];

/// `%RETRY%<group>`.
pub fn retry_topic(group: &str) -> String {
    format!("%RETRY%{group}")
}

/// Runs until the instance stops; then the retry queue's offset is persisted a last time.
pub async fn retry_loop(inst: Arc<Instance>) {
    let topic = retry_topic(&inst.shared.cfg.group);
    let mut owned: Option<Arc<QueueState>> = None;
    let mut tick = 0u32;
    loop {
        if tick.is_multiple_of(REBALANCE_EVERY_TICKS) {
            owned = rebalance(&inst, &topic, owned).await;
        } else if let Some(q) = &owned {
            persist(&inst, &topic, q).await;
        }
        tick = tick.wrapping_add(1);
        tokio::select! {
            _ = inst.stop.cancelled() => break,
            _ = tokio::time::sleep(PERSIST_EVERY) => {}
        }
    }
    if let Some(q) = owned {
        q.dropped.store(true, Ordering::Release);
        persist(&inst, &topic, &q).await;
    }
}

async fn rebalance(
    inst: &Arc<Instance>,
    topic: &str,
    owned: Option<Arc<QueueState>>,
) -> Option<Arc<QueueState>> {
    let Some(ids) = consumer_ids(inst).await else {
        return owned;
    };
    let mine = !allocate_averagely(&RETRY_QUEUES, &ids, &inst.client_id).is_empty();
    match (mine, owned) {
        (true, Some(q)) => Some(q),
        (true, None) => {
            let start = start_offset(inst, topic).await?;
            let cfg = &inst.shared.cfg;
            let q = Arc::new(
                QueueState::new(
                    0,
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
            inst.log("INFO", &format!("doRebalance, {}, add a new mq, MessageQueue [topic={topic}, brokerName={}, queueId=0], nextOffset={start}", cfg.group, crate::consumer::state::BROKER_NAME));
            inst.shared
                .tracker
                .spawn(pull_loop(inst.clone(), q.clone()));
            Some(q)
        }
        (false, Some(q)) => {
            q.dropped.store(true, Ordering::Release);
            persist(inst, topic, &q).await;
            None
        }
        (false, None) => None,
    }
}

/// GET_CONSUMER_LIST_BY_GROUP.
async fn consumer_ids(inst: &Instance) -> Option<Vec<String>> {
    let header = ConsumerGroupHeader {
        consumer_group: inst.shared.cfg.group.clone(),
    };
    let r = inst
        .wire
        .call(
            RemotingCommand::request(RequestCode::GET_CONSUMER_LIST_BY_GROUP, 0)
                .with_header(&header),
            API_TIMEOUT,
        )
        .await
        .ok()
        .filter(|r| r.code == 0)?;
    let v: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
    Some(
        v["consumerIdList"]
            .as_array()?
            .iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect(),
    )
}

/// The committed offset, else 0 (a retry queue without one starts at its beginning).
async fn start_offset(inst: &Instance, topic: &str) -> Option<i64> {
    let (code, offset) = inst
        .wire
        .query_consumer_offset(&inst.shared.cfg.group, topic, 0, API_TIMEOUT)
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
    let _ = inst
        .wire
        .oneway(
            RemotingCommand::request(RequestCode::UPDATE_CONSUMER_OFFSET, 0).with_header(&header),
        )
        .await;
}
