//! ConsumeMessageConcurrentlyService: a pull's new messages become consume requests of
//! `consumeMessageBatchMaxSize` messages, submitted in order to the instance's request queue
//! (one entry per pull, which a worker takes apart request by request, giving back to the
//! head of the queue what follows a request it has to wait on); `consumeThreadMin` workers
//! (`workers.rs`) take them. Each request is consumed as before:
//! started (latency, duplicates, delivery counts), busy for the model's time on its thread,
//! sent back if the listener failed it, then removed from the process queue, whose smallest
//! offset becomes the offset to commit.
//!
//! What is batched: a worker whose request is over at once (no processing time, or a thread
//! catching up) keeps taking requests, and does the starts and the removals of such a run
//! together, at most [`RUN`] requests: one clock read, one histogram lock, one process-queue
//! lock and one commit per queue per run. A request that fails, or whose busy period lies
//! ahead, ends the run and is done alone, in the order of the model.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::time::Instant;

use crate::consumer::process_queue::Msg;
use crate::consumer::route::Sub;
use crate::consumer::send_back;
use crate::consumer::state::{publish_committed, ConsumeRequest, Instance, QueueState};
use crate::consumer::workers::{Clock, RequestQueue};

/// The request queue's capacity: above what the pull gates let one instance cache (each
/// request holds at least one cached message), so a pull loop does not wait for room in
/// practice; when it does, that queue's next pull waits with it.
pub const REQUESTS: usize = 1 << 16;
/// The most requests a worker finishes before doing their bookkeeping and yielding (or the
/// requests of one pull more, when they are over at once).
pub const RUN: usize = 64;

pub fn request_queue() -> RequestQueue<ConsumeRequest> {
    RequestQueue::new(REQUESTS)
}

/// Starts the instance's `consume_threads` workers; they end with the run.
pub fn start_workers(inst: &Arc<Instance>) {
    for _ in 0..inst.shared.cfg.consume_threads {
        inst.shared.tracker.spawn(worker(inst.clone()));
    }
}

/// Submits newly cached messages of `q` as consume requests (`submitConsumeRequest`): one
/// queue entry, which the workers take apart into requests of `consume_batch_max_size`.
pub async fn submit(inst: &Instance, q: &Arc<QueueState>, added: Vec<Msg>) {
    if added.is_empty() {
        return;
    }
    let len = added.len();
    let entry = ConsumeRequest {
        q: q.clone(),
        pulled: Arc::new(added),
        range: 0..len,
        // Submitted now: a thread free earlier starts them now.
        ready: Instant::now(),
        numbered: None,
    };
    inst.requests.submit([entry]).await;
}

/// One consume thread.
async fn worker(inst: Arc<Instance>) {
    let shared = &inst.shared;
    let chunk = (shared.cfg.consume_batch_max_size as usize).max(1);
    // No processing time and no failures: every request of an entry is over when it starts,
    // and the requests are taken together (the per-request loop below gives the same).
    let instant = shared.model.is_instant() && shared.failures.never();
    let mut clock = Clock::new(Instant::now());
    let mut run = Run::default();
    let mut rng = fastrand::Rng::new();
    while let Some((mut entry, mut more)) = inst.requests.next(&shared.cancel).await {
        let mut now = Instant::now();
        loop {
            // "the message queue not be able to consume, because it's dropped" otherwise.
            if !entry.q.is_dropped() {
                let first = entry.range.start;
                let base = *entry.numbered.get_or_insert_with(|| {
                    shared
                        .started
                        .fetch_add(entry.range.len() as u64, Ordering::Relaxed)
                });
                let mut at = first;
                if instant {
                    let (start, _) = clock.period(entry.ready, std::time::Duration::ZERO);
                    if clock.finish_if_past(start, now) {
                        run.push(
                            &entry,
                            at..entry.range.end,
                            entry.range.len().div_ceil(chunk),
                        );
                        at = entry.range.end;
                        if run.finish_if_full(&inst).await {
                            now = Instant::now();
                        }
                    }
                }
                while at < entry.range.end {
                    // One request: the next `chunk` messages.
                    let to = (at + chunk).min(entry.range.end);
                    let msgs = &entry.pulled[at..to];
                    let n = base + (at - first) as u64;
                    let (start, _) = clock.period(entry.ready, std::time::Duration::ZERO);
                    let busy = shared.model.pause_left(start.into_std())
                        + shared.model.batch_time(n, msgs.len() as u64, &mut rng);
                    let end = start + busy;
                    if end > now {
                        now = Instant::now();
                    }
                    let fails = shared.failures.batch_fails(msgs);
                    if !fails && clock.finish_if_past(end, now) {
                        run.push(&entry, at..to, 1);
                        at = to;
                        if run.finish_if_full(&inst).await {
                            now = Instant::now();
                        }
                        continue;
                    }
                    // This request takes time or fails: the ones behind it go back to the
                    // head of the queue, for another worker while this one is busy.
                    if to < entry.range.end {
                        let rest = entry.part(to..entry.range.end, Some(n + (to - at) as u64));
                        inst.requests.push_front(rest);
                        more = true;
                    }
                    run.finish(&inst);
                    if more {
                        inst.requests.wake_one();
                    }
                    let req = ConsumeRequest {
                        range: at..to,
                        numbered: Some(n),
                        ..entry
                    };
                    consume_alone(&inst, req, &mut clock, end, fails).await;
                    now = Instant::now();
                    break;
                }
            }
            match inst.requests.try_pop() {
                Some((r, m)) => (entry, more) = (r, m),
                None => break,
            }
        }
        run.finish(&inst);
    }
    run.finish(&inst);
}

/// A request that takes time or fails: started, busy until `end`, sent back if it failed,
/// removed. What could not be sent back is consumed again after 5 s in a new request,
/// without holding a consume thread (`submitConsumeRequestLater`).
async fn consume_alone(
    inst: &Arc<Instance>,
    req: ConsumeRequest,
    clock: &mut Clock,
    end: Instant,
    fails: bool,
) {
    let shared = &inst.shared;
    started(inst, std::slice::from_ref(&req));
    clock.busy_until(end, &shared.cancel).await;
    let kept = if fails {
        send_back::send_back_failed(inst, &req.q.broker, req.msgs()).await
    } else {
        Vec::new()
    };
    let offsets: Vec<i64> = req
        .msgs()
        .iter()
        .map(|m| m.queue_offset)
        .filter(|o| !kept.iter().any(|k| k.queue_offset == *o))
        .collect();
    removed(inst, &req.q, &offsets);
    if kept.is_empty() {
        return;
    }
    let inst = inst.clone();
    let q = req.q.clone();
    shared.tracker.spawn(async move {
        tokio::select! {
            _ = inst.shared.cancel.cancelled() => {}
            _ = tokio::time::sleep(send_back::LOCAL_RETRY_DELAY) => {
                let len = kept.len();
                let again = ConsumeRequest {
                    q,
                    pulled: Arc::new(kept),
                    range: 0..len,
                    ready: Instant::now(),
                    numbered: None,
                };
                inst.requests.submit([again]).await;
            }
        }
    });
}

/// Requests a worker finished at once, waiting for their bookkeeping: the consecutive
/// requests of one pull as one entry.
#[derive(Default)]
struct Run {
    reqs: Vec<ConsumeRequest>,
    /// Requests in `reqs`.
    requests: usize,
    /// Reused: one queue's consumed offsets.
    offsets: Vec<i64>,
}

impl Run {
    /// `requests` requests of `entry`'s pull, `range` of its messages, finished.
    fn push(&mut self, entry: &ConsumeRequest, range: std::ops::Range<usize>, requests: usize) {
        self.requests += requests;
        if let Some(last) = self.reqs.last_mut() {
            if Arc::ptr_eq(&last.pulled, &entry.pulled) && last.range.end == range.start {
                last.range.end = range.end;
                return;
            }
        }
        self.reqs.push(entry.part(range, None));
    }

    /// At [`RUN`] requests: their bookkeeping, then a yield to the other tasks; true if so
    /// (the caller's clock reading is stale then).
    async fn finish_if_full(&mut self, inst: &Instance) -> bool {
        if self.requests < RUN {
            return false;
        }
        self.finish(inst);
        tokio::task::yield_now().await;
        true
    }

    /// Their starts, then their removals, one process-queue lock and commit per queue.
    fn finish(&mut self, inst: &Instance) {
        if self.reqs.is_empty() {
            return;
        }
        started(inst, &self.reqs);
        let mut i = 0;
        while i < self.reqs.len() {
            let q = &self.reqs[i].q;
            self.offsets.clear();
            while i < self.reqs.len() && Arc::ptr_eq(&self.reqs[i].q, q) {
                self.offsets
                    .extend(self.reqs[i].msgs().iter().map(|m| m.queue_offset));
                i += 1;
            }
            removed(inst, q, &self.offsets);
        }
        self.reqs.clear();
        self.requests = 0;
    }
}

/// Requests start being consumed: delivery and retry accounting, restart recovery,
/// per-broker counts, latency and duplicates.
fn started(inst: &Instance, reqs: &[ConsumeRequest]) {
    let shared = &inst.shared;
    let watching = shared.restart.watching();
    let wall = std::time::Instant::now();
    let mut i = 0;
    while i < reqs.len() {
        // Runs of one queue: one per-broker count each.
        let q = &reqs[i].q;
        let mut n = 0;
        while i < reqs.len() && Arc::ptr_eq(&reqs[i].q, q) {
            let msgs = reqs[i].msgs();
            shared.failures.delivered(msgs);
            // The restart watch follows the topic's queues (see `pull.rs`).
            if watching && q.sub == Sub::Topic {
                shared.restart.consumed(&q.mq(), msgs, wall);
            }
            n += msgs.len();
            i += 1;
        }
        shared.metrics.consumed_on(&q.broker, n);
    }
    shared
        .metrics
        .consume_start(reqs.iter().map(ConsumeRequest::msgs));
}

/// Consumed messages leave the process queue; its smallest offset is the one to commit.
fn removed(inst: &Instance, q: &QueueState, offsets: &[i64]) {
    let commit = q.pq.lock().remove(offsets);
    if !q.is_dropped() {
        q.advance(commit);
        publish_committed(inst, q);
    }
}
