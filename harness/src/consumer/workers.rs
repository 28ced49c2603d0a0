//! A consume executor as Java builds one (`consumeExecutor`: `consumeThreadMin` threads over
//! one queue of requests): a fixed set of worker tasks taking requests in FIFO order from one
//! bounded queue, each worker a consume thread with its own clock (`threads.rs`).
//!
//! Why workers and not a task per request: a spawned task per message (the model's default
//! `consumeMessageBatchMaxSize` 1) paid a task allocation, the tracker, a semaphore permit
//! and a lock on the threads' clocks for every message, and every message's bookkeeping
//! (process-queue removal, offset, counters) on its own. A worker that finds a request it can
//! finish at once (its busy period already over: no processing time, or a thread catching
//! up) takes the next one itself, and its bookkeeping is done per run of such requests.
//! A request whose busy period lies ahead is slept on by its worker, which first wakes one
//! more idle worker if requests are waiting: so N workers at T each still consume N/T.
//!
//! Idle workers wait on one `Notify`, which wakes the longest waiter first: the thread idle
//! longest takes the next request, as before.

use std::collections::VecDeque;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::consumer::threads::{start_of, wait_for, Wait};

/// The requests waiting for a worker. Java's queue is unbounded; here the submitter waits
/// for room, which the pull gates make rare: a request holds at least one cached message.
pub struct RequestQueue<R> {
    /// Held only to push or pop.
    queue: Mutex<VecDeque<R>>,
    capacity: usize,
    /// Idle workers wait here (FIFO).
    work: Notify,
    /// Submitters wait here while the queue is full.
    room: Notify,
}

impl<R> RequestQueue<R> {
    pub fn new(capacity: usize) -> RequestQueue<R> {
        RequestQueue {
            queue: Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
            work: Notify::new(),
            room: Notify::new(),
        }
    }

    /// Appends `reqs` in order (waiting for room while the queue is full) and wakes one idle
    /// worker; the workers wake each other for the rest (see [`RequestQueue::wake_one`]).
    pub async fn submit(&self, reqs: impl IntoIterator<Item = R>) {
        let mut reqs = reqs.into_iter().peekable();
        while reqs.peek().is_some() {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let mut q = self.queue.lock();
                while q.len() < self.capacity {
                    match reqs.next() {
                        Some(r) => q.push_back(r),
                        None => break,
                    }
                }
            }
            self.work.notify_one();
            if reqs.peek().is_some() {
                room.await;
            }
        }
    }

    /// The next request without waiting, and whether more wait behind it.
    pub fn try_pop(&self) -> Option<(R, bool)> {
        let mut q = self.queue.lock();
        let was_full = q.len() >= self.capacity;
        let r = q.pop_front()?;
        let more = !q.is_empty();
        drop(q);
        if was_full {
            self.room.notify_waiters();
        }
        Some((r, more))
    }

    /// Puts `r` back at the head of the queue: the rest of an entry a worker took apart
    /// (`concurrent.rs`). It was taken out just before, so this exceeds the capacity by at
    /// most one entry per worker, and wakes no one: the caller wakes a worker if it waits.
    pub fn push_front(&self, r: R) {
        self.queue.lock().push_front(r);
    }

    /// Waits for the next request; None once `cancel` fired.
    pub async fn next(&self, cancel: &CancellationToken) -> Option<(R, bool)> {
        loop {
            let work = self.work.notified();
            tokio::pin!(work);
            // Registered before looking, so a submit in between is not missed.
            work.as_mut().enable();
            if let Some(x) = self.try_pop() {
                return Some(x);
            }
            tokio::select! {
                _ = cancel.cancelled() => return None,
                _ = work => {}
            }
        }
    }

    /// Wakes one idle worker: called by a worker about to be busy while requests wait.
    pub fn wake_one(&self) {
        self.work.notify_one();
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.queue.lock().len()
    }
}

/// One worker's consume thread clock: the instant it became free.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    free_at: Instant,
}

impl Clock {
    pub fn new(now: Instant) -> Clock {
        Clock { free_at: now }
    }

    /// The busy period of work ready at `ready` taking `busy`: its start and its end.
    pub fn period(&self, ready: Instant, busy: std::time::Duration) -> (Instant, Instant) {
        let start = start_of(self.free_at, ready);
        (start, start + busy)
    }

    /// A period ending at `end` that is already over at `now` (catching up, or no
    /// processing time): the thread is free from `end` on, with no timer. False, and the
    /// clock unchanged, when `end` lies ahead.
    pub fn finish_if_past(&mut self, end: Instant, now: Instant) -> bool {
        match wait_for(end, now) {
            Wait::CatchUp => {
                self.free_at = end;
                true
            }
            Wait::Until(_) => false,
        }
    }

    /// Busy until `end` (or until `cancel`); returns the instant the thread is free again.
    pub async fn busy_until(&mut self, end: Instant, cancel: &CancellationToken) -> Instant {
        if let Wait::Until(at) = wait_for(end, Instant::now()) {
            tokio::select! {
                _ = cancel.cancelled() => {
                    self.free_at = Instant::now();
                    return self.free_at;
                }
                _ = tokio::time::sleep_until(at) => {}
            }
        }
        self.free_at = end;
        end
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn requests_come_out_in_order_and_a_full_queue_holds_the_submitter() {
        let q = Arc::new(RequestQueue::new(2));
        let cancel = CancellationToken::new();
        let submitter = {
            let q = q.clone();
            tokio::spawn(async move { q.submit(0..5).await })
        };
        // Wait (bounded) for the first two to be queued: the third must wait for room.
        let deadline = Instant::now() + Duration::from_secs(5);
        while q.len() < 2 && Instant::now() < deadline {
            tokio::task::yield_now().await;
        }
        assert_eq!(q.len(), 2);
        assert!(!submitter.is_finished(), "the submitter waits for room");
        let mut got = Vec::new();
        while got.len() < 5 {
            let (r, _) = q.next(&cancel).await.unwrap();
            got.push(r);
        }
        assert_eq!(got, [0, 1, 2, 3, 4]);
        submitter.await.unwrap();
        assert!(q.try_pop().is_none());
        cancel.cancel();
        assert!(q.next(&cancel).await.is_none(), "cancelled while idle");
    }

    #[tokio::test(start_paused = true)]
    async fn more_says_whether_requests_wait_behind() {
        let q = RequestQueue::new(8);
        q.submit([1, 2]).await;
        assert_eq!(q.try_pop(), Some((1, true)));
        assert_eq!(q.try_pop(), Some((2, false)));
    }

    #[tokio::test(start_paused = true)]
    async fn what_is_given_back_comes_out_first() {
        let q = RequestQueue::new(2);
        q.submit([1, 2]).await;
        let (first, _) = q.try_pop().unwrap();
        q.push_front(first * 10);
        assert_eq!(q.try_pop(), Some((10, true)));
        assert_eq!(q.try_pop(), Some((2, false)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_clock_keeps_back_to_back_periods_without_timers() {
        let t0 = Instant::now();
        let mut c = Clock::new(t0);
        let ms = Duration::from_millis;
        // Work waiting since t0 on a thread free since t0: 0..10 ms, over by t0 + 15 ms.
        let (s, e) = c.period(t0, ms(10));
        assert_eq!((s, e), (t0, t0 + ms(10)));
        assert!(c.finish_if_past(e, t0 + ms(15)));
        // The next starts when the thread became free, not at the late "now".
        let (s, e) = c.period(t0, ms(10));
        assert_eq!((s, e), (t0 + ms(10), t0 + ms(20)));
        assert!(
            !c.finish_if_past(e, t0 + ms(15)),
            "ahead: must be waited for"
        );
        let cancel = CancellationToken::new();
        assert_eq!(c.busy_until(e, &cancel).await, t0 + ms(20));
        assert_eq!(Instant::now(), t0 + ms(20));
    }
}
