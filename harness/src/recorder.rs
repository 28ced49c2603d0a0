//! Outcome classification and per-worker recording.
//!
//! Every send scheduled in a segment ends in exactly one [`Outcome`], so
//! `sent = ok + busy + system_error + flush_disk_timeout + message_illegal + other_codes +
//! not_available_disk_full + not_available_other + flush_slave_timeout + slave_not_available +
//! timeouts + dropped + connection_errors`. Each worker (pacer, one per connection) owns a
//! [`Recorder`]; they are merged once at the end. A sampler takes the per-second
//! [`Interval`] out of each recorder for the time series.

use std::time::Instant;

use hdrhistogram::Histogram;

use crate::write_blocks::{self, BrokerAnswer, WriteBlocks};

mod outcome;
mod runs;
mod second;
mod segment;
pub use outcome::{classify, parse_queue_stats, BusyClass, NotAvailableClass, Outcome};
use segment::{count, count_n, record, record_n};
pub use segment::{histogram, quantile, Counts, Interval, Segment};

/// The counts of the second under way; its histograms are the segments' gain
/// ([`second::take`]).
#[derive(Debug, Clone, Default)]
struct SecondCounts {
    counts: Counts,
    written: u64,
}

/// One worker's recorder.
#[derive(Debug, Clone)]
pub struct Recorder {
    pub segments: Vec<Segment>,
    second: SecondCounts,
    /// Per segment: its histograms at the last [`Recorder::move_interval_into`].
    taken: Vec<second::Taken>,
    scratch: Histogram<u64>,
    /// Each cluster broker's disk-full write blocks over the whole job (index of the router).
    pub write_blocks: Vec<WriteBlocks>,
    /// Inside [`Recorder::runs`]: the final outcomes not yet recorded, all alike.
    run: Option<runs::OutcomeRun>,
    batching: bool,
}

impl Recorder {
    /// Calls `f`, recording the final outcomes it reports ([`Recorder::outcome`]) once per run
    /// of equal ones ([`runs`]). Every outcome is recorded when this returns, so a caller
    /// holding the recorder's lock across the call never shows a partial state.
    pub fn runs<R>(&mut self, f: impl FnOnce(&mut Recorder) -> R) -> R {
        self.batching = true;
        let r = f(self);
        self.flush_run();
        self.batching = false;
        r
    }

    /// Records the run under way, if any.
    fn flush_run(&mut self) {
        if let Some(r) = self.run.take() {
            self.outcome_n(r.seg, r.outcome, r.latency_us, r.service_us, r.n);
        }
    }

    /// One more outcome inside [`Recorder::runs`]: the run under way grows, or is recorded
    /// and this one starts the next.
    fn push_run(
        &mut self,
        seg: usize,
        outcome: Outcome,
        latency_us: Option<u64>,
        service_us: Option<u64>,
    ) {
        let next = runs::OutcomeRun::one(seg, outcome, latency_us, service_us);
        if !self.run.as_mut().is_some_and(|r| r.grow(&next)) {
            self.flush_run();
            self.run = Some(next);
        }
    }

    pub fn new(segments: usize) -> Recorder {
        Recorder {
            segments: (0..segments).map(|_| Segment::default()).collect(),
            second: SecondCounts::default(),
            taken: (0..segments).map(|_| second::Taken::default()).collect(),
            scratch: histogram(),
            write_blocks: Vec::new(),
            run: None,
            batching: false,
        }
    }

    fn seg(&mut self, s: usize) -> &mut Segment {
        let last = self.segments.len() - 1;
        &mut self.segments[s.min(last)]
    }

    pub fn scheduled(&mut self, seg: usize) {
        self.seg(seg).sent += 1;
    }

    /// `n` sends scheduled at once (the closed loop fills every free slot in one go).
    pub fn scheduled_n(&mut self, seg: usize, n: u64) {
        self.seg(seg).sent += n;
    }

    /// An attempt was written `lag_us` after its intended time.
    pub fn written(&mut self, seg: usize, lag_us: u64) {
        self.written_n(seg, lag_us, 1);
    }

    /// `n` attempts were written `lag_us` after their intended time (the sends of a closed-loop
    /// refill share both): one histogram record for all of them.
    pub fn written_n(&mut self, seg: usize, lag_us: u64, n: u64) {
        let s = self.seg(seg);
        s.attempts += n;
        record_n(&mut s.lag, lag_us, n);
        self.second.written += n;
    }

    /// A response to one attempt (final or about to be retried), `outcome` its
    /// [`classify`]: per-attempt accounting.
    #[inline]
    pub fn attempt_answer(&mut self, seg: usize, outcome: Outcome, remark: Option<&str>) {
        if let Outcome::Busy(c) = outcome {
            let s = self.seg(seg);
            s.attempt_busy[c.index()] += 1;
            if let Some((period, size)) = remark.and_then(parse_queue_stats) {
                record(&mut s.period_in_queue, period);
                record(&mut s.size_of_queue, size);
            }
        }
    }

    /// The final outcome of a send. `latency_us` is from the intended time, `service_us` from
    /// the last write (absent when nothing was written).
    #[inline]
    pub fn outcome(
        &mut self,
        seg: usize,
        outcome: Outcome,
        latency_us: Option<u64>,
        service_us: Option<u64>,
    ) {
        if self.batching {
            return self.push_run(seg, outcome, latency_us, service_us);
        }
        self.outcome_n(seg, outcome, latency_us, service_us, 1);
    }

    /// `n` final outcomes alike.
    pub(super) fn outcome_n(
        &mut self,
        seg: usize,
        outcome: Outcome,
        latency_us: Option<u64>,
        service_us: Option<u64>,
        n: u64,
    ) {
        let s = self.seg(seg);
        count_n(&mut s.counts, outcome, n as i64);
        if let Some(l) = latency_us {
            record_n(&mut s.latency, l, n);
            match outcome {
                Outcome::Ok => record_n(&mut s.ok_latency, l, n),
                Outcome::Busy(_) => record_n(&mut s.busy_latency, l, n),
                _ => {}
            }
        }
        if let Some(sv) = service_us {
            record_n(&mut s.service, sv, n);
        }
        count_n(&mut self.second.counts, outcome, n as i64);
    }

    /// The answer to a send's first attempt (whatever happens to it later).
    #[inline]
    pub fn first_attempt(&mut self, seg: usize, outcome: Outcome) {
        let s = self.seg(seg);
        match outcome {
            Outcome::Ok => s.first_ok += 1,
            Outcome::Busy(_) => s.first_busy += 1,
            _ => {}
        }
    }

    /// An attempt answered by broker `broker` of a cluster at `at`.
    pub fn broker_answer(&mut self, seg: usize, broker: usize, outcome: Outcome, at: Instant) {
        let (slot, kind) = match outcome {
            Outcome::Ok => (Some(0), BrokerAnswer::Wrote),
            Outcome::Busy(_) => (Some(1), BrokerAnswer::Other),
            Outcome::NotAvailable(NotAvailableClass::DiskFull) => (Some(2), BrokerAnswer::DiskFull),
            _ => (None, BrokerAnswer::Other),
        };
        write_blocks::of(&mut self.write_blocks, broker).answer(kind, at);
        let s = self.seg(seg);
        if s.per_broker.len() <= broker {
            s.per_broker.resize(broker + 1, [0; 3]);
        }
        if let Some(i) = slot {
            s.per_broker[broker][i] += 1;
        }
    }

    /// A oneway send was counted ok when written, and the broker answered it anyway (fast
    /// failure writes even for oneway, §4.2): move it from ok to the answer's class.
    pub fn reclassify_oneway(&mut self, seg: usize, outcome: Outcome) {
        if outcome == Outcome::Ok {
            return;
        }
        // It moves a count that must already be there.
        self.flush_run();
        let s = self.seg(seg);
        if s.counts.ok > 0 {
            count_n(&mut s.counts, Outcome::Ok, -1);
            count(&mut s.counts, outcome);
        }
        if self.second.counts.ok > 0 {
            count_n(&mut self.second.counts, Outcome::Ok, -1);
        }
        count(&mut self.second.counts, outcome);
    }

    /// A busy answer for a send no longer in flight (timed out): the broker counted it.
    pub fn late_answer(&mut self, seg: usize, code: i32, remark: Option<&str>) {
        self.attempt_answer(seg, classify(code, remark), remark);
    }

    /// Adds the second under way to `total` and starts the next: its counts, and what the
    /// segments' histograms gained since the last call (`recorder/second.rs`).
    pub fn move_interval_into(&mut self, total: &mut Interval) {
        self.flush_run();
        let c = std::mem::take(&mut self.second);
        total.counts.merge(&c.counts);
        total.written += c.written;
        second::take(&self.segments, &mut self.taken, &mut self.scratch, total);
    }

    pub fn merge(&mut self, o: &Recorder) {
        self.flush_run();
        debug_assert!(
            o.run.is_none(),
            "a recorder is merged outside Recorder::runs"
        );
        for (a, b) in self.segments.iter_mut().zip(&o.segments) {
            a.merge(b);
        }
        self.second.counts.merge(&o.second.counts);
        self.second.written += o.second.written;
        for (a, b) in self.taken.iter_mut().zip(&o.taken) {
            a.merge(b);
        }
        write_blocks::merge_all(&mut self.write_blocks, &o.write_blocks);
    }
}
