//! One client instance's life (consumer §8.8): heartbeat, rebalance (at start, every 20 s and
//! on NOTIFY_CONSUMER_IDS_CHANGED), offsets persisted every 5 s, orderly locks renewed every
//! 20 s; at stop: offsets persisted, orderly queues unlocked, the client unregistered.
//! Heartbeats and the unregister go to every master of the route; the rebalance spans the
//! queues of every broker; offsets, pulls and locks go to the broker that holds the queue.
//! The two subscriptions, the run's topic and `%RETRY%<group>` (every CLUSTERING push consumer,
//! orderly too), are rebalanced together, and their queues allocated, locked, pulled and
//! committed alike.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use remoting::headers::UnregisterClientRequestHeader;
use remoting::{RemotingCommand, RequestCode};

use crate::consumer::allocate::allocate_averagely;
use crate::consumer::locks::{lock_all, lock_batch, lock_request, next_rebalance, Balance};
use crate::consumer::offsets::{compute_pull_from_where, consumer_ids, persist, persist_all};
use crate::consumer::pull::pull_loop;
use crate::consumer::pull_gate::{per_queue, Thresholds};
use crate::consumer::route::{Mq, Sub};
use crate::consumer::state::publish_committed;
use crate::consumer::state::{Instance, QueueState};
use harness_model::profile::{ClientVersion, ConsumeFrom, ConsumeMode};

/// `persistConsumerOffsetInterval`.
const PERSIST_EVERY: Duration = Duration::from_secs(5);
/// `heartbeatBrokerInterval`.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(30);
/// `REBALANCE_LOCK_INTERVAL` (first after 1 s).
const LOCK_EVERY: Duration = Duration::from_secs(20);
/// `rocketmq.client.unlockDelayTimeMills`.
const UNLOCK_DELAY: Duration = Duration::from_secs(20);
/// `mqClientApiTimeout`.
const API_TIMEOUT: Duration = Duration::from_secs(3);

fn epoch_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Runs the instance until its stop token fires, then leaves the group cleanly.
pub async fn run_instance(inst: Arc<Instance>) {
    let stop = inst.stop.clone();
    if let Err(e) = heartbeat(&inst, inst.sub_version.load(Ordering::Acquire)).await {
        inst.log("WARN", &format!("heartbeat failed: {e}"));
    }
    let tracker = &inst.shared.tracker;
    {
        let inst = inst.clone();
        tracker.spawn(async move {
            let mut next = tokio::time::Instant::now() + PERSIST_EVERY;
            loop {
                tokio::select! {
                    _ = inst.stop.cancelled() => break,
                    _ = tokio::time::sleep_until(next) => {}
                }
                next += PERSIST_EVERY;
                persist_all(&inst).await;
            }
        });
    }
    {
        let inst = inst.clone();
        tracker.spawn(async move {
            loop {
                tokio::select! {
                    _ = inst.stop.cancelled() => break,
                    _ = tokio::time::sleep(HEARTBEAT_EVERY) => {}
                }
                let v = inst.sub_version.load(Ordering::Acquire);
                if let Err(e) = heartbeat(&inst, v).await {
                    inst.log("WARN", &format!("heartbeat failed: {e}"));
                }
            }
        });
    }
    if inst.shared.cfg.mode == ConsumeMode::Concurrently {
        crate::consumer::concurrent::start_workers(&inst);
    }
    if inst.shared.cfg.client_version == ClientVersion::V53 {
        // 5.x `onChannelActive` (enableHeartbeatChannelEventListener): a new connection to
        // the broker sends a heartbeat at once and, if it succeeds, rebalances at once. 4.x
        // waits for its next 30 s heartbeat; its pulls get 24 until then.
        let inst = inst.clone();
        tracker.spawn(async move {
            loop {
                tokio::select! {
                    _ = inst.stop.cancelled() => break,
                    _ = inst.links.reconnected.notified() => {}
                }
                let v = inst.sub_version.load(Ordering::Acquire);
                match heartbeat(&inst, v).await {
                    Ok(()) => inst.rebalance_now.notify_one(),
                    Err(e) => inst.log(
                        "WARN",
                        &format!("heartbeat on a new connection failed: {e}"),
                    ),
                }
            }
        });
    }
    if inst.shared.cfg.mode == ConsumeMode::Orderly {
        let inst = inst.clone();
        tracker.spawn(async move {
            let mut wait = Duration::from_secs(1);
            loop {
                tokio::select! {
                    _ = inst.stop.cancelled() => break,
                    _ = tokio::time::sleep(wait) => {}
                }
                wait = LOCK_EVERY;
                lock_all(&inst).await;
            }
        });
    }
    loop {
        let balance = rebalance(&inst).await;
        let wait = next_rebalance(inst.shared.cfg.client_version, balance);
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = inst.rebalance_now.notified() => {
                inst.log("INFO", &format!("receive broker's notification or a new route, the consumer group: {} changed, rebalance immediately", inst.shared.cfg.group));
            }
            _ = tokio::time::sleep(wait) => {}
        }
    }
    shutdown(&inst).await;
}

/// `DefaultMQPushConsumerImpl.shutdown`: queues dropped, offsets persisted, orderly queues
/// unlocked, the client unregistered. Messages still being consumed are not waited for, as
/// `awaitTerminationMillisWhenShutdown` = 0: their offsets are not committed, so whoever takes
/// the queue next consumes them again.
async fn shutdown(inst: &Arc<Instance>) {
    let queues = inst.assigned();
    for q in &queues {
        q.dropped.store(true, Ordering::Release);
    }
    persist(inst, &queues).await;
    if inst.shared.cfg.mode == ConsumeMode::Orderly && !queues.is_empty() {
        let mut by_broker: std::collections::BTreeMap<Arc<str>, Vec<_>> = Default::default();
        for q in &queues {
            by_broker
                .entry(q.broker.clone())
                .or_default()
                .push((q.sub, q.queue_id));
        }
        for (broker, ids) in by_broker {
            let cmd = lock_request(inst, RequestCode::UNLOCK_BATCH_MQ, &broker, &ids);
            if let Ok(l) = inst.master_link(&broker) {
                let _ = l.oneway(cmd).await;
            }
        }
    }
    let header = UnregisterClientRequestHeader {
        client_id: inst.client_id.clone(),
        producer_group: None,
        consumer_group: Some(inst.shared.cfg.group.clone()),
    };
    for b in inst.shared.route.brokers() {
        for link in inst.links_all(&b.name) {
            let cmd =
                RemotingCommand::request(RequestCode::UNREGISTER_CLIENT, 0).with_header(&header);
            let _ = link.call(cmd, API_TIMEOUT).await;
        }
    }
    inst.queues.lock().clear();
    inst.log(
        "INFO",
        &format!(
            "the consumer shut down: offsets persisted, client unregistered ({} pulls answered by a slave over the run, {} reconnects)",
            inst.shared.slave_pulls.load(Ordering::Relaxed),
            inst.links.reconnects()
        ),
    );
    inst.links.close();
}

/// HEART_BEAT with this group's subscription (and the retry topic's), as 4.9.8 sends it, to
/// every address of the route, slaves too (`sendHeartbeatToAllBroker`: a slave serves a pull
/// only for a group whose subscription it holds). Ok when at least one broker took
/// it (a broker that is down gets it at the next one); the failures are logged.
async fn heartbeat(inst: &Instance, sub_version: i64) -> Result<(), String> {
    let group = &inst.shared.cfg.group;
    let sub = |topic: &str| {
        serde_json::json!({"classFilterMode": false, "codeSet": [], "expressionType": "TAG",
            "subString": "*", "subVersion": sub_version, "tagsSet": [], "topic": topic})
    };
    let from = match inst.shared.cfg.consume_from {
        ConsumeFrom::Last => "CONSUME_FROM_LAST_OFFSET",
        ConsumeFrom::First => "CONSUME_FROM_FIRST_OFFSET",
    };
    let body = serde_json::json!({
        "clientID": inst.client_id,
        "consumerDataSet": [{"consumeFromWhere": from, "consumeType": "CONSUME_PASSIVELY",
            "groupName": group, "messageModel": "CLUSTERING",
            "subscriptionDataSet": [sub(&inst.shared.topic), sub(&format!("%RETRY%{group}"))],
            "unitMode": false}],
        "producerDataSet": [{"groupName": "CLIENT_INNER_PRODUCER"}]
    });
    let body = body.to_string().into_bytes();
    let brokers = inst.shared.route.brokers();
    let (mut failed, mut sent) = (Vec::new(), 0);
    for (b, link) in brokers
        .iter()
        .flat_map(|b| inst.links_all(&b.name).into_iter().map(move |l| (b, l)))
    {
        sent += 1;
        let cmd = RemotingCommand::request(RequestCode::HEART_BEAT, 0).with_body(body.clone());
        match link.call(cmd, API_TIMEOUT).await {
            Ok(r) if r.code == 0 => {}
            Ok(r) => failed.push(format!(
                "{}: code {} {}",
                b.name,
                r.code,
                r.remark.unwrap_or_default()
            )),
            Err(e) => failed.push(format!("{}: {e}", b.name)),
        }
    }
    if failed.is_empty() {
        return Ok(());
    }
    let text = failed.join("; ");
    if failed.len() < sent {
        inst.log("WARN", &format!("send heart beat to broker failed: {text}"));
        return Ok(());
    }
    Err(text)
}

/// `doRebalance`: each subscription in turn (`rebalanceByTopic`), the run's topic, then
/// `%RETRY%<group>`, so whatever wakes the rebalance (the start, the 20-s period,
/// NOTIFY_CONSUMER_IDS_CHANGED, a route change, 5.3's new connection) moves both. A lock refused
/// on either leaves the group unbalanced (5.3 `allMQLocked`).
async fn rebalance(inst: &Arc<Instance>) -> Balance {
    let mut balance = Balance::Balanced;
    for sub in Sub::ALL {
        if rebalance_by_topic(inst, sub).await == Balance::LockRefused {
            balance = Balance::LockRefused;
        }
    }
    balance
}

/// `rebalanceByTopic` (CLUSTERING): GET_CONSUMER_LIST_BY_GROUP (one per subscription, as
/// `findConsumerIdList(topic, group)`), allocation, and `sub`'s queues of the process queue
/// table brought in line with it.
async fn rebalance_by_topic(inst: &Arc<Instance>, sub: Sub) -> Balance {
    let shared = &inst.shared;
    let cfg = &shared.cfg;
    let topic = shared.topic_of(sub);
    let ids = match consumer_ids(inst).await {
        Ok(ids) => ids,
        Err(e) => {
            inst.log(
                "WARN",
                &format!(
                    "doRebalance, {} {topic}, get consumer id list failed: {e}",
                    cfg.group
                ),
            );
            return Balance::Balanced;
        }
    };
    let all = shared.route.sub_queues(sub);
    let mine: BTreeSet<Mq> = allocate_averagely(&all, &ids, &inst.client_id)
        .into_iter()
        .collect();
    if mine.is_empty() && !ids.contains(&inst.client_id) {
        inst.log(
            "INFO",
            &format!(
                "[BUG] ConsumerGroup: {} The consumerId: {} not in cidAll: {ids:?}",
                cfg.group, inst.client_id
            ),
        );
    }
    let current: BTreeSet<Mq> = inst
        .queues
        .lock()
        .keys()
        .filter(|(s, _)| *s == sub)
        .map(|(_, mq)| mq.clone())
        .collect();
    let mut changed = false;
    for mq in current.difference(&mine) {
        let Some(q) = inst.queues.lock().remove(&(sub, mq.clone())) else {
            continue;
        };
        remove_queue(inst, &q).await;
        changed = true;
    }
    let mut added = Vec::new();
    let mut balance = Balance::Balanced;
    for mq in mine.difference(&current) {
        let (broker, qid) = (&mq.broker, mq.queue_id);
        let mut locked = false;
        if cfg.mode == ConsumeMode::Orderly {
            let granted = lock_batch(inst, broker, &[(sub, qid)]).await;
            if !granted.is_ok_and(|g| g.contains(&(sub, qid))) {
                balance = Balance::LockRefused;
                inst.log("INFO", &format!("doRebalance, {}, add a new mq failed, MessageQueue [topic={topic}, brokerName={broker}, queueId={qid}], because lock failed", cfg.group));
                continue;
            }
            // 4.3.0 starts a new queue unlocked until the next lockAll (consumer §7.3).
            locked = cfg.client_version != ClientVersion::V43;
        }
        let Some(start) = compute_pull_from_where(inst, sub, mq).await else {
            continue;
        };
        let q = Arc::new(
            QueueState::new(
                mq,
                start,
                locked,
                Thresholds {
                    count: cfg.pull_threshold_for_queue,
                    size_mib: cfg.pull_threshold_size_for_queue,
                    span: cfg.consume_concurrently_max_span,
                },
            )
            .of(sub),
        );
        inst.log("INFO", &format!("doRebalance, {}, add a new mq, MessageQueue [topic={topic}, brokerName={broker}, queueId={qid}], nextOffset={start}", cfg.group));
        inst.queues.lock().insert(q.key(), q.clone());
        publish_committed(inst, &q);
        added.push(q);
        changed = true;
    }
    if changed {
        let mine: Vec<String> = mine
            .iter()
            .map(|m| format!("{}:{}", m.broker, m.queue_id))
            .collect();
        inst.log("INFO", &format!("rebalanced result changed. allocateMessageQueueStrategyName=AVG, group={}, topic={topic}, clientId={}, mqAllSize={}, cidAllSize={}, rebalanceResultSize={}, rebalanceResultSet={mine:?}", cfg.group, inst.client_id, all.len(), ids.len(), mine.len()));
        message_queue_changed(inst, sub, ids.len()).await;
    }
    for q in added {
        shared.tracker.spawn(pull_loop(inst.clone(), q));
    }
    balance
}

/// `removeUnnecessaryMessageQueue`: the queue dropped, its offset persisted; orderly, its
/// lock released (4.x: 20 s later while messages are still cached).
async fn remove_queue(inst: &Arc<Instance>, q: &Arc<QueueState>) {
    let shared = &inst.shared;
    let cfg = &shared.cfg;
    let (broker, qid, topic) = (&q.broker, q.queue_id, q.topic(shared));
    q.dropped.store(true, Ordering::Release);
    persist(inst, std::slice::from_ref(q)).await;
    if cfg.mode == ConsumeMode::Orderly {
        let cached = !q.pq.lock().is_empty();
        let unlock = [(q.sub, qid)];
        if cached && cfg.client_version != ClientVersion::V53 {
            // 4.x keeps the lock `unlockDelayTimeMills` (20 s) while messages are still
            // cached, so no other client consumes them concurrently (consumer §7.3).
            inst.log("INFO", &format!("[MessageQueue [topic={topic}, brokerName={broker}, queueId={qid}]]unlockDelay, begin"));
            let (inst2, broker) = (inst.clone(), broker.clone());
            shared.tracker.spawn(async move {
                tokio::select! {
                    _ = inst2.shared.cancel.cancelled() => {}
                    _ = tokio::time::sleep(UNLOCK_DELAY) => {
                        let cmd = lock_request(&inst2, RequestCode::UNLOCK_BATCH_MQ, &broker, &unlock);
                        if let Ok(l) = inst2.master_link(&broker) {
                            let _ = l.oneway(cmd).await;
                        }
                    }
                }
            });
        } else {
            let cmd = lock_request(inst, RequestCode::UNLOCK_BATCH_MQ, broker, &unlock);
            if let Ok(l) = inst.master_link(broker) {
                let _ = l.oneway(cmd).await;
            }
        }
    }
    inst.log("INFO", &format!("doRebalance, {}, remove unnecessary mq, MessageQueue [topic={topic}, brokerName={broker}, queueId={qid}]", cfg.group));
}

/// `RebalancePushImpl.messageQueueChanged` for `sub`: the per-queue thresholds from the topic
/// ones over every queue of the process queue table (both subscriptions'), and a heartbeat
/// with a new `subVersion` before any pull carries it (else 25). One `subVersion` serves both
/// subscriptions: a pull's version is never above the broker's.
async fn message_queue_changed(inst: &Arc<Instance>, sub: Sub, clients: usize) {
    let cfg = &inst.shared.cfg;
    let assigned = inst.assigned();
    let (count, size) = (
        per_queue(
            cfg.pull_threshold_for_queue,
            cfg.pull_threshold_for_topic,
            assigned.len(),
        ),
        per_queue(
            cfg.pull_threshold_size_for_queue,
            cfg.pull_threshold_size_for_topic,
            assigned.len(),
        ),
    );
    for q in &assigned {
        q.threshold_count.store(count, Ordering::Relaxed);
        q.threshold_size.store(size, Ordering::Relaxed);
    }
    let v = epoch_ms().max(inst.sub_version.load(Ordering::Acquire) + 1);
    match heartbeat(inst, v).await {
        Ok(()) => inst.sub_version.store(v, Ordering::Release),
        Err(e) => inst.log("WARN", &format!("heartbeat after rebalance failed: {e}")),
    }
    if sub == Sub::Topic {
        let names: Vec<String> = assigned
            .iter()
            .filter(|q| q.sub == Sub::Topic)
            .map(|q| format!("{}:{}", q.broker, q.queue_id))
            .collect();
        inst.log(
            "INFO",
            &format!(
                "messageQueueChanged: {} assigned queues {names:?} of {} clients",
                names.len(),
                clients.max(1)
            ),
        );
    }
}
