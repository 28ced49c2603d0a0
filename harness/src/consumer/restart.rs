//! What a broker restart does to the consumers: how long until they consume again, and how
//! many messages they consume twice because of it.
//!
//! * Recovery: from the restarted broker being ready to the first consume start of a message
//!   that was pulled on a connection opened after the kill. Messages still cached from before
//!   the kill do not count: consuming them says nothing about the consumer having recovered.
//!   On a cluster only the killed broker's queues count (broker K of `[fault] broker = K`):
//!   the other brokers' queues were consumed all along, on connections opened before the kill
//!   or after (a link reopened for another reason says nothing about broker K).
//! * Duplicates: those consumed after the first restart (offsets the killed broker had not
//!   persisted, and in-memory offsets not yet committed, are read again).
//!
//! The job learns of a restart only after it happened (the injector kills and restarts in one
//! step), so pulls are recorded per queue and connection as they come, and matched with the
//! kill and restart instants when those arrive.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::consumer::process_queue::Msg;
use crate::consumer::route::Mq;

/// The first FOUND pull of one queue on one connection.
#[derive(Debug, Clone, Copy)]
struct FirstPull {
    opened: Instant,
    offset: i64,
    consumed: Option<Instant>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Per queue (of any broker): the first pull on each connection, newest last.
    pulls: BTreeMap<Mq, Vec<FirstPull>>,
    /// (kill, restarted broker ready) of each restart.
    restarts: Vec<(Instant, Instant)>,
    /// Duplicates counted when the first restart was noted.
    duplicates_before: Option<u64>,
    /// On a cluster: the killed broker's name; only its queues' pulls tell its recovery.
    broker: Option<String>,
}

#[derive(Debug, Default)]
pub struct RestartWatch {
    /// Some first pull waits for its first consume (checked without the lock).
    pending: AtomicBool,
    inner: Mutex<Inner>,
}

impl RestartWatch {
    /// A FOUND pull of `queue` whose first message is `offset`, answered on the connection
    /// opened at `opened`.
    pub fn pulled(&self, queue: &Mq, offset: i64, opened: Option<Instant>) {
        let Some(opened) = opened else { return };
        let mut inner = self.inner.lock();
        let list = inner.pulls.entry(queue.clone()).or_default();
        if list.last().is_some_and(|p| p.opened == opened) {
            return;
        }
        list.push(FirstPull {
            opened,
            offset,
            consumed: None,
        });
        self.pending.store(true, Ordering::Release);
    }

    /// Whether some first pull still waits for its first consume: else
    /// [`RestartWatch::consumed`] has nothing to do.
    pub fn watching(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// `msgs` of `queue` start being consumed at `now`.
    pub fn consumed(&self, queue: &Mq, msgs: &[Msg], now: Instant) {
        if !self.pending.load(Ordering::Acquire) {
            return;
        }
        let mut inner = self.inner.lock();
        let Some(list) = inner.pulls.get_mut(queue) else {
            return;
        };
        let top = msgs.iter().map(|m| m.queue_offset).max().unwrap_or(-1);
        for p in list.iter_mut().filter(|p| p.consumed.is_none()) {
            if top >= p.offset {
                p.consumed = Some(now);
            }
        }
        let open = inner.pulls.values().flatten().any(|p| p.consumed.is_none());
        self.pending.store(open, Ordering::Release);
    }

    /// The broker (on a cluster: the one named `broker`) was killed at `killed` and was ready
    /// again at `ready`; `duplicates` so far.
    pub fn restarted(
        &self,
        killed: Instant,
        ready: Instant,
        duplicates: u64,
        broker: Option<&str>,
    ) {
        let mut inner = self.inner.lock();
        inner.restarts.push((killed, ready));
        inner.duplicates_before.get_or_insert(duplicates);
        if let Some(b) = broker {
            inner.broker = Some(b.to_owned());
        }
    }

    /// The longest recovery over the restarts (None without a restart, or when the consumers
    /// never consumed after one), and the duplicates consumed since the first restart.
    pub fn figures(&self, duplicates: u64) -> (Option<Duration>, Option<u64>) {
        let inner = self.inner.lock();
        let recoveries: Vec<Option<Duration>> = inner
            .restarts
            .iter()
            .map(|&(killed, ready)| {
                inner
                    .pulls
                    .iter()
                    .filter(|(q, _)| inner.broker.as_deref().is_none_or(|b| *q.broker == *b))
                    .flat_map(|(_, list)| list)
                    .filter(|p| p.opened >= killed)
                    .filter_map(|p| p.consumed)
                    .min()
                    .map(|first| first.saturating_duration_since(ready))
            })
            .collect();
        let recovery = if recoveries.iter().any(Option::is_none) {
            None
        } else {
            recoveries.into_iter().flatten().max()
        };
        let dups = inner
            .duplicates_before
            .map(|b| duplicates.saturating_sub(b));
        (recovery, dups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(o: i64) -> Msg {
        Msg {
            queue_offset: o,
            body_len: 1,
            born_ms: 0,
            stored_ms: 0,
            uniq_key: None,
            ..Msg::default()
        }
    }

    #[test]
    fn recovery_counts_messages_pulled_after_the_kill_only() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let w = RestartWatch::default();
        let q0 = &Mq::new("broker-0", 0);
        w.pulled(q0, 0, Some(t0));
        w.consumed(q0, &[msg(0)], t0 + s(1));
        // Killed at 10 s, ready at 12 s; a cached message from the old connection is consumed
        // at 13 s: not a recovery.
        w.restarted(t0 + s(10), t0 + s(12), 5, None);
        w.consumed(q0, &[msg(40)], t0 + s(13));
        assert_eq!(
            w.figures(5),
            (None, Some(0)),
            "no consume after the restart yet"
        );
        w.pulled(q0, 30, Some(t0 + s(20)));
        w.pulled(q0, 35, Some(t0 + s(20))); // the same connection: its first pull counts
        w.consumed(q0, &[msg(29)], t0 + s(21)); // a duplicate below the first offset pulled
        assert_eq!(w.figures(6).0, None);
        w.consumed(q0, &[msg(30)], t0 + s(22));
        assert_eq!(w.figures(9), (Some(s(10)), Some(4)));
        assert!(!w.pending.load(Ordering::Acquire));
    }

    #[test]
    fn on_a_cluster_only_the_killed_broker_s_queues_tell_its_recovery() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let w = RestartWatch::default();
        let (q0, q1) = (&Mq::new("broker-0", 0), &Mq::new("broker-1", 0));
        w.restarted(t0 + s(10), t0 + s(12), 0, Some("broker-1"));
        // Broker 0's link reopened after the kill and consumed at once: not broker 1's recovery.
        w.pulled(q0, 100, Some(t0 + s(11)));
        w.consumed(q0, &[msg(100)], t0 + s(13));
        assert_eq!(w.figures(0), (None, Some(0)));
        w.pulled(q1, 50, Some(t0 + s(14)));
        w.consumed(q1, &[msg(50)], t0 + s(15));
        assert_eq!(w.figures(0), (Some(s(3)), Some(0)));
    }
}
