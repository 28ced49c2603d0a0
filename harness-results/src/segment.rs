//! What a job recorded for one segment (warm-up, the measured window, or one stair): the final
//! outcomes' counts and the histograms. The recorder (`harness::recorder`) fills them on the
//! hot path; `summary.csv` rows, the interval log's segment totals and `harness merge` read
//! them, so they live with the result-folder contract. Classifying an answer into a count
//! (`Outcome`) stays with the recorder: it needs the wire protocol's codes.

use hdrhistogram::Histogram;
use serde::Serialize;

/// A new auto-resizing histogram of µs with 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    // 3 significant digits is always a valid configuration; the fallback only satisfies types.
    Histogram::new(3).unwrap_or_else(|_| Histogram::new(2).expect("2 significant digits is valid"))
}

/// The value at quantile `p` (1.0 = the maximum); 0 for an empty histogram.
pub fn quantile(h: &Histogram<u64>, p: f64) -> u64 {
    if h.is_empty() {
        0
    } else if p >= 1.0 {
        h.max()
    } else {
        h.value_at_quantile(p)
    }
}

/// Counts of final outcomes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub ok: u64,
    pub busy: [u64; 6],
    pub system_error: u64,
    pub flush_disk_timeout: u64,
    pub message_illegal: u64,
    pub other_codes: u64,
    /// Code 14 per not-available class (disk full, other) (also counted in [`Counts::errors`]).
    pub not_available: [u64; 2],
    /// Codes 12 and 11 (also counted in [`Counts::errors`]).
    pub flush_slave_timeout: u64,
    pub slave_not_available: u64,
    pub timeouts: u64,
    pub dropped: u64,
    pub connection_errors: u64,
}

impl Counts {
    pub fn busy_total(&self) -> u64 {
        self.busy.iter().sum()
    }

    /// Everything that is neither ok nor busy nor dropped nor a timeout.
    pub fn errors(&self) -> u64 {
        self.system_error
            + self.flush_disk_timeout
            + self.message_illegal
            + self.other_codes
            + self.not_available.iter().sum::<u64>()
            + self.flush_slave_timeout
            + self.slave_not_available
            + self.connection_errors
    }

    pub fn total(&self) -> u64 {
        self.ok + self.busy_total() + self.errors() + self.timeouts + self.dropped
    }

    pub fn merge(&mut self, o: &Counts) {
        self.ok += o.ok;
        for (a, b) in self.busy.iter_mut().zip(o.busy) {
            *a += b;
        }
        self.system_error += o.system_error;
        self.flush_disk_timeout += o.flush_disk_timeout;
        self.message_illegal += o.message_illegal;
        self.other_codes += o.other_codes;
        for (a, b) in self.not_available.iter_mut().zip(o.not_available) {
            *a += b;
        }
        self.flush_slave_timeout += o.flush_slave_timeout;
        self.slave_not_available += o.slave_not_available;
        self.timeouts += o.timeouts;
        self.dropped += o.dropped;
        self.connection_errors += o.connection_errors;
    }
}

/// Everything recorded for one segment (warm-up, the measured window, or one stair).
#[derive(Debug, Clone)]
pub struct Segment {
    /// Sends scheduled (intended) in this segment.
    pub sent: u64,
    pub counts: Counts,
    /// Attempts put on the wire (> sent − dropped only with retries).
    pub attempts: u64,
    /// Response − intended time, every answered, timed-out or dropped send.
    pub latency: Histogram<u64>,
    /// Response − actual write.
    pub service: Histogram<u64>,
    /// Actual write − intended time.
    pub lag: Histogram<u64>,
    pub ok_latency: Histogram<u64>,
    pub busy_latency: Histogram<u64>,
    /// From fast-failure remarks, in ms and entries.
    pub period_in_queue: Histogram<u64>,
    pub size_of_queue: Histogram<u64>,
    /// Busy answers per attempt (what the broker counted), including late ones.
    pub attempt_busy: [u64; 6],
    /// First attempts answered ok / busy: the answer before any retry (the final outcomes
    /// are in `counts`).
    pub first_ok: u64,
    pub first_busy: u64,
    /// Attempts answered `[ok, busy, code 14 disk full]` by each broker of a cluster (index
    /// of the router).
    pub per_broker: Vec<[u64; 3]>,
}

impl Default for Segment {
    fn default() -> Self {
        Segment {
            sent: 0,
            counts: Counts::default(),
            attempts: 0,
            latency: histogram(),
            service: histogram(),
            lag: histogram(),
            ok_latency: histogram(),
            busy_latency: histogram(),
            period_in_queue: histogram(),
            size_of_queue: histogram(),
            attempt_busy: [0; 6],
            first_ok: 0,
            first_busy: 0,
            per_broker: Vec::new(),
        }
    }
}

impl Segment {
    pub fn merge(&mut self, o: &Segment) {
        self.sent += o.sent;
        self.counts.merge(&o.counts);
        self.attempts += o.attempts;
        for (a, b) in [
            (&mut self.latency, &o.latency),
            (&mut self.service, &o.service),
            (&mut self.lag, &o.lag),
            (&mut self.ok_latency, &o.ok_latency),
            (&mut self.busy_latency, &o.busy_latency),
            (&mut self.period_in_queue, &o.period_in_queue),
            (&mut self.size_of_queue, &o.size_of_queue),
        ] {
            // Both are auto-resizing with equal precision, so adding cannot fail.
            let _ = a.add(b);
        }
        for (a, b) in self.attempt_busy.iter_mut().zip(o.attempt_busy) {
            *a += b;
        }
        self.first_ok += o.first_ok;
        self.first_busy += o.first_busy;
        if self.per_broker.len() < o.per_broker.len() {
            self.per_broker.resize(o.per_broker.len(), [0; 3]);
        }
        for (a, b) in self.per_broker.iter_mut().zip(&o.per_broker) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }
}
