//! A consumer's offsets and membership as the broker holds them: the group's client ids
//! (GET_CONSUMER_LIST_BY_GROUP), where a queue's pulls start (`computePullFromWhere`,
//! consumer §8.6), a queue's max offset, and the offsets persisted (UPDATE_CONSUMER_OFFSET).
//! A leaf under the instance's rebalance, the pull loop and the offset-illegal handling, which
//! all ask these questions, for either subscription's queues.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use remoting::headers::{
    ConsumerGroupHeader, GetQueueOffsetRequestHeader, GetQueueOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
};
use remoting::{RemotingCommand, RequestCode};

use crate::consumer::link::Link;
use crate::consumer::route::{Mq, Sub};
use crate::consumer::state::{Instance, QueueState};
use harness_model::profile::{ClientVersion, ConsumeFrom};

/// `mqClientApiTimeout`.
const API_TIMEOUT: Duration = Duration::from_secs(3);

/// `findBrokerAddrByTopic`: the broker that answers GET_CONSUMER_LIST_BY_GROUP, one of the
/// route picked at random (every broker got the heartbeats, so any knows the group).
fn any_broker(inst: &Instance) -> Option<Arc<str>> {
    let brokers = inst.shared.route.brokers();
    (!brokers.is_empty()).then(|| brokers[fastrand::usize(..brokers.len())].name.clone())
}

/// GET_CONSUMER_LIST_BY_GROUP to one broker of the route: the group's client ids.
pub async fn consumer_ids(inst: &Instance) -> Result<Vec<String>, String> {
    let broker = any_broker(inst).ok_or("the route lists no broker")?;
    let header = ConsumerGroupHeader {
        consumer_group: inst.shared.cfg.group.clone(),
    };
    let cmd =
        RemotingCommand::request(RequestCode::GET_CONSUMER_LIST_BY_GROUP, 0).with_header(&header);
    let r = inst
        .call(&broker, cmd, API_TIMEOUT)
        .await
        .map_err(|e| format!("{broker}: {e}"))?;
    if r.code != 0 {
        return Err(format!(
            "{broker}: code {} {}",
            r.code,
            r.remark.unwrap_or_default()
        ));
    }
    Ok(serde_json::from_slice::<serde_json::Value>(&r.body)
        .ok()
        .and_then(|v| {
            v["consumerIdList"].as_array().map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default())
}

/// Where a queue the broker has no offset for starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fresh {
    Zero,
    MaxOffset,
}

/// `computePullFromWhereWithException`'s "no offset" branch (4.9.8 and 5.3.3
/// RebalancePushImpl): CONSUME_FROM_LAST_OFFSET reads the queue's max offset, except for a
/// `%RETRY%` topic, which starts at 0; CONSUME_FROM_FIRST_OFFSET starts at 0.
fn fresh_start(sub: Sub, from: ConsumeFrom) -> Fresh {
    match (from, sub) {
        (ConsumeFrom::Last, Sub::Topic) => Fresh::MaxOffset,
        _ => Fresh::Zero,
    }
}

/// `computePullFromWhere` (consumer §8.6) for a queue of `sub` without a process queue, asked
/// of the queue's broker.
pub async fn compute_pull_from_where(inst: &Instance, sub: Sub, mq: &Mq) -> Option<i64> {
    let cfg = &inst.shared.cfg;
    let topic = inst.shared.topic_of(sub);
    let link = inst.link(&mq.broker)?;
    let (code, offset) = link
        .query_consumer_offset(&cfg.group, topic, mq.queue_id, API_TIMEOUT)
        .await?;
    match code {
        0 => offset,
        // 5.3 skips the queue on any error other than "not found"; 4.x reads it as none.
        c if c != 22 && cfg.client_version == ClientVersion::V53 => None,
        _ => match fresh_start(sub, cfg.consume_from) {
            Fresh::Zero => Some(0),
            Fresh::MaxOffset => max_offset(&link, topic, mq.queue_id).await,
        },
    }
}

/// GET_MAX_OFFSET of one queue, asked of the broker behind `wire`.
pub async fn max_offset(wire: &Link, topic: &str, qid: i32) -> Option<i64> {
    let header = GetQueueOffsetRequestHeader {
        topic: topic.to_owned(),
        queue_id: qid,
        committed: Some(true),
    };
    let r = wire
        .call(
            RemotingCommand::request(RequestCode::GET_MAX_OFFSET, 0).with_header(&header),
            API_TIMEOUT,
        )
        .await
        .ok()?;
    (r.code == 0)
        .then(|| {
            r.header::<GetQueueOffsetResponseHeader>()
                .ok()
                .map(|h| h.offset)
        })
        .flatten()
}

/// QUERY_CONSUMER_OFFSET as the orderly first pull re-reads it: the stored offset, else where
/// `consume_from` says.
pub async fn query_offset(inst: &Instance, q: &QueueState) -> Option<i64> {
    compute_pull_from_where(inst, q.sub, &q.mq()).await
}

/// `persistAll`: UPDATE_CONSUMER_OFFSET (oneway) for every assigned queue with an offset.
pub async fn persist_all(inst: &Instance) {
    let queues = inst.assigned();
    persist(inst, &queues).await;
}

/// Each queue's offset, under its own topic, goes to the broker that holds the queue.
pub async fn persist(inst: &Instance, queues: &[Arc<QueueState>]) {
    for q in queues {
        let offset = q.offset.load(Ordering::Acquire);
        if offset < 0 {
            continue;
        }
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: inst.shared.cfg.group.clone(),
            topic: q.topic(&inst.shared).to_owned(),
            queue_id: q.queue_id,
            commit_offset: offset,
        };
        let cmd =
            RemotingCommand::request(RequestCode::UPDATE_CONSUMER_OFFSET, 0).with_header(&header);
        let _ = inst.oneway(&q.broker, cmd).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_queue_without_an_offset_starts_at_0_whatever_consume_from_says() {
        assert_eq!(fresh_start(Sub::Topic, ConsumeFrom::Last), Fresh::MaxOffset);
        assert_eq!(fresh_start(Sub::Retry, ConsumeFrom::Last), Fresh::Zero);
        assert_eq!(fresh_start(Sub::Topic, ConsumeFrom::First), Fresh::Zero);
        assert_eq!(fresh_start(Sub::Retry, ConsumeFrom::First), Fresh::Zero);
    }
}
