//! Orderly consumption's broker locks (consumer §7.3), as RebalanceImpl and
//! ConsumeMessageOrderlyService handle them in 4.9.8 and 5.3.3:
//!
//! * `lockAll` (every 20 s): a granted queue is locked and its lock time renewed, a queue the
//!   answer leaves out is unlocked; a call that fails (timeout, closed connection, an error
//!   code) changes nothing, as Java catches the exception and logs it.
//! * `lock(mq)`: one queue; a granted lock is set, a refusal or a failure changes nothing.
//! * The consume request finds its queue not locked or its lock expired: it tries to lock the
//!   queue alone after 10 ms (100 ms when the request was just submitted), and is submitted
//!   again 10 ms after a granted lock, 3000 ms after a refused or failed one.
//! * A new queue whose lock is refused is not added; 5.3 wakes the rebalance 500 ms later
//!   (`rebalanceLater(500)`), and its 1000 ms `minInterval` makes it run 1000 ms after the last.
//! * `previouslyLocked` belongs to the pull request: the first pull of an assignment re-reads
//!   the broker's offset, a lock lost and regained does not.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use remoting::{RemotingCommand, RequestCode};
use tokio_util::sync::CancellationToken;

use crate::consumer::route::Sub;
use crate::consumer::state::{Instance, QueueState, Shared};
use crate::consumer::wire::WireError;
use harness_model::profile::ClientVersion;

/// `LOCK_BATCH_MQ`'s call timeout.
const LOCK_TIMEOUT: Duration = Duration::from_millis(1000);
/// Client-side lock lifetime (`rocketmq.client.rebalance.lockMaxLiveTime`).
pub const LOCK_LIFE: Duration = Duration::from_secs(30);
/// `tryLockLaterAndReconsume` delays: from inside the consume loop, and when a request is run
/// on a queue that is not locked.
pub const RELOCK_IN_LOOP: Duration = Duration::from_millis(10);
pub const RELOCK_AT_SUBMIT: Duration = Duration::from_millis(100);
/// `submitConsumeRequestLater` after the single-queue lock: granted, refused or failed.
pub const RESUBMIT_LOCKED: Duration = Duration::from_millis(10);
pub const RESUBMIT_REFUSED: Duration = Duration::from_millis(3000);
/// 5.3: `rebalanceLater(500)` after a refused lock, held to `rocketmq.client.rebalance.minInterval`.
const REBALANCE_LATER: Duration = Duration::from_millis(500);
const REBALANCE_MIN_INTERVAL: Duration = Duration::from_millis(1000);
/// RebalanceService's period (`rocketmq.client.rebalance.waitInterval`).
pub const REBALANCE_EVERY: Duration = Duration::from_secs(20);

/// Why a LOCK_BATCH_MQ got no usable answer (Java: an exception out of `lockBatchMQ`).
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{0}")]
    Call(#[from] WireError),
    #[error("code {0} {1}")]
    Refused(i32, String),
    #[error("the lock answer does not decode: {0}")]
    Body(String),
}

/// One queue of a broker in a lock request: its subscription (so its topic) and its id.
pub type LockedQueue = (Sub, i32);

/// The LOCK_BATCH_MQ or UNLOCK_BATCH_MQ body for `queues` of `broker`, of either subscription
/// (Java sends one request per broker, to that broker, with every queue of its process queue
/// table there: the retry queue too).
pub fn lock_request(
    inst: &Instance,
    code: RequestCode,
    broker: &str,
    queues: &[LockedQueue],
) -> RemotingCommand {
    let mqs: Vec<serde_json::Value> = queues
        .iter()
        .map(|(sub, q)| {
            let topic = inst.shared.topic_of(*sub);
            serde_json::json!({"brokerName": broker, "queueId": q, "topic": topic})
        })
        .collect();
    let body = serde_json::json!({"clientId": inst.client_id, "consumerGroup": inst.shared.cfg.group, "mqSet": mqs});
    RemotingCommand::request(code, 0).with_body(body.to_string().into_bytes())
}

/// LOCK_BATCH_MQ to `broker` for its `queues`: the queues granted.
pub async fn lock_batch(
    inst: &Instance,
    broker: &Arc<str>,
    queues: &[LockedQueue],
) -> Result<Vec<LockedQueue>, LockError> {
    let r = inst
        .master_link(broker)?
        .call(
            lock_request(inst, RequestCode::LOCK_BATCH_MQ, broker, queues),
            LOCK_TIMEOUT,
        )
        .await?;
    if r.code != 0 {
        return Err(LockError::Refused(r.code, r.remark.unwrap_or_default()));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&r.body).map_err(|e| LockError::Body(e.to_string()))?;
    Ok(granted(&inst.shared, &v))
}

/// The queues of `lockOKMQSet`, by topic and id; a topic of neither subscription is ignored.
fn granted(shared: &Shared, answer: &serde_json::Value) -> Vec<LockedQueue> {
    answer["lockOKMQSet"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| {
                    let sub = shared.sub_of(m["topic"].as_str()?)?;
                    Some((sub, m["queueId"].as_i64()? as i32))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What `lockAll` did to one queue, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockChange {
    /// Granted and not locked before: `the message queue locked OK`.
    Gained,
    /// Granted again (renewed).
    Renewed,
    /// Left out of the answer: `the message queue locked Failed`.
    Refused,
}

/// `lockAll`'s answer applied to the assigned queues at `now`; a failed call changes nothing.
pub fn apply_lock_all(
    queues: &[Arc<QueueState>],
    answer: &Result<Vec<LockedQueue>, LockError>,
    now: Instant,
) -> Vec<(Arc<QueueState>, LockChange)> {
    let Ok(granted) = answer else {
        return Vec::new();
    };
    queues
        .iter()
        .map(|q| {
            let change = if granted.contains(&(q.sub, q.queue_id)) {
                *q.last_lock.lock() = now;
                if q.locked.swap(true, Ordering::AcqRel) {
                    LockChange::Renewed
                } else {
                    LockChange::Gained
                }
            } else {
                q.locked.store(false, Ordering::Release);
                LockChange::Refused
            };
            (q.clone(), change)
        })
        .collect()
}

/// `lockAll`: the assigned queues of each broker in one LOCK_BATCH_MQ to that broker
/// (`buildProcessQueueTableByBrokerName`).
pub async fn lock_all(inst: &Instance) {
    let mut by_broker: std::collections::BTreeMap<Arc<str>, Vec<Arc<QueueState>>> =
        Default::default();
    for q in inst.assigned() {
        by_broker.entry(q.broker.clone()).or_default().push(q);
    }
    for (broker, queues) in by_broker {
        lock_broker(inst, &broker, &queues).await;
    }
}

async fn lock_broker(inst: &Instance, broker: &Arc<str>, queues: &[Arc<QueueState>]) {
    let ids: Vec<LockedQueue> = queues.iter().map(|q| (q.sub, q.queue_id)).collect();
    let answer = lock_batch(inst, broker, &ids).await;
    if let Err(e) = &answer {
        inst.log(
            "ERROR",
            &format!("lockBatchMQ exception, {broker} {ids:?}: {e}"),
        );
    }
    let group = &inst.shared.cfg.group;
    for (q, change) in apply_lock_all(queues, &answer, Instant::now()) {
        let (topic, qid) = (q.topic(&inst.shared), q.queue_id);
        let mq = format!("MessageQueue [topic={topic}, brokerName={broker}, queueId={qid}]");
        match change {
            LockChange::Gained => inst.log(
                "INFO",
                &format!("the message queue locked OK, Group: {group} {mq}"),
            ),
            LockChange::Refused => inst.log(
                "WARN",
                &format!("the message queue locked Failed, Group: {group} {mq}"),
            ),
            LockChange::Renewed => {}
        }
    }
}

/// `lock(mq)`: one queue; true when granted (then locked, its lock time renewed). A refusal
/// or a failed call leaves the queue as it was.
pub async fn lock_one(inst: &Instance, q: &QueueState) -> bool {
    match lock_batch(inst, &q.broker, &[(q.sub, q.queue_id)]).await {
        Ok(granted) if granted.contains(&(q.sub, q.queue_id)) => {
            *q.last_lock.lock() = Instant::now();
            q.locked.store(true, Ordering::Release);
            inst.log(
                "INFO",
                &format!("the message queue lock OK, {}", inst.pull_request(q)),
            );
            true
        }
        Ok(_) => {
            inst.log(
                "INFO",
                &format!("the message queue lock Failed, {}", inst.pull_request(q)),
            );
            false
        }
        Err(e) => {
            inst.log(
                "ERROR",
                &format!("lockBatchMQ exception, {}: {e}", inst.pull_request(q)),
            );
            false
        }
    }
}

/// Where the orderly consume request stands with its queue's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderlyGate {
    Consume,
    /// Not locked, or locked longer ago than [`LOCK_LIFE`]: lock it again after this delay.
    Relock {
        after: Duration,
        expired: bool,
    },
}

/// The consume request's lock check. `submitted`: the request was just (re)submitted, so the
/// check is the one before its loop (100 ms); inside the loop it is 10 ms.
pub fn orderly_gate(locked: bool, since_lock: Duration, submitted: bool) -> OrderlyGate {
    let expired = since_lock > LOCK_LIFE;
    if locked && !expired {
        return OrderlyGate::Consume;
    }
    OrderlyGate::Relock {
        after: if submitted {
            RELOCK_AT_SUBMIT
        } else {
            RELOCK_IN_LOOP
        },
        expired: locked,
    }
}

/// `tryLockLaterAndReconsume`: after `after`, `lock` the queue alone; then wait until the
/// request is submitted again. False when `stop` fired first.
pub async fn try_lock_later<F, Fut>(after: Duration, lock: F, stop: &CancellationToken) -> bool
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = bool>,
{
    tokio::select! {
        _ = stop.cancelled() => return false,
        _ = tokio::time::sleep(after) => {}
    }
    let resubmit = if lock().await {
        RESUBMIT_LOCKED
    } else {
        RESUBMIT_REFUSED
    };
    tokio::select! {
        _ = stop.cancelled() => false,
        _ = tokio::time::sleep(resubmit) => true,
    }
}

/// Whether one rebalance added every queue it was given, or a lock was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balance {
    Balanced,
    LockRefused,
}

/// The wait before the next rebalance.
pub fn next_rebalance(version: ClientVersion, balance: Balance) -> Duration {
    match (version, balance) {
        (ClientVersion::V53, Balance::LockRefused) => REBALANCE_LATER.max(REBALANCE_MIN_INTERVAL),
        _ => REBALANCE_EVERY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::pull_gate::Thresholds;
    use tokio::time::Instant as Clock;

    const THRESHOLDS: Thresholds = Thresholds {
        count: 1000,
        size_mib: 100,
        span: 2000,
    };

    fn queue(id: i32, locked: bool) -> Arc<QueueState> {
        let mq = crate::consumer::route::Mq::new(crate::consumer::route::BROKER_NAME, id);
        Arc::new(QueueState::new(&mq, 0, locked, THRESHOLDS))
    }

    fn ids(changes: Vec<(Arc<QueueState>, LockChange)>) -> Vec<(i32, LockChange)> {
        changes.iter().map(|(q, c)| (q.queue_id, *c)).collect()
    }

    /// The retry queue `(broker, 0)` and the topic's queue 0 of the same broker are two queues
    /// of one lock answer: the topic tells them apart.
    #[test]
    fn a_lock_answer_tells_the_retry_queue_from_the_topic_s_queue_0() {
        let topic = queue(0, false);
        let retry = Arc::new(QueueState::new(&topic.mq(), 0, false, THRESHOLDS).of(Sub::Retry));
        let qs = [topic.clone(), retry.clone()];
        let now = Instant::now();
        let changes = apply_lock_all(&qs, &Ok(vec![(Sub::Retry, 0)]), now);
        let subs: Vec<_> = changes.iter().map(|(q, c)| (q.sub, *c)).collect();
        assert_eq!(
            subs,
            [
                (Sub::Topic, LockChange::Refused),
                (Sub::Retry, LockChange::Gained)
            ]
        );
        assert!(retry.locked.load(Ordering::Acquire));
        assert!(!topic.locked.load(Ordering::Acquire));
    }

    #[test]
    fn a_failed_lock_all_leaves_every_queue_as_it_was() {
        let qs = [queue(0, true), queue(1, false)];
        let t0 = *qs[0].last_lock.lock();
        let later = t0 + Duration::from_secs(5);
        let failed = Err(LockError::Call(WireError::Timeout(LOCK_TIMEOUT)));
        assert!(apply_lock_all(&qs, &failed, later).is_empty());
        assert!(qs[0].locked.load(Ordering::Acquire), "still locked");
        assert!(!qs[1].locked.load(Ordering::Acquire));
        assert_eq!(*qs[0].last_lock.lock(), t0, "lock time not renewed");
        let code = Err(LockError::Refused(1, "system error".into()));
        assert!(apply_lock_all(&qs, &code, later).is_empty());
        assert!(qs[0].locked.load(Ordering::Acquire));
        // An answer: granted ones locked and renewed, the rest unlocked.
        let changes = ids(apply_lock_all(&qs, &Ok(vec![(Sub::Topic, 1)]), later));
        assert_eq!(changes, [(0, LockChange::Refused), (1, LockChange::Gained)]);
        assert!(!qs[0].locked.load(Ordering::Acquire));
        assert_eq!(*qs[1].last_lock.lock(), later);
    }

    #[test]
    fn a_regained_lock_does_not_re_read_the_offset() {
        // previouslyLocked: the first pull of the assignment fixed its offset from the broker.
        let q = queue(3, true);
        q.offset_fixed.store(true, Ordering::Release);
        let now = Instant::now();
        apply_lock_all(std::slice::from_ref(&q), &Ok(vec![]), now);
        assert!(!q.locked.load(Ordering::Acquire));
        apply_lock_all(std::slice::from_ref(&q), &Ok(vec![(Sub::Topic, 3)]), now);
        assert!(q.locked.load(Ordering::Acquire));
        assert!(
            q.offset_fixed.load(Ordering::Acquire),
            "set once per assignment: the pull goes on from its own next offset"
        );
    }

    #[test]
    fn missing_or_expired_locks_are_retried_after_10_ms_in_the_loop() {
        let s = Duration::from_secs;
        assert_eq!(orderly_gate(true, s(29), false), OrderlyGate::Consume);
        assert_eq!(
            orderly_gate(false, s(1), false),
            OrderlyGate::Relock {
                after: RELOCK_IN_LOOP,
                expired: false
            }
        );
        assert_eq!(
            orderly_gate(true, s(31), false),
            OrderlyGate::Relock {
                after: Duration::from_millis(10),
                expired: true
            }
        );
        assert_eq!(
            orderly_gate(false, s(1), true),
            OrderlyGate::Relock {
                after: Duration::from_millis(100),
                expired: false
            }
        );
    }

    /// The lock is tried 10 ms after the check; a refusal resubmits the request 3000 ms later,
    /// a granted lock 10 ms later.
    #[tokio::test(start_paused = true)]
    async fn a_refused_lock_is_resubmitted_after_3000_ms() {
        let stop = CancellationToken::new();
        for (granted, resubmit) in [(false, 3000), (true, 10)] {
            let t0 = Clock::now();
            let called = std::cell::Cell::new(None);
            let lock = || {
                called.set(Some(Clock::now()));
                async move { granted }
            };
            assert!(try_lock_later(RELOCK_IN_LOOP, lock, &stop).await);
            assert_eq!(called.get(), Some(t0 + Duration::from_millis(10)));
            assert_eq!(
                Clock::now() - t0,
                Duration::from_millis(10 + resubmit),
                "granted {granted}"
            );
        }
        stop.cancel();
        let t0 = Clock::now();
        assert!(!try_lock_later(RELOCK_IN_LOOP, || async { true }, &stop).await);
        assert_eq!(Clock::now(), t0, "a stopped instance does not wait");
    }

    #[tokio::test(start_paused = true)]
    async fn v53_rebalances_soon_after_a_refused_lock() {
        let t0 = Clock::now();
        tokio::time::sleep(next_rebalance(ClientVersion::V53, Balance::LockRefused)).await;
        assert_eq!(Clock::now() - t0, Duration::from_millis(1000));
        assert_eq!(
            next_rebalance(ClientVersion::V49, Balance::LockRefused),
            REBALANCE_EVERY,
            "4.9 waits for the next period"
        );
        assert_eq!(
            next_rebalance(ClientVersion::V53, Balance::Balanced),
            REBALANCE_EVERY
        );
    }
}
