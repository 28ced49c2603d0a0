//! The final outcome of every send of a job, by send number, for the reconciliation with the
//! store after a fault; and the time of the first success after a kill (`recovery_ms`).
//!
//! Two bytes per scheduled send (the outcome, and the cluster broker that gave it), allocated
//! once from the schedule's count (an open-loop schedule is known in advance), written by the
//! connection readers without a lock: a 10 s run at 100,000 sends/s costs 2 MB, whatever
//! happens to the broker.
//!
//! On a cluster two recoveries differ: the faulted broker's (a success from *that* broker
//! again) and the application's (any final success, possibly retried on another broker).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use crate::recorder::Outcome;

/// What the harness knows about one send when the load ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum SendState {
    /// No final answer was recorded: never written (dropped, no connection), or still in flight
    /// when the load closed.
    NoAnswer = 0,
    /// Answered SUCCESS: acknowledged, so it must be in the store.
    Ok = 1,
    /// Answered code 2 (or code 1 `[PC_SYNCHRONIZED]`): RocketMQ never stores it.
    Busy = 2,
    /// Answered with another code (FLUSH_DISK_TIMEOUT, SYSTEM_ERROR, ...): may or may not be stored.
    Refused = 3,
    /// Written, no answer within `send_timeout`.
    Timeout = 4,
    /// Written, and its connection failed before the answer (a kill).
    ConnectionError = 5,
}

impl SendState {
    fn from_u8(v: u8) -> SendState {
        match v {
            1 => SendState::Ok,
            2 => SendState::Busy,
            3 => SendState::Refused,
            4 => SendState::Timeout,
            5 => SendState::ConnectionError,
            _ => SendState::NoAnswer,
        }
    }

    fn of(outcome: Outcome) -> SendState {
        match outcome {
            Outcome::Ok => SendState::Ok,
            Outcome::Busy(_) => SendState::Busy,
            Outcome::Timeout => SendState::Timeout,
            Outcome::ConnectionError => SendState::ConnectionError,
            Outcome::Dropped => SendState::NoAnswer,
            Outcome::SystemError
            | Outcome::FlushDiskTimeout
            | Outcome::MessageIllegal
            | Outcome::NotAvailable(_)
            | Outcome::FlushSlaveTimeout
            | Outcome::SlaveNotAvailable
            | Outcome::OtherCode(_) => SendState::Refused,
        }
    }
}

/// Per-send outcomes of one job, shared by the connection readers.
pub struct OutcomeLog {
    states: Vec<AtomicU8>,
    /// The cluster broker (router index) of each send's final answer; [`NO_BROKER`] with one
    /// broker or no answer.
    brokers: Vec<AtomicU8>,
    /// The broker the faults hit (router index); None with one broker.
    faulted: Option<usize>,
    epoch: Instant,
    /// Nanoseconds after `epoch` of the last kill; 0 = no kill yet.
    kill_ns: AtomicU64,
    /// Nanoseconds after `epoch` of the first success from the faulted broker of a send written
    /// after the last kill; 0 = none yet.
    first_ok_ns: AtomicU64,
    /// The same for any final success, whichever broker gave it (the application's view).
    first_app_ok_ns: AtomicU64,
}

/// "No cluster broker" in [`OutcomeLog`]'s broker bytes (a cluster has at most 16).
const NO_BROKER: u8 = u8::MAX;

/// The recovery times of one kill: the faulted broker's and the application's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovery {
    pub broker: Option<Duration>,
    pub app: Option<Duration>,
}

impl std::fmt::Debug for OutcomeLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutcomeLog")
            .field("sends", &self.states.len())
            .finish_non_exhaustive()
    }
}

impl OutcomeLog {
    /// A log for sends `0..count` on one broker.
    pub fn new(count: u64) -> OutcomeLog {
        OutcomeLog::on_cluster(count, None)
    }

    /// A log for sends `0..count`; `faulted` is the cluster broker the faults hit (router
    /// index), None with one broker.
    pub fn on_cluster(count: u64, faulted: Option<usize>) -> OutcomeLog {
        OutcomeLog {
            states: (0..count).map(|_| AtomicU8::new(0)).collect(),
            brokers: (0..count).map(|_| AtomicU8::new(NO_BROKER)).collect(),
            faulted,
            epoch: Instant::now(),
            kill_ns: AtomicU64::new(0),
            first_ok_ns: AtomicU64::new(0),
            first_app_ok_ns: AtomicU64::new(0),
        }
    }

    fn ns(&self, t: Instant) -> u64 {
        (t.saturating_duration_since(self.epoch).as_nanos() as u64).max(1)
    }

    pub fn len(&self) -> u64 {
        self.states.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// The final outcome of send `seq`, whose last attempt went to cluster broker `broker`
    /// (None with one broker) and was written at `written`. A send number outside the schedule
    /// is ignored (it cannot happen with a fixed schedule).
    pub fn record(
        &self,
        seq: u64,
        outcome: Outcome,
        broker: Option<usize>,
        written: Instant,
        now: Instant,
    ) {
        if let Some(s) = self.states.get(seq as usize) {
            s.store(SendState::of(outcome) as u8, Ordering::Relaxed);
        }
        if let (Some(s), Some(b)) = (self.brokers.get(seq as usize), broker) {
            s.store(b.min(NO_BROKER as usize - 1) as u8, Ordering::Relaxed);
        }
        if outcome == Outcome::Ok {
            let kill = self.kill_ns.load(Ordering::Acquire);
            // Only a send written after the kill proves the new broker answers: answers the
            // dead one wrote before dying can still be read from the socket afterwards.
            if kill != 0 && self.ns(written) > kill {
                let first = |slot: &AtomicU64| {
                    let _ =
                        slot.compare_exchange(0, self.ns(now), Ordering::AcqRel, Ordering::Acquire);
                };
                first(&self.first_app_ok_ns);
                if self.faulted.is_none() || broker == self.faulted {
                    first(&self.first_ok_ns);
                }
            }
        }
    }

    /// The cluster broker (router index) that gave send `seq` its final answer.
    pub fn broker_of(&self, seq: u64) -> Option<usize> {
        let b = self.brokers.get(seq as usize)?.load(Ordering::Relaxed);
        (b != NO_BROKER).then_some(b as usize)
    }

    pub fn state(&self, seq: u64) -> SendState {
        self.states
            .get(seq as usize)
            .map_or(SendState::NoAnswer, |s| {
                SendState::from_u8(s.load(Ordering::Relaxed))
            })
    }

    /// Marks a kill at `at`; returns the recovery times of the previous kill.
    pub fn mark_kill(&self, at: Instant) -> Recovery {
        let previous = self.recoveries();
        self.first_ok_ns.store(0, Ordering::Release);
        self.first_app_ok_ns.store(0, Ordering::Release);
        self.kill_ns.store(self.ns(at), Ordering::Release);
        previous
    }

    /// Kill to the first success from the faulted broker of a send written after it, for the
    /// last kill.
    pub fn recovery(&self) -> Option<Duration> {
        self.recoveries().broker
    }

    /// Both recoveries of the last kill: the faulted broker's and the application's.
    pub fn recoveries(&self) -> Recovery {
        let kill = self.kill_ns.load(Ordering::Acquire);
        let since = |slot: &AtomicU64| {
            let ok = slot.load(Ordering::Acquire);
            (kill != 0 && ok != 0).then(|| Duration::from_nanos(ok.saturating_sub(kill)))
        };
        Recovery {
            broker: since(&self.first_ok_ns),
            app: since(&self.first_app_ok_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::BusyClass;

    #[test]
    fn outcomes_are_kept_by_send_number() {
        let log = OutcomeLog::new(4);
        let t = Instant::now();
        log.record(0, Outcome::Ok, None, t, t);
        log.record(1, Outcome::Busy(BusyClass::Overload), None, t, t);
        log.record(2, Outcome::ConnectionError, None, t, t);
        log.record(9, Outcome::Ok, None, t, t);
        assert_eq!(log.state(0), SendState::Ok);
        assert_eq!(log.state(1), SendState::Busy);
        assert_eq!(log.state(2), SendState::ConnectionError);
        assert_eq!(log.state(3), SendState::NoAnswer);
        assert_eq!(log.state(9), SendState::NoAnswer);
    }

    #[test]
    fn recovery_counts_only_sends_written_after_the_kill() {
        let log = OutcomeLog::new(3);
        let before = Instant::now();
        let kill = before + Duration::from_millis(10);
        assert_eq!(log.mark_kill(kill), Recovery::default());
        // Answered after the kill but written before it: the dead broker's last words.
        log.record(
            0,
            Outcome::Ok,
            None,
            before,
            kill + Duration::from_millis(1),
        );
        assert_eq!(log.recovery(), None);
        log.record(
            1,
            Outcome::Ok,
            None,
            kill + Duration::from_millis(200),
            kill + Duration::from_millis(250),
        );
        log.record(
            2,
            Outcome::Ok,
            None,
            kill + Duration::from_millis(300),
            kill + Duration::from_millis(400),
        );
        let r = log.recovery().unwrap();
        assert!((r.as_millis() as i64 - 250).abs() <= 1, "{r:?}");
        assert!(log
            .mark_kill(kill + Duration::from_secs(1))
            .broker
            .is_some());
        assert_eq!(log.recovery(), None);
    }

    #[test]
    fn on_a_cluster_the_broker_recovers_later_than_the_application() {
        // Broker 1 is killed; broker 0 takes the retries at once.
        let log = OutcomeLog::on_cluster(3, Some(1));
        let kill = Instant::now();
        log.mark_kill(kill);
        let ms = |n| kill + Duration::from_millis(n);
        log.record(0, Outcome::Ok, Some(0), ms(2), ms(3));
        let r = log.recoveries();
        assert_eq!(r.broker, None);
        assert!((r.app.unwrap().as_millis() as i64 - 3).abs() <= 1, "{r:?}");
        log.record(1, Outcome::Ok, Some(1), ms(900), ms(950));
        let r = log.recoveries();
        assert!(
            (r.broker.unwrap().as_millis() as i64 - 950).abs() <= 1,
            "{r:?}"
        );
        assert!((r.app.unwrap().as_millis() as i64 - 3).abs() <= 1, "{r:?}");
        assert_eq!(log.broker_of(0), Some(0));
        assert_eq!(log.broker_of(1), Some(1));
        assert_eq!(log.broker_of(2), None);
    }
}
