//! The drain of a prefilled backlog: how fast the consumers eat `prefill` messages that were
//! all stored before they started (`drain_rate`).
//!
//! The clock runs from the first PULL_MESSAGE any queue sends to the moment the last
//! acknowledged prefill message is consumed for the first time. Duplicates and redeliveries do
//! not move it: the figure is the rate at which the backlog's distinct messages reach the
//! listener. Instants are kept as nanoseconds since an origin in atomics, because every pull
//! task touches them and a lock per pull would cost more than the figure is worth.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// "Not yet" in the instant slots (an instant is stored as nanoseconds + 1).
const UNSET: u64 = 0;

/// Shared by every pull and consume task of one job.
#[derive(Debug)]
pub struct Backlog {
    origin: Instant,
    /// Acknowledged prefill messages: the backlog's length; 0 = no backlog.
    target: AtomicU64,
    /// Distinct prefill messages consumed so far.
    consumed: AtomicU64,
    first_pull: AtomicU64,
    end: AtomicU64,
}

impl Backlog {
    pub fn new(origin: Instant) -> Backlog {
        Backlog {
            origin,
            target: AtomicU64::new(0),
            consumed: AtomicU64::new(0),
            first_pull: AtomicU64::new(UNSET),
            end: AtomicU64::new(UNSET),
        }
    }

    /// The prefill is over: `acked` messages wait for the consumers.
    pub fn set_target(&self, acked: u64) {
        self.target.store(acked, Ordering::Release);
    }

    fn stamp(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.origin).as_nanos() as u64 + 1
    }

    fn read(&self, slot: &AtomicU64) -> Option<Duration> {
        match slot.load(Ordering::Acquire) {
            UNSET => None,
            n => Some(Duration::from_nanos(n - 1)),
        }
    }

    /// A pull is about to be sent; only the first one counts.
    pub fn pull_sent(&self) {
        if self.first_pull.load(Ordering::Relaxed) == UNSET {
            let now = self.stamp(Instant::now());
            let _ =
                self.first_pull
                    .compare_exchange(UNSET, now, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// `n` prefill messages were consumed for the first time.
    pub fn consumed(&self, n: u64) {
        let total = self.consumed.fetch_add(n, Ordering::AcqRel) + n;
        let target = self.target.load(Ordering::Acquire);
        if target > 0 && total >= target {
            let now = self.stamp(Instant::now());
            let _ = self
                .end
                .compare_exchange(UNSET, now, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// Whether there was a backlog and all of it was consumed.
    pub fn drained(&self) -> bool {
        self.read(&self.end).is_some()
    }

    /// Messages per second over the drain; None without a backlog or before it drained.
    pub fn rate(&self) -> Option<f64> {
        drain_rate(
            self.target.load(Ordering::Acquire),
            self.read(&self.first_pull)?,
            self.read(&self.end)?,
        )
    }
}

/// `messages` consumed between `first_pull` and `end` (both since the same origin), per second.
/// None for an empty backlog or a span that is not positive (a clock that did not move says
/// nothing about the rate).
pub fn drain_rate(messages: u64, first_pull: Duration, end: Duration) -> Option<f64> {
    let span = end.checked_sub(first_pull)?;
    (messages > 0 && !span.is_zero()).then(|| messages as f64 / span.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_messages_over_first_pull_to_end() {
        let ms = Duration::from_millis;
        assert_eq!(drain_rate(400_000, ms(10), ms(810)), Some(500_000.0));
        assert_eq!(drain_rate(1, ms(0), ms(1000)), Some(1.0));
        assert_eq!(drain_rate(0, ms(0), ms(1000)), None, "no backlog");
        assert_eq!(drain_rate(5, ms(20), ms(20)), None, "no time passed");
        assert_eq!(drain_rate(5, ms(30), ms(20)), None, "end before start");
    }

    #[test]
    fn the_clock_starts_at_the_first_pull_and_stops_at_the_last_message() {
        let origin = Instant::now() - Duration::from_secs(1);
        let b = Backlog::new(origin);
        b.set_target(10);
        assert_eq!(b.rate(), None, "nothing pulled yet");
        b.pull_sent();
        let first = b.read(&b.first_pull).unwrap();
        b.pull_sent();
        assert_eq!(
            b.read(&b.first_pull),
            Some(first),
            "only the first pull counts"
        );
        b.consumed(4);
        assert!(!b.drained());
        assert_eq!(b.rate(), None, "not drained yet");
        b.consumed(6);
        assert!(b.drained());
        let end = b.read(&b.end).unwrap();
        assert!(end >= first);
        b.consumed(3);
        assert_eq!(
            b.read(&b.end),
            Some(end),
            "later messages do not move the end"
        );
        let rate = b.rate().unwrap();
        let expect = 10.0 / (end - first).as_secs_f64();
        assert!((rate - expect).abs() < 1e-6 * expect, "{rate} vs {expect}");
    }

    #[test]
    fn without_a_target_nothing_drains() {
        let b = Backlog::new(Instant::now());
        b.pull_sent();
        b.consumed(100);
        assert!(!b.drained());
        assert_eq!(b.rate(), None);
    }
}
