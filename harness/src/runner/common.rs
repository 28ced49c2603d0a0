//! What the pacer and the connection readers share: the in-flight entry of one attempt, and the
//! one place where a send ends (its outcome recorded, its closed-loop slot released).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::thread::Thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::cluster::router::Router;
use crate::consumer::SendTracking;
use crate::fault::OutcomeLog;
use crate::recorder::{Outcome, Recorder};
use crate::runner::retry::{retryable, NotStoreOk, Retry, MAX_ATTEMPTS};
use crate::send_order::key::KeyGate;
use harness_model::profile::RetryPolicy;

/// One attempt on the wire, owned by the reader of its connection until it ends.
///
/// Kept to 64 bytes, one cache line in [`crate::runner::inflight`]'s table, and aligned to 16
/// so that moving one is four aligned 16-byte copies: at 56 bytes the copies overlapped, and
/// loading what had just been stored across two stores stalled (store-to-load forwarding
/// failed; `perf annotate` put a third of the answer loop's samples there). Its three instants
/// are one `Instant` and two offsets before it: a send is never written before it is intended
/// (the pacer writes what is due, or later from its backlog), and a retry never before its
/// first attempt.
#[repr(align(16))]
pub struct InFlight {
    pub seq: u64,
    pub written: Instant,
    /// `written - intended`, in nanoseconds.
    lag_ns: u64,
    /// `written - first_written`, in nanoseconds (0 for a first attempt).
    retried_ns: u64,
    segment: u32,
    pub attempt: u32,
    /// The cluster broker it was written to (index of the router); [`NO_BROKER`] with one.
    broker: u32,
    /// The opaque it was written under, in the entry's padding instead of a field of the
    /// table's slot: set by the in-flight table, or by the pacer for an entry it hands to a
    /// reader thread ([`InFlight::with_opaque`]).
    pub(crate) opaque: i32,
}

/// [`InFlight::broker`] with one broker.
const NO_BROKER: u32 = u32::MAX;

impl InFlight {
    #[inline(always)]
    pub fn new(
        seq: u64,
        intended: Instant,
        written: Instant,
        first_written: Option<Instant>,
        segment: usize,
        attempt: u32,
        broker: Option<usize>,
    ) -> InFlight {
        // Equal instants (every closed-loop send) cost a comparison, not a subtraction.
        let ns = |t: Instant| {
            if t == written {
                0
            } else {
                let d = written.saturating_duration_since(t);
                d.as_nanos().min(u128::from(u64::MAX)) as u64
            }
        };
        InFlight {
            seq,
            written,
            lag_ns: ns(intended),
            retried_ns: first_written.map_or(0, ns),
            segment: segment as u32,
            attempt,
            broker: broker.map_or(NO_BROKER, |b| b as u32),
            opaque: 0,
        }
    }

    /// This entry, written under `opaque`.
    #[inline(always)]
    pub fn with_opaque(mut self, opaque: i32) -> InFlight {
        self.opaque = opaque;
        self
    }

    pub fn intended(&self) -> Instant {
        before(self.written, self.lag_ns)
    }

    pub fn first_written(&self) -> Instant {
        before(self.written, self.retried_ns)
    }

    /// First written at `t` or before; without arithmetic for a first attempt (the sweep asks
    /// of every entry held, every few milliseconds).
    pub fn first_written_by(&self, t: Instant) -> bool {
        if self.retried_ns == 0 {
            self.written <= t
        } else {
            self.first_written() <= t
        }
    }

    /// Intended when written: every closed-loop send.
    pub fn written_when_intended(&self) -> bool {
        self.lag_ns == 0
    }

    pub fn segment(&self) -> usize {
        self.segment as usize
    }

    pub fn broker(&self) -> Option<usize> {
        (self.broker != NO_BROKER).then_some(self.broker as usize)
    }
}

/// `t` less `ns` nanoseconds; the instant itself for 0, with no arithmetic.
fn before(t: Instant, ns: u64) -> Instant {
    if ns == 0 {
        t
    } else {
        t - Duration::from_nanos(ns)
    }
}

/// The instant at which a batch of sends ends, and the last time since an instant worked out
/// from it. The sends of a closed-loop refill were all written (and intended) at one instant
/// and one read brings their answers, so one `Instant` subtraction (about 55 instructions with
/// its conversion to microseconds) serves the whole run of them.
pub struct EndTime {
    pub at: Instant,
    last: Cell<Option<(Instant, u64)>>,
}

impl EndTime {
    pub fn new(at: Instant) -> EndTime {
        EndTime {
            at,
            last: Cell::new(None),
        }
    }

    /// Microseconds from `t` to [`EndTime::at`], saturating at 0.
    pub fn us_since(&self, t: Instant) -> u64 {
        match self.last.get() {
            Some((from, us_)) if from == t => us_,
            _ => {
                let v = us(self.at.saturating_duration_since(t));
                self.last.set(Some((t, v)));
                v
            }
        }
    }
}

/// Who reads a connection's answers ([`crate::runner::reader`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// A thread per connection (the open loop): the pacer keeps its schedule while answers are
    /// read.
    Thread,
    /// The pacer itself, between refills (the closed loop).
    Inline,
}

/// What readers share with the pacer.
pub struct Common {
    pub policy: RetryPolicy,
    /// `retry_another_broker_when_not_store_ok`.
    pub not_store_ok: NotStoreOk,
    pub send_timeout: Duration,
    pub oneway: bool,
    pub closed_loop: bool,
    pub outstanding: AtomicUsize,
    pub current_segment: AtomicUsize,
    pub closing: AtomicBool,
    pub retry_tx: SyncSender<Retry>,
    pub pacer: Mutex<Option<Thread>>,
    /// With consumers: where acknowledged sends are marked.
    pub tracking: Option<std::sync::Arc<SendTracking>>,
    /// Each send's final outcome by send number, when a fault experiment will reconcile them
    /// with the store.
    pub outcomes: Option<Arc<OutcomeLog>>,
    /// With several brokers: queue selection and the fault table (`harness::cluster`).
    pub cluster: Option<Arc<Router>>,
    /// `ordering = "sync-by-key"`: which keys have a send in flight (`harness::order`).
    pub key_gate: Option<Arc<KeyGate>>,
}

impl Common {
    /// Who reads answers: the pacer itself in the closed loop, where nothing is due at an
    /// instant; a thread per connection in the open loop ([`crate::runner::reader`]).
    pub fn reading(&self) -> Reading {
        if self.closed_loop {
            Reading::Inline
        } else {
            Reading::Thread
        }
    }

    pub fn wake(&self) {
        if let Some(t) = self.pacer.lock().as_ref() {
            t.unpark();
        }
    }

    /// Ends one scheduled send: its final outcome, and in the closed loop the slot it held.
    /// Every send ends here exactly once, so `sent` equals the sum of the outcomes.
    pub fn end_send(
        &self,
        rec: &mut Recorder,
        segment: usize,
        outcome: Outcome,
        latency_us: Option<u64>,
        service_us: Option<u64>,
    ) {
        rec.outcome(segment, outcome, latency_us, service_us);
        if self.closed_loop {
            self.outstanding.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Retries `e` if the policy and budget allow; otherwise ends the send. The caller holds
    /// the recorder for a whole batch of answers and calls [`Common::wake`] once after it:
    /// waking the pacer per answer would cost a futex call per response.
    /// Inlined: called once per answer, it took seven arguments, the last on the stack, and
    /// read the entry through a pointer (callgrind on `floor.toml` 1,158 → 1,123 instructions a
    /// send).
    #[inline(always)]
    pub fn finish(
        &self,
        rec: &mut Recorder,
        e: &InFlight,
        outcome: Outcome,
        code: Option<i32>,
        end: &EndTime,
        answered: bool,
    ) {
        let now = end.at;
        if e.attempt == 1 {
            rec.first_attempt(e.segment(), outcome);
        }
        if let (Some(router), Some(b)) = (&self.cluster, e.broker()) {
            // A SendResult of any status is a success for the fault table: the Java client
            // calls updateFaultItem(.., isolation = false) after sendKernelImpl returns one.
            router.record(b, now - e.written, !outcome.is_send_result(), answered, now);
        }
        if retryable(self.policy, self.not_store_ok, outcome, code)
            && e.attempt < MAX_ATTEMPTS
            && now < e.first_written() + self.send_timeout
        {
            let r = Retry {
                seq: e.seq,
                intended: e.intended(),
                first_written: e.first_written(),
                segment: e.segment(),
                attempt: e.attempt + 1,
                last_broker: e.broker(),
            };
            if self.retry_tx.try_send(r).is_ok() {
                return;
            }
        }
        if let Some(g) = &self.key_gate {
            g.release(e.seq);
        }
        if outcome == Outcome::Ok && answered {
            if let Some(t) = &self.tracking {
                t.ack(e.seq);
            }
        }
        if let Some(log) = &self.outcomes {
            log.record(e.seq, outcome, e.broker(), e.written, now);
        }
        // A closed-loop send is intended when it is written: its latency is its service time.
        let since_written = end.us_since(e.written);
        let latency = if e.written_when_intended() {
            since_written
        } else {
            us(now.saturating_duration_since(e.intended()))
        };
        let service = answered.then_some(since_written);
        self.end_send(rec, e.segment(), outcome, Some(latency), service);
    }
}

/// Microseconds, saturating.
pub fn us(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_in_flight_entry_gives_back_its_instants_broker_and_segment() {
        let intended = Instant::now();
        let first = intended + Duration::from_nanos(1_234_567);
        let written = first + Duration::from_millis(250);
        let e = InFlight::new(7, intended, written, Some(first), 3, 2, Some(5));
        assert_eq!(e.intended(), intended);
        assert_eq!(e.first_written(), first);
        assert_eq!(e.written, written);
        assert!(!e.written_when_intended());
        assert_eq!(
            (e.seq, e.segment(), e.attempt, e.broker()),
            (7, 3, 2, Some(5))
        );
        assert!(e.first_written_by(first) && !e.first_written_by(intended));
        // A closed-loop first attempt: all three instants are one.
        let e = InFlight::new(8, written, written, None, 0, 1, None);
        assert_eq!((e.intended(), e.first_written()), (written, written));
        assert!(e.written_when_intended() && e.broker().is_none());
        assert!(e.first_written_by(written) && !e.first_written_by(first));
        // Broker 0 is a broker, not "none".
        assert_eq!(
            InFlight::new(9, written, written, None, 0, 1, Some(0)).broker(),
            Some(0)
        );
    }

    #[test]
    fn the_time_since_an_instant_is_worked_out_again_for_another_instant() {
        let t0 = Instant::now();
        let end = EndTime::new(t0 + Duration::from_micros(2_500));
        assert_eq!(end.us_since(t0), 2_500);
        assert_eq!(end.us_since(t0), 2_500);
        assert_eq!(end.us_since(t0 + Duration::from_micros(500)), 2_000);
        assert_eq!(end.us_since(t0), 2_500);
        // An instant after the end saturates at 0, as the subtraction did.
        assert_eq!(end.us_since(t0 + Duration::from_secs(1)), 0);
    }
}
