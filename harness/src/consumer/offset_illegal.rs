//! A pull answered 21 OFFSET_ILLEGAL (PULL_OFFSET_MOVED: the queue's min moved past the
//! request, e.g. after a retention deletion), as each client version handles it (consumer
//! §8.3, the version table's "OFFSET_ILLEGAL handling"):
//!
//! * both: `nextOffset = nextBeginOffset`, the process queue is dropped (its pull loop ends);
//! * 4.x (`executeTaskLater(.., 10000)`): 10 s later the offset is set to nextOffset (not
//!   increase-only) and persisted (UPDATE_CONSUMER_OFFSET oneway), the queue is removed; the
//!   next periodic rebalance (the client's interval, ≤ 20 s) adds it again and re-queries
//!   the offset, so the queue pauses 10–30 s;
//! * 5.3 (5.2.0+): the same at once, then a rebalance is triggered: the pause is a round trip.
//!
//! Then `fix the pull request offset, {}` as Java logs it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use remoting::headers::PullMessageResponseHeader;

use crate::consumer::offsets::persist;
use crate::consumer::state::publish_committed;
use crate::consumer::state::{Instance, QueueState};
use harness_model::profile::ClientVersion;

/// 4.x's `executeTaskLater` delay for the offset fix.
pub const FIX_DELAY_4X: Duration = Duration::from_millis(10_000);

/// How long the client waits before fixing the offset of a queue answered 21.
pub fn fix_delay(version: ClientVersion) -> Duration {
    match version {
        ClientVersion::V53 => Duration::ZERO,
        _ => FIX_DELAY_4X,
    }
}

/// Java's `PullResult.toString()` of an OFFSET_ILLEGAL answer.
pub fn pull_result(h: Option<&PullMessageResponseHeader>) -> String {
    let (next, min, max) = h.map_or((-1, -1, -1), |h| {
        (h.next_begin_offset, h.min_offset, h.max_offset)
    });
    format!(
        "PullResult [pullStatus=OFFSET_ILLEGAL, nextBeginOffset={next}, minOffset={min}, maxOffset={max}, msgFoundList=0]"
    )
}

/// Code 21 with `next_begin` for queue `q`: the queue is dropped now and fixed after the
/// version's delay (on the run's task tracker, so the run's shutdown waits for it).
pub fn handle(inst: &Arc<Instance>, q: &Arc<QueueState>, next_begin: i64) {
    q.next_offset.store(next_begin, Ordering::Release);
    q.dropped.store(true, Ordering::Release);
    let delay = fix_delay(inst.shared.cfg.client_version);
    let (inst, q) = (inst.clone(), q.clone());
    inst.shared.tracker.clone().spawn(async move {
        if !delay.is_zero() {
            tokio::select! {
                _ = inst.stop.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
        }
        fix(&inst, &q, next_begin).await;
    });
}

/// `updateOffset(mq, nextOffset, false)` (5.3: `updateAndFreezeOffset`), `persist(mq)`,
/// `removeProcessQueue(mq)`; 5.3 then `rebalanceImmediately()`.
async fn fix(inst: &Arc<Instance>, q: &Arc<QueueState>, next: i64) {
    q.offset.store(next, Ordering::Release);
    publish_committed(inst, q);
    persist(inst, std::slice::from_ref(q)).await;
    {
        // Only this process queue: a rebalance may have replaced it meanwhile.
        let mut queues = inst.queues.lock();
        if queues.get(&q.key()).is_some_and(|cur| Arc::ptr_eq(cur, q)) {
            queues.remove(&q.key());
        }
    }
    inst.log(
        "WARN",
        &format!("fix the pull request offset, {}", inst.pull_request(q)),
    );
    if inst.shared.cfg.client_version == ClientVersion::V53 {
        inst.rebalance_now.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_x_waits_ten_seconds_and_five_three_fixes_at_once() {
        assert_eq!(fix_delay(ClientVersion::V53), Duration::ZERO);
        assert_eq!(fix_delay(ClientVersion::V49), Duration::from_secs(10));
        assert_eq!(fix_delay(ClientVersion::V43), Duration::from_secs(10));
    }
}
