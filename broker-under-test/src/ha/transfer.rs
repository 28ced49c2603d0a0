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
//! Not modelled: 4.3's per-request 5 × 1 s waits adding up across a batch, and 4.9's 1 s check
//! slices (completion up to 1 s after the deadline); here a request ends at its deadline.

use std::{
    sync::Arc,
    thread::JoinHandle,
    time::{Duration, Instant},
};

use parking_lot::{Condvar, Mutex};

use super::state::HaState;
use crate::{
    config::WaitPolicy,
    store::{FlushThenReplica, PutMessageStatus, ReplicaGate, StatusDone},
};

/// Longest sleep without a deadline in sight (a stop or a request wakes it anyway).
const IDLE_WAIT: Duration = Duration::from_millis(1000);

struct Request {
    next_offset: i64,
    submitted: Instant,
    deadline: Instant,
    done: StatusDone,
}

#[derive(Default)]
struct Queue {
    requests: Vec<Request>,
    stopped: bool,
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
                let _q = t.queue.lock();
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

    fn finish(&self, r: Request, status: PutMessageStatus) {
        let w = &self.state.waits;
        w.record(r.submitted.elapsed());
        if status == PutMessageStatus::FlushSlaveTimeout {
            w.flush_slave_timeout
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        (r.done)(status);
    }

    fn run(&self) {
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
            done,
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

    use std::sync::atomic::Ordering;
}
