//! The pull loop of one assigned queue (consumer §8.2–§8.3): the gates in RocketMQ's order,
//! then at most one PULL_MESSAGE in flight, then the result: messages into the process queue
//! and consume requests out to the consume threads (concurrently: one per
//! `consume_batch_max_size` chunk, to the workers of `concurrent.rs`; orderly: one running
//! task per queue).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use remoting::headers::PullMessageRequestHeader;

use crate::consumer::body::decode_pull_body;
use crate::consumer::fallback::{self, Published, Republish};
use crate::consumer::locks::{lock_one, orderly_gate, try_lock_later, OrderlyGate};
use crate::consumer::metrics::PullResult;
use crate::consumer::offsets::query_offset;
use crate::consumer::outbox::Owed;
use crate::consumer::process_queue::Msg;
use crate::consumer::pull_frame::{PullFields, PullFrame};
use crate::consumer::pull_gate::{
    decide, delay_of, log_text, logged, FlowControl, Gate, Thresholds,
};
use crate::consumer::route::{Sub, MASTER_ID};
use crate::consumer::state::{publish_committed, Instance, QueueState};
use crate::consumer::threads::ConsumeThread;
use crate::recorder::{classify, Outcome};
use harness_model::profile::{ClientVersion, ConsumeMode};

/// PullSysFlag bits (consumer §1.2).
const FLAG_COMMIT_OFFSET: i32 = 0x1;
const FLAG_SUSPEND: i32 = 0x2;
/// The Java client's pull call timeout while the broker may hold it.
const PULL_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Sleeps `d` unless the instance stops first; false when it stopped.
async fn pause(inst: &Instance, d: Duration) -> bool {
    tokio::select! {
        _ = inst.stop.cancelled() => false,
        _ = tokio::time::sleep(d) => true,
    }
}

/// Pulls `q` until it is dropped or the instance stops.
pub async fn pull_loop(inst: Arc<Instance>, q: Arc<QueueState>) {
    let cfg = &inst.shared.cfg;
    if cfg.client_version == ClientVersion::V53 && !pause(&inst, Duration::from_millis(500)).await {
        return;
    }
    let exception = cfg.exception_delay();
    let mut request = None;
    let mut frame = BytesMut::new();
    // The last answer's claim on its round (`outbox.rs`): let go with the next pull, or
    // before this loop waits on anything else.
    let mut owed = None;
    // The last answer's new messages, handed to the consume workers once the next pull is
    // queued, or before this loop waits on anything else.
    let mut ready = Vec::new();
    while !q.is_dropped() && !inst.stop.is_cancelled() {
        let view = q.view();
        let t = Thresholds {
            count: q.threshold_count.load(Ordering::Relaxed),
            size_mib: q.threshold_size.load(Ordering::Relaxed),
            span: cfg.consume_concurrently_max_span,
        };
        if let Gate::Delay(kind) = decide(&view, &t, cfg.mode) {
            inst.shared.metrics.flow_control(kind);
            let counter = match kind {
                FlowControl::Count | FlowControl::Size => &inst.fc_times,
                FlowControl::Span => &inst.span_times,
                FlowControl::NotLocked => &inst.not_locked_times,
            };
            let before = counter.fetch_add(1, Ordering::Relaxed);
            owed = None;
            hand_on(&inst, &q, &mut ready).await;
            if logged(before) {
                let level = if kind == FlowControl::NotLocked {
                    "INFO"
                } else {
                    "WARN"
                };
                inst.log(
                    level,
                    &log_text(kind, &view, &t, &inst.pull_request(&q), before + 1),
                );
            }
            if !pause(
                &inst,
                delay_of(kind, cfg.flow_control_delay.duration(), exception),
            )
            .await
            {
                return;
            }
            continue;
        }
        if cfg.mode == ConsumeMode::Orderly && !q.offset_fixed.load(Ordering::Acquire) {
            owed = None;
            hand_on(&inst, &q, &mut ready).await;
            // The first pull after locking starts from the broker's offset (consumer §7.3).
            match query_offset(&inst, &q).await {
                Some(o) => {
                    inst.log("INFO", &format!("the first time to pull message, so fix offset from broker. pullRequest: {} NewOffset: {o} brokerBusy: false", inst.pull_request(&q)));
                    q.next_offset.store(o, Ordering::Release);
                    q.offset_fixed.store(true, Ordering::Release);
                }
                None => {
                    inst.log(
                        "ERROR",
                        &format!(
                            "Failed to compute pull offset, pullResult: {}",
                            inst.pull_request(&q)
                        ),
                    );
                    if !pause(&inst, exception).await {
                        return;
                    }
                    continue;
                }
            }
        }
        let delay = pull_once(&inst, &q, &mut request, &mut frame, &mut owed, &mut ready).await;
        if !delay.is_zero() {
            owed = None;
            if !pause(&inst, delay).await {
                return;
            }
        }
    }
}

/// One PULL_MESSAGE and its result; returns the delay before the next pull. `request` is the
/// queue's kept PULL_MESSAGE ([`PullFrame`]), encoded into `frame`; `owed` the last answer's
/// claim on its round, let go once this pull is queued, and this answer's claim after;
/// `ready` the last answer's new messages, handed on once this pull is queued, and this
/// answer's after.
///
/// Handing the messages on after the next pull, not before it as
/// `DefaultMQPushConsumerImpl.pullMessage`'s callback does, changes nothing the consumer
/// shows: they are in the process queue (and so in the gates) either way, and the workers
/// are other threads. It lets the round's next pulls go out before the workers run: a woken
/// worker runs right after the task that woke it, and with the submit first the round waited
/// behind the workers, the broker sat idle meanwhile, and rounds broke up.
async fn pull_once(
    inst: &Arc<Instance>,
    q: &Arc<QueueState>,
    request: &mut Option<PullFrame>,
    frame: &mut BytesMut,
    owed: &mut Option<Owed>,
    ready: &mut Vec<Msg>,
) -> Duration {
    let shared = &inst.shared;
    let cfg = &shared.cfg;
    let exception = cfg.exception_delay();
    let commit = q.offset.load(Ordering::Acquire);
    let next = q.next_offset.load(Ordering::Acquire);
    let Some((node, link)) = inst.pull_link(q) else {
        *owed = None;
        hand_on(inst, q, ready).await;
        shared.metrics.pull(PullResult::Error);
        inst.log(
            "WARN",
            &format!(
                "The broker[{}] not exist, {}",
                q.broker,
                inst.pull_request(q)
            ),
        );
        return exception;
    };
    // A pull to a slave carries no commit offset (`pullKernelImpl` clears the flag).
    let commit_flag = if commit > 0 && node == MASTER_ID {
        FLAG_COMMIT_OFFSET
    } else {
        0
    };
    let fields = PullFields {
        queue_offset: next,
        sys_flag: FLAG_SUSPEND | commit_flag,
        commit_offset: commit,
        sub_version: inst.sub_version.load(Ordering::Acquire),
    };
    let kept = request.get_or_insert_with(|| PullFrame::new(&pull_header(inst, q, fields)));
    let timeout = PULL_CALL_TIMEOUT.max(cfg.suspend_timeout.duration() + Duration::from_secs(5));
    shared.metrics.backlog.pull_sent();
    let encode = |opaque, dst: &mut BytesMut| kept.encode(fields, opaque, dst);
    let queued = hand_on(inst, q, ready);
    let resp = match link
        .call_round(encode, frame, owed.take(), queued, timeout)
        .await
    {
        Ok((r, next)) => {
            *owed = Some(next);
            r
        }
        Err(e) => {
            shared.metrics.pull(PullResult::Error);
            if !inst.stop.is_cancelled() {
                inst.log(
                    "WARN",
                    &format!(
                        "execute the pull request exception: {e}, {}",
                        inst.pull_request(q)
                    ),
                );
            }
            return exception;
        }
    };
    let h = resp.header;
    let next_begin = h.as_ref().map(|h| h.next_begin_offset);
    if let Some(h) = &h {
        // `updatePullFromWhichNode`: the next pull goes where this answer suggests.
        q.pull_from
            .store(h.suggest_which_broker_id, Ordering::Release);
    }
    if node != MASTER_ID {
        shared.slave_pulls.fetch_add(1, Ordering::Relaxed);
    }
    match resp.code {
        0 => {
            shared.metrics.pull(PullResult::Found);
            let (msgs, err) = decode_pull_body(&resp.body);
            if let Some(e) = err {
                shared.metrics.decode_errors.fetch_add(1, Ordering::Relaxed);
                inst.log(
                    "WARN",
                    &format!(
                        "pull body does not decode ({e}); kept {} messages before it, {}",
                        msgs.len(),
                        inst.pull_request(q)
                    ),
                );
            }
            if let Some(n) = next_begin {
                q.next_offset.store(n, Ordering::Release);
            }
            if msgs.is_empty() {
                return Duration::ZERO;
            }
            // The order ledger and the restart watch follow the topic's queues; the retry
            // queue `(broker, 0)` has offsets of its own.
            if q.sub == Sub::Topic {
                if let Some(order) = shared.metrics.order.get() {
                    order.pulled(
                        q.queue_id,
                        msgs.iter().map(|m| (m.queue_offset, m.key_seq())),
                    );
                }
                shared
                    .restart
                    .pulled(&q.mq(), msgs[0].queue_offset, link.opened_at());
            }
            let added = match shared.cfg.mode {
                ConsumeMode::Concurrently => q.pq.lock().put_keys(msgs),
                ConsumeMode::Orderly => q.pq.lock().put(msgs),
            };
            *ready = added;
            Duration::ZERO
        }
        19 | 20 => {
            shared.metrics.pull(if resp.code == 19 {
                PullResult::NotFound
            } else {
                PullResult::RetryImmediately
            });
            if let Some(n) = next_begin {
                q.next_offset.store(n, Ordering::Release);
                if q.pq.lock().is_empty() {
                    q.advance(n);
                    publish_committed(inst, q);
                }
            }
            Duration::ZERO
        }
        21 => {
            shared.metrics.pull(PullResult::OffsetMoved);
            inst.log(
                "WARN",
                &format!(
                    "the pull request offset illegal, {} {}",
                    inst.pull_request(q),
                    crate::consumer::offset_illegal::pull_result(h.as_ref())
                ),
            );
            match next_begin {
                Some(n) => {
                    // Dropped now, fixed as the version does (offset_illegal.rs): the pull
                    // loop ends here; a rebalance starts the queue again from `n`.
                    crate::consumer::offset_illegal::handle(inst, q, n);
                    Duration::ZERO
                }
                None => exception,
            }
        }
        215 => {
            shared.metrics.pull(PullResult::Error);
            cfg.broker_flow_control_delay.duration()
        }
        code => {
            match classify(code, resp.remark.as_deref()) {
                Outcome::Busy(class) => shared.metrics.pull_busy(class),
                _ => shared.metrics.pull(PullResult::Error),
            }
            inst.log(
                "WARN",
                &format!(
                    "execute the pull request exception: code {code} {}, {}",
                    resp.remark.as_deref().unwrap_or(""),
                    inst.pull_request(q)
                ),
            );
            exception
        }
    }
}

/// The whole PULL_MESSAGE header of `q` with `f`.
fn pull_header(inst: &Instance, q: &QueueState, f: PullFields) -> PullMessageRequestHeader {
    let cfg = &inst.shared.cfg;
    PullMessageRequestHeader {
        consumer_group: cfg.group.clone(),
        topic: q.topic(&inst.shared).to_owned(),
        queue_id: q.queue_id,
        queue_offset: f.queue_offset,
        max_msg_nums: cfg.pull_batch_size as i32,
        sys_flag: f.sys_flag,
        commit_offset: f.commit_offset,
        suspend_timeout_millis: cfg.suspend_timeout.duration().as_millis() as i64,
        subscription: None,
        sub_version: f.sub_version,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
    }
}

/// Hands newly cached messages (`ready`, emptied) to the consume threads. Its caller holds no
/// round token (`outbox.rs`): a submit may wait for room in the request queue.
async fn hand_on(inst: &Arc<Instance>, q: &Arc<QueueState>, ready: &mut Vec<Msg>) {
    if ready.is_empty() {
        return;
    }
    let added = std::mem::take(ready);
    match inst.shared.cfg.mode {
        ConsumeMode::Concurrently => crate::consumer::concurrent::submit(inst, q, added).await,
        ConsumeMode::Orderly => {
            let start = {
                let mut pq = q.pq.lock();
                !std::mem::replace(&mut pq.orderly_running, true)
            };
            if start {
                inst.shared
                    .tracker
                    .spawn(consume_orderly(inst.clone(), q.clone()));
            }
        }
    }
}

/// Processing `msgs` as the model says (pauses first) on `thread`, for work ready at `ready`,
/// unless the run is cancelled; returns the instant the thread is free again.
async fn process(
    inst: &Instance,
    thread: &mut ConsumeThread<'_>,
    ready: tokio::time::Instant,
    msgs: &[Msg],
) -> tokio::time::Instant {
    let shared = &inst.shared;
    shared.metrics.consume_start(std::iter::once(msgs));
    let n = shared
        .started
        .fetch_add(msgs.len() as u64, Ordering::Relaxed);
    let mut rng = fastrand::Rng::new();
    let start = thread.start(ready);
    let t = shared.model.pause_left(start.into_std())
        + shared.model.batch_time(n, msgs.len() as u64, &mut rng);
    thread.busy_until(start + t, &shared.cancel).await
}

/// ConsumeMessageOrderlyService's ConsumeRequest: this queue's messages in order, one batch
/// at a time, while the lock holds.
async fn consume_orderly(inst: Arc<Instance>, q: Arc<QueueState>) {
    let batch = inst.shared.cfg.consume_batch_max_size as usize;
    let mut ready = tokio::time::Instant::now();
    // The request was just submitted: its lock check is the one before the loop.
    let mut submitted = true;
    loop {
        if q.is_dropped() || inst.shared.cancel.is_cancelled() {
            break;
        }
        let locked = q.locked.load(Ordering::Acquire);
        let since_lock = q.last_lock.lock().elapsed();
        if let OrderlyGate::Relock { after, expired } = orderly_gate(locked, since_lock, submitted)
        {
            if !submitted {
                let what = if expired {
                    "lock expired"
                } else {
                    "not locked"
                };
                inst.log(
                    "WARN",
                    &format!(
                        "the message queue {what}, so consume later, {}",
                        inst.pull_request(&q)
                    ),
                );
            }
            if !try_lock_later(after, || lock_one(&inst, &q), &inst.shared.cancel).await {
                break;
            }
            // Submitted again: a new request, whose busy time starts now.
            (submitted, ready) = (true, tokio::time::Instant::now());
            continue;
        }
        submitted = false;
        let Some(mut thread) = inst.threads.acquire().await else {
            break;
        };
        let msgs = q.pq.lock().take(batch);
        if msgs.is_empty() {
            let mut pq = q.pq.lock();
            // Re-check under the lock: a pull may have added messages meanwhile.
            if pq.count() == 0 {
                pq.orderly_running = false;
                return;
            }
            continue;
        }
        inst.shared.failures.delivered(&msgs);
        if q.sub == Sub::Topic {
            inst.shared
                .restart
                .consumed(&q.mq(), &msgs, std::time::Instant::now());
        }
        inst.shared.metrics.consumed_on(&q.broker, msgs.len());
        // The loop takes the next batch the moment this one is done (`continueConsume`).
        ready = process(&inst, &mut thread, ready, &msgs).await;
        drop(thread);
        if inst.shared.failures.batch_fails(&msgs) {
            if let Some(suspend) = orderly_failed(&inst, msgs).await {
                q.pq.lock().consume_again(suspend);
                tokio::select! {
                    _ = inst.shared.cancel.cancelled() => break,
                    _ = tokio::time::sleep(inst.shared.cfg.suspend_time()) => {
                        // Submitted again after the suspend: its busy time starts now.
                        ready = tokio::time::Instant::now();
                        continue;
                    }
                }
            }
        }
        let commit = q.pq.lock().commit();
        if !q.is_dropped() {
            q.advance(commit);
            publish_committed(&inst, &q);
        }
    }
    q.pq.lock().orderly_running = false;
}

/// SUSPEND_CURRENT_QUEUE_A_MOMENT (retention-retry reference B7): `checkReconsumeTimes` (4.9.8
/// ConsumeMessageOrderlyService l.358-375). A message at the retry limit is published to
/// `%RETRY%<group>` by the inner producer (`sendMessageBack` l.377-398: no CONSUMER_SEND_MSG_BACK,
/// so no SNDBCK counter moves), for the broker's handleRetryAndDLQ to dead-letter: 4.x parks it
/// in SCHEDULE_TOPIC_XXXX for level 3 + r first, 5.x writes it with DELAY=-1. A publish that
/// fails counts one more consumption, as every other message of the batch does, in memory
/// only. Returns the whole batch (the published ones too, as `makeMessageToConsumeAgain(msgs)`
/// does) to consume again after the suspend time, or None when every message was published.
async fn orderly_failed(inst: &Instance, msgs: Vec<Msg>) -> Option<Vec<Msg>> {
    let f = &inst.shared.failures;
    f.suspends.fetch_add(1, Ordering::Relaxed);
    let max = inst.shared.cfg.max_reconsume();
    let mut suspend = false;
    let mut again = Vec::with_capacity(msgs.len());
    for mut m in msgs {
        f.failed(&m);
        if m.reconsume_times < max {
            suspend = true;
            m.reconsume_times += 1;
            again.push(m);
            continue;
        }
        match fallback::publish(inst, &m, Republish::OrderlyAtLimit).await {
            Ok(Published::DeadLettered) => f.dead_lettered(&m),
            // Back from `%RETRY%` after its level: pending until then.
            Ok(Published::Retry) => {}
            Err(e) => {
                inst.log(
                    "ERROR",
                    &format!(
                        "sendMessageBack exception, group: {} msg: {:?} {e}",
                        inst.shared.cfg.group, m.uniq_key
                    ),
                );
                suspend = true;
                m.reconsume_times += 1;
            }
        }
        again.push(m);
    }
    suspend.then_some(again)
}
