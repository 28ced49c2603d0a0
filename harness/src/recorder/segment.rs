//! Recording into the figures: an outcome into its count, a value into a histogram, and the
//! second under way ([`Interval`]); a leaf below [`crate::recorder`]. The segment's figures
//! themselves ([`Counts`], [`Segment`]) are the result-folder contract's
//! (`harness_results::segment`).

use hdrhistogram::Histogram;

use super::outcome::Outcome;
pub use harness_results::segment::{histogram, quantile, Counts, Segment};

pub(super) fn record(h: &mut Histogram<u64>, v: u64) {
    record_n(h, v, 1);
}

/// `v` recorded `n` times.
pub(super) fn record_n(h: &mut Histogram<u64>, v: u64, n: u64) {
    // Auto-resize means recording cannot fail short of u64 overflow; never clamp silently.
    if h.record_n(v, n).is_err() {
        h.saturating_record_n(v, n);
    }
}

/// Counts `o` once.
pub(super) fn count(counts: &mut Counts, o: Outcome) {
    count_n(counts, o, 1);
}

/// Adds `n` (negative: takes back) to the count of `o`.
pub(super) fn count_n(counts: &mut Counts, o: Outcome, n: i64) {
    let slot = match o {
        Outcome::Ok => &mut counts.ok,
        Outcome::Busy(c) => &mut counts.busy[c.index()],
        Outcome::SystemError => &mut counts.system_error,
        Outcome::FlushDiskTimeout => &mut counts.flush_disk_timeout,
        Outcome::MessageIllegal => &mut counts.message_illegal,
        Outcome::NotAvailable(c) => &mut counts.not_available[c.index()],
        Outcome::OtherCode(_) => &mut counts.other_codes,
        Outcome::FlushSlaveTimeout => &mut counts.flush_slave_timeout,
        Outcome::SlaveNotAvailable => &mut counts.slave_not_available,
        Outcome::Timeout => &mut counts.timeouts,
        Outcome::Dropped => &mut counts.dropped,
        Outcome::ConnectionError => &mut counts.connection_errors,
    };
    *slot = slot.saturating_add_signed(n);
}

/// One second of the time series, by completion time.
#[derive(Debug, Clone)]
pub struct Interval {
    pub counts: Counts,
    /// Sends put on the wire.
    pub written: u64,
    pub latency: Histogram<u64>,
    pub service: Histogram<u64>,
    pub lag: Histogram<u64>,
    pub busy_latency: Histogram<u64>,
}

impl Default for Interval {
    fn default() -> Self {
        Interval {
            counts: Counts::default(),
            written: 0,
            latency: histogram(),
            service: histogram(),
            lag: histogram(),
            busy_latency: histogram(),
        }
    }
}

impl Interval {
    /// Empties the interval but keeps its histograms' memory, so that a second's intervals
    /// allocate nothing once they have grown to the run's range.
    pub fn reset(&mut self) {
        self.counts = Counts::default();
        self.written = 0;
        self.latency.reset();
        self.service.reset();
        self.lag.reset();
        self.busy_latency.reset();
    }

    pub fn merge(&mut self, o: &Interval) {
        self.counts.merge(&o.counts);
        self.written += o.written;
        let _ = self.latency.add(&o.latency);
        let _ = self.service.add(&o.service);
        let _ = self.lag.add(&o.lag);
        let _ = self.busy_latency.add(&o.busy_latency);
    }
}
