//! GroupTransferService: SYNC_MASTER puts waiting for their slave (HA reference §3.2, §3.3).
//!
//! A put appended with WAIT=true hands its end offset here through the store's
//! [`ReplicaGate`]. 4.x first asks `isSlaveOK` and answers SLAVE_NOT_AVAILABLE at once without a
//! connection or with the fastest slave `haSlaveFallbehindMax` behind; 5.3 never does. Otherwise
//! the request waits on the thread `GroupTransferService` until the acknowledgements cover it
//! (PUT_OK) or its deadline passes (FLUSH_SLAVE_TIMEOUT). The thread sleeps until the earliest
//! deadline and is woken by every slave report and every new request; callbacks run on it, never
//! under its lock. RocketMQ's list has no cap and neither has ours (nor the group-commit list
//! beside it): each entry is a put whose client is waiting for its answer, so the list holds
//! at most the requests in flight on the broker's (bounded) connections during one timeout.
//!
//! The wait itself per version ([`WaitSteps`], audit #5): 5.3 ends a request at its deadline;
//! 4.9 and 4.3 take the requests of one swap in order, each with 1-s waits that a slave report
//! ends early (`run_stepped`): 4.9 while its deadline has not passed (with a silent slave, 12
//! comes up to 1 s after the deadline, later for a request whose turn came late), 4.3 five
//! waits whatever the time, its client answered at the deadline by the send thread's latch.

use std::{
    sync::Arc,
    thread::JoinHandle,
    time::{Duration, Instant},
};

use parking_lot::{Condvar, Mutex};

use super::state::HaState;
use crate::{
    config::{WaitPolicy, WaitSteps},
    store::{FlushThenReplica, PutMessageStatus, ReplicaGate, StatusDone},
};

/// Longest sleep without a deadline in sight (a stop or a request wakes it anyway).
const IDLE_WAIT: Duration = Duration::from_millis(1000);
/// 4.x: `waitForRunning(10)` before each swap of the request lists.
const SWAP_WAIT: Duration = Duration::from_millis(10);
/// 4.x: `notifyTransferObject.waitForRunning(1000)`.
const STEP: Duration = Duration::from_millis(1000);
/// 4.3: the waits per request.
const STEPS_4_3: u32 = 5;

struct Request {
    next_offset: i64,
    submitted: Instant,
    deadline: Instant,
    /// None once answered (4.3: the latch answered the client before the service was done).
    done: Option<StatusDone>,
}

#[derive(Default)]
struct Queue {
    requests: Vec<Request>,
    stopped: bool,
    /// A slave report since the last wait (`WaitNotifyObject.hasNotified`): the next wait
    /// returns at once.
    reported: bool,
}

/// The gate a SYNC_MASTER installs in its store.
pub struct Transfer {
    state: Arc<HaState>,
    policy: WaitPolicy,
    fallbehind_max: i64,
    queue: Mutex<Queue>,
    cv: Condvar,
}

impl Transfer {
    pub fn new(state: Arc<HaState>, policy: WaitPolicy, fallbehind_max: i64) -> Arc<Self> {
        let t = Arc::new(Transfer {
            state: state.clone(),
            policy,
            fallbehind_max,
            queue: Mutex::new(Queue::default()),
            cv: Condvar::new(),
        });
        let weak = Arc::downgrade(&t);
        state.set_ack_listener(Box::new(move || {
            if let Some(t) = weak.upgrade() {
                // Taken so the wake-up cannot fall between the thread's check and its wait.
                let mut q = t.queue.lock();
                q.reported = true;
                t.cv.notify_all();
            }
        }));
        t
    }

    /// Starts the thread `GroupTransferService`.
    pub fn start(self: &Arc<Self>) -> std::io::Result<JoinHandle<()>> {
        let t = Arc::clone(self);
        std::thread::Builder::new()
            .name("GroupTransferService".into())
            .spawn(move || t.run())
    }

    /// Ends the thread: waiting puts are answered FLUSH_SLAVE_TIMEOUT now, later ones at once.
    pub fn stop(&self) {
        self.queue.lock().stopped = true;
        self.cv.notify_all();
    }

    fn acked(&self, next_offset: i64) -> bool {
        // 5.3 counts connections one by one; 4.x compares with the master-wide maximum.
        self.state.acked_by(
            next_offset,
            self.policy.acks,
            !self.policy.slave_not_available,
        )
    }

    fn finish(&self, mut r: Request, status: PutMessageStatus) {
        self.answer(&mut r, status);
    }

    /// Answers `r`'s client, unless it was answered already.
    fn answer(&self, r: &mut Request, status: PutMessageStatus) {
        if let Some(done) = self.take_answer(r, status) {
            done(status);
        }
    }

    /// Counts `r`'s answer and hands back its callback, for a caller that must run it outside
    /// the queue lock; None if it was answered already.
    fn take_answer(&self, r: &mut Request, status: PutMessageStatus) -> Option<StatusDone> {
        let done = r.done.take()?;
        let w = &self.state.waits;
        w.record(r.submitted.elapsed());
        if status == PutMessageStatus::FlushSlaveTimeout {
            w.flush_slave_timeout
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Some(done)
    }

    fn run(&self) {
        if self.policy.steps != WaitSteps::AtDeadline {
            return self.run_stepped();
        }
        loop {
            let (ready, stopped) = {
                let mut q = self.queue.lock();
                loop {
                    let now = Instant::now();
                    let due = q
                        .requests
                        .iter()
                        .any(|r| r.deadline <= now || self.acked(r.next_offset));
                    if due || q.stopped {
                        break;
                    }
                    let wake = q
                        .requests
                        .iter()
                        .map(|r| r.deadline)
                        .min()
                        .unwrap_or(now + IDLE_WAIT);
                    self.cv.wait_until(&mut q, wake);
                }
                let stopped = q.stopped;
                let now = Instant::now();
                let mut ready = Vec::new();
                let mut i = 0;
                while i < q.requests.len() {
                    let r = &q.requests[i];
                    if stopped || r.deadline <= now || self.acked(r.next_offset) {
                        ready.push(q.requests.swap_remove(i));
                    } else {
                        i += 1;
                    }
                }
                (ready, stopped)
            };
            for r in ready {
                let status = if self.acked(r.next_offset) {
                    PutMessageStatus::PutOk
                } else {
                    if self.policy.slave_not_available {
                        eprintln!("transfer messsage to slave timeout, {}", r.next_offset);
                    } else {
                        eprintln!(
                            "transfer message to slave timeout, offset : {}, request acks: {}",
                            r.next_offset, self.policy.acks
                        );
                    }
                    PutMessageStatus::FlushSlaveTimeout
                };
                self.finish(r, status);
            }
            if stopped {
                return;
            }
        }
    }
}

impl Transfer {
    /// 4.x's GroupTransferService.run: `waitForRunning(10)`, swap, then `doWaitTransfer` over
    /// the swapped requests in order (4.9.8 HAService l.286-313, 4.3.2 l.278-306).
    fn run_stepped(&self) {
        loop {
            let mut batch = {
                let mut q = self.queue.lock();
                if q.requests.is_empty() && !q.stopped {
                    self.cv.wait_for(&mut q, SWAP_WAIT);
                }
                std::mem::take(&mut q.requests)
            };
            for i in 0..batch.len() {
                let mut ok = self.acked(batch[i].next_offset);
                let mut waits = 0;
                while !ok {
                    let go_on = match self.policy.steps {
                        WaitSteps::FiveWaits => waits < STEPS_4_3,
                        _ => Instant::now() < batch[i].deadline,
                    };
                    if !go_on || !self.wait_step(&mut batch[i..]) {
                        break;
                    }
                    waits += 1;
                    ok = self.acked(batch[i].next_offset);
                }
                if !ok {
                    eprintln!(
                        "transfer messsage to slave timeout, {}",
                        batch[i].next_offset
                    );
                }
                let status = if ok {
                    PutMessageStatus::PutOk
                } else {
                    PutMessageStatus::FlushSlaveTimeout
                };
                self.answer(&mut batch[i], status);
            }
            let mut q = self.queue.lock();
            if q.stopped {
                for mut r in std::mem::take(&mut q.requests) {
                    self.answer(&mut r, PutMessageStatus::FlushSlaveTimeout);
                }
                return;
            }
        }
    }

    /// One `notifyTransferObject.waitForRunning(1000)`: until a slave report (one that came
    /// before the wait ends it at once) or 1 s; false when stopped. 4.3: meanwhile every
    /// request whose send-thread latch (`syncFlushTimeout`) ran out is answered 12, in this
    /// batch (`pending`) and behind it.
    fn wait_step(&self, pending: &mut [Request]) -> bool {
        let end = Instant::now() + STEP;
        let latch = self.policy.steps == WaitSteps::FiveWaits;
        let mut q = self.queue.lock();
        loop {
            if q.stopped {
                return false;
            }
            if std::mem::take(&mut q.reported) {
                return true;
            }
            let now = Instant::now();
            if latch {
                let timed_out: Vec<StatusDone> = pending
                    .iter_mut()
                    .chain(q.requests.iter_mut())
                    .filter(|r| r.deadline <= now)
                    .filter_map(|r| self.take_answer(r, PutMessageStatus::FlushSlaveTimeout))
                    .collect();
                if !timed_out.is_empty() {
                    // Callbacks never run under the queue lock.
                    parking_lot::MutexGuard::unlocked(&mut q, || {
                        for done in timed_out {
                            done(PutMessageStatus::FlushSlaveTimeout);
                        }
                    });
                    continue;
                }
            }
            if now >= end {
                return true;
            }
            let next_latch = latch
                .then(|| {
                    pending
                        .iter()
                        .chain(q.requests.iter())
                        .filter(|r| r.done.is_some())
                        .map(|r| r.deadline)
                        .min()
                })
                .flatten();
            let wake = next_latch.map_or(end, |l| l.min(end));
            self.cv.wait_until(&mut q, wake);
        }
    }
}

impl ReplicaGate for Transfer {
    fn await_replica(&self, next_offset: i64, done: StatusDone) {
        if self.policy.slave_not_available
            && !self.state.is_slave_ok(next_offset, self.fallbehind_max)
        {
            self.state
                .waits
                .slave_not_available
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            done(PutMessageStatus::SlaveNotAvailable);
            return;
        }
        let now = Instant::now();
        let r = Request {
            next_offset,
            submitted: now,
            deadline: now + self.policy.timeout,
            done: Some(done),
        };
        {
            let mut q = self.queue.lock();
            if !q.stopped {
                q.requests.push(r);
                self.cv.notify_all();
                drop(q);
                // HAService.getWaitNotifyObject().wakeupAll(): writers send now.
                self.state.data.notify_waiters();
                return;
            }
        }
        self.finish(r, PutMessageStatus::FlushSlaveTimeout);
    }

    fn ordering(&self) -> FlushThenReplica {
        self.policy.ordering
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(slave_not_available: bool, timeout_ms: u64) -> WaitPolicy {
        WaitPolicy {
            timeout: Duration::from_millis(timeout_ms),
            slave_not_available,
            acks: 2,
            ordering: FlushThenReplica::Parallel,
            steps: WaitSteps::AtDeadline,
        }
    }

    fn submit(t: &Transfer, offset: i64) -> std::sync::mpsc::Receiver<PutMessageStatus> {
        let (tx, rx) = std::sync::mpsc::channel();
        t.await_replica(
            offset,
            Box::new(move |s| {
                let _ = tx.send(s);
            }),
        );
        rx
    }

    const WAIT: Duration = Duration::from_secs(20);

    #[test]
    fn without_a_slave_4x_answers_11_at_once() {
        let state = HaState::new(None);
        let t = Transfer::new(state.clone(), policy(true, 60_000), 1 << 28);
        let rx = submit(&t, 100);
        assert_eq!(rx.try_recv(), Ok(PutMessageStatus::SlaveNotAvailable));
        assert_eq!(state.waits.slave_not_available.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_report_answers_put_ok_and_silence_answers_12() {
        let state = HaState::new(None);
        let t = Transfer::new(state.clone(), policy(true, 200), 1 << 28);
        let h = t.start().unwrap();
        let conn = state.open_connection("127.0.0.1:1".parse().unwrap());
        let acked = submit(&t, 100);
        state.report(conn, 100, true);
        assert_eq!(acked.recv_timeout(WAIT), Ok(PutMessageStatus::PutOk));
        let begin = Instant::now();
        let late = submit(&t, 200);
        assert_eq!(
            late.recv_timeout(WAIT),
            Ok(PutMessageStatus::FlushSlaveTimeout)
        );
        assert!(begin.elapsed() >= Duration::from_millis(200));
        // 4.x: a slave 256 MiB behind counts as none.
        let far = submit(&t, 100 + (1 << 28));
        assert_eq!(far.try_recv(), Ok(PutMessageStatus::SlaveNotAvailable));
        t.stop();
        h.join().unwrap();
    }

    #[test]
    fn five_three_counts_connections_and_never_answers_11() {
        let state = HaState::new(None);
        let mut p = policy(false, 60_000);
        p.acks = 3;
        let t = Transfer::new(state.clone(), p, 1 << 28);
        let h = t.start().unwrap();
        let peer = "127.0.0.1:1".parse().unwrap();
        let (a, b) = (state.open_connection(peer), state.open_connection(peer));
        let rx = submit(&t, 50);
        state.report(a, 50, true);
        assert!(
            rx.recv_timeout(Duration::from_millis(50)).is_err(),
            "one ack of two"
        );
        state.report(b, 60, true);
        assert_eq!(rx.recv_timeout(WAIT), Ok(PutMessageStatus::PutOk));
        let pending = submit(&t, 1000);
        t.stop();
        assert_eq!(
            pending.recv_timeout(WAIT),
            Ok(PutMessageStatus::FlushSlaveTimeout)
        );
        h.join().unwrap();
    }

    fn stepped(steps: WaitSteps, timeout_ms: u64) -> WaitPolicy {
        WaitPolicy {
            steps,
            ..policy(true, timeout_ms)
        }
    }

    /// Audit #5: 4.9.8 doWaitTransfer waits in whole seconds while the deadline has not
    /// passed, so with a silent slave 12 comes at the first second past the deadline (1.5 s
    /// here: at 2 s), not at the deadline.
    #[test]
    fn four_nine_answers_12_at_the_first_whole_second_past_the_deadline() {
        let state = HaState::new(None);
        let t = Transfer::new(
            state.clone(),
            stepped(WaitSteps::OneSecondWaits, 1500),
            1 << 28,
        );
        let h = t.start().unwrap();
        let _conn = state.open_connection("127.0.0.1:1".parse().unwrap());
        let begin = Instant::now();
        let rx = submit(&t, 100);
        assert_eq!(
            rx.recv_timeout(WAIT),
            Ok(PutMessageStatus::FlushSlaveTimeout)
        );
        let took = begin.elapsed();
        assert!(took >= Duration::from_millis(1990), "12 after {took:?}");
        t.stop();
        h.join().unwrap();
    }

    /// Audit #5: 4.3.2 doWaitTransfer gives a request five waits, each ended early by any slave
    /// report: a slave that reports without catching up gets 12 after five reports, long
    /// before the deadline.
    #[test]
    fn four_three_gives_up_after_five_waits() {
        let state = HaState::new(None);
        let t = Transfer::new(
            state.clone(),
            stepped(WaitSteps::FiveWaits, 60_000),
            1 << 28,
        );
        let h = t.start().unwrap();
        let conn = state.open_connection("127.0.0.1:1".parse().unwrap());
        let begin = Instant::now();
        let rx = submit(&t, 100);
        let mut reports = 0;
        let answer = loop {
            state.report(conn, 50, true);
            reports += 1;
            if let Ok(a) = rx.recv_timeout(Duration::from_millis(200)) {
                break a;
            }
            assert!(reports < 20, "no answer after {reports} reports");
        };
        assert_eq!(answer, PutMessageStatus::FlushSlaveTimeout);
        assert!((5..=6).contains(&reports), "{reports} reports");
        assert!(begin.elapsed() < Duration::from_secs(10));
        t.stop();
        h.join().unwrap();
    }

    /// 4.3: with a silent slave the service is busy with one request for 5 s, but every
    /// client hears 12 at its own deadline (the send thread's latch).
    #[test]
    fn four_three_clients_hear_12_at_their_deadline_while_the_service_waits() {
        let state = HaState::new(None);
        let t = Transfer::new(state.clone(), stepped(WaitSteps::FiveWaits, 300), 1 << 28);
        let h = t.start().unwrap();
        let _conn = state.open_connection("127.0.0.1:1".parse().unwrap());
        let begin = Instant::now();
        let (a, b) = (submit(&t, 100), submit(&t, 200));
        assert_eq!(
            a.recv_timeout(WAIT),
            Ok(PutMessageStatus::FlushSlaveTimeout)
        );
        assert_eq!(
            b.recv_timeout(WAIT),
            Ok(PutMessageStatus::FlushSlaveTimeout)
        );
        let took = begin.elapsed();
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_millis(900),
            "{took:?}"
        );
        t.stop();
        h.join().unwrap();
    }

    use std::sync::atomic::Ordering;
}
