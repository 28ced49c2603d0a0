//! The consume threads (`consumeThreadMin`) as clocks: each thread is busy for the model's
//! time per message, on absolute deadlines, so timer rounding does not add up.
//!
//! A Java consume thread takes the next request the moment it finishes the last one: its busy
//! periods are back to back. A `tokio::time::sleep(t)` per message instead ends on the next
//! millisecond tick after `t` and the next message starts when the task is polled, so the
//! rounding and the wake-up latency are added to every message: one thread at 10 ms consumed
//! 90/s, at 1 ms 480/s. Here each thread keeps the instant it became free (`free_at`); work
//! that was already waiting starts at that instant, not when the task happens to run, and
//! ends at `start + busy`. The task sleeps until that deadline only when it lies ahead; a
//! deadline already past (sub-millisecond times, a late wake-up) is caught up without a timer.
//! So N threads at a constant T consume N/T per second, each message at most one timer tick
//! late, and the cost is a timer per tick per thread, not a spinning CPU per thread.

use parking_lot::Mutex;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// When a busy period starts: when the thread became free, or when the work became ready,
/// whichever is later.
pub fn start_of(free_at: Instant, ready: Instant) -> Instant {
    free_at.max(ready)
}

/// How a busy period that ends at `deadline` is waited for at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// The deadline lies ahead: sleep until it.
    Until(Instant),
    /// The deadline has passed (the thread is catching up): no timer. The next message is
    /// another task, or waits on the threads' semaphore, which counts against tokio's
    /// cooperative budget: a long catch-up still lets other tasks run.
    CatchUp,
}

pub fn wait_for(deadline: Instant, now: Instant) -> Wait {
    if deadline > now {
        Wait::Until(deadline)
    } else {
        Wait::CatchUp
    }
}

/// An instance's consume threads.
pub struct ConsumeThreads {
    /// One permit per thread; tokio's semaphore is FIFO, as the executor's queue is.
    permits: Semaphore,
    /// The instant each idle thread became free. Held only to push or pop.
    free_at: Mutex<Vec<Instant>>,
}

impl ConsumeThreads {
    pub fn new(threads: usize, now: Instant) -> ConsumeThreads {
        ConsumeThreads {
            permits: Semaphore::new(threads),
            free_at: Mutex::new(vec![now; threads]),
        }
    }

    /// Waits for a free thread (None only if the semaphore were closed).
    pub async fn acquire(&self) -> Option<ConsumeThread<'_>> {
        let permit = self.permits.acquire().await.ok()?;
        let mut idle = self.free_at.lock();
        // The thread that has been idle the longest, as a pool's waiting threads take work.
        let i = (0..idle.len()).min_by_key(|&i| idle[i])?;
        let free_at = idle.swap_remove(i);
        Some(ConsumeThread {
            pool: self,
            _permit: permit,
            free_at,
        })
    }
}

/// One consume thread, held for one busy period.
pub struct ConsumeThread<'a> {
    pool: &'a ConsumeThreads,
    _permit: SemaphorePermit<'a>,
    free_at: Instant,
}

impl ConsumeThread<'_> {
    /// The start of work that became ready at `ready`.
    pub fn start(&self, ready: Instant) -> Instant {
        start_of(self.free_at, ready)
    }

    /// Busy until `deadline` (or until `cancel`); returns the instant the thread is free again.
    pub async fn busy_until(&mut self, deadline: Instant, cancel: &CancellationToken) -> Instant {
        match wait_for(deadline, Instant::now()) {
            Wait::Until(at) => {
                tokio::select! {
                    _ = cancel.cancelled() => {
                        self.free_at = Instant::now();
                        return self.free_at;
                    }
                    _ = tokio::time::sleep_until(at) => {}
                }
            }
            Wait::CatchUp => {}
        }
        self.free_at = deadline;
        deadline
    }
}

impl Drop for ConsumeThread<'_> {
    fn drop(&mut self) {
        self.pool.free_at.lock().push(self.free_at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Duration;

    /// A busy period of `busy` for work ready at `ready` on `thread`: its start and its end.
    fn period(thread: &ConsumeThread<'_>, ready: Instant, busy: Duration) -> (Instant, Instant) {
        let start = thread.start(ready);
        (start, start + busy)
    }

    #[test]
    fn waiting_work_starts_when_the_thread_became_free() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // The task wakes 0.9 ms late; the next message was already waiting: it starts at the
        // deadline, not at the late wake-up.
        assert_eq!(start_of(t0 + ms(10), t0), t0 + ms(10));
        // Work that arrives after the thread went idle starts when it arrives.
        assert_eq!(start_of(t0 + ms(10), t0 + ms(15)), t0 + ms(15));
        assert_eq!(wait_for(t0 + ms(20), t0 + ms(11)), Wait::Until(t0 + ms(20)));
        assert_eq!(wait_for(t0 + ms(10), t0 + ms(11)), Wait::CatchUp);
        assert_eq!(wait_for(t0 + ms(10), t0 + ms(10)), Wait::CatchUp);
    }

    /// 100 messages of 100 µs on one thread end exactly 10 ms after the first started, however
    /// late each timer fires; with a sleep per message they would take at least 100 ms.
    #[tokio::test(start_paused = true)]
    async fn deadlines_do_not_accumulate_rounding() {
        let pool = ConsumeThreads::new(1, Instant::now());
        let cancel = CancellationToken::new();
        let t0 = Instant::now();
        let mut end = t0;
        for _ in 0..100 {
            let mut th = pool.acquire().await.unwrap();
            let (_, deadline) = period(&th, t0, Duration::from_micros(100));
            end = th.busy_until(deadline, &cancel).await;
        }
        assert_eq!(end - t0, Duration::from_millis(10));
        // The paused clock jumped to the 1 ms ticks only: 100 µs sleeps were never rounded up
        // one by one.
        assert!(Instant::now() - t0 <= Duration::from_millis(11));
    }

    /// Two threads share the waiting work; the one idle longest takes the next period.
    #[tokio::test(start_paused = true)]
    async fn threads_keep_their_own_clocks() {
        let t0 = Instant::now();
        let pool = ConsumeThreads::new(2, t0);
        let cancel = CancellationToken::new();
        let ms = Duration::from_millis;
        let mut a = pool.acquire().await.unwrap();
        let mut b = pool.acquire().await.unwrap();
        let (_, da) = period(&a, t0, ms(30));
        let (_, db) = period(&b, t0, ms(10));
        assert_eq!(b.busy_until(db, &cancel).await, t0 + ms(10));
        drop(b);
        let c = pool.acquire().await.unwrap();
        assert_eq!(c.start(t0), t0 + ms(10), "b's clock, not a's");
        drop(c);
        assert_eq!(a.busy_until(da, &cancel).await, t0 + ms(30));
        // Cancelled: the thread is free now, not at its deadline.
        drop(a);
        let mut d = pool.acquire().await.unwrap();
        let far = Instant::now() + Duration::from_secs(60);
        cancel.cancel();
        assert!(d.busy_until(far, &cancel).await < far);
    }
}
