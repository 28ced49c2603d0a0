//! What the consumers measure: consume starts with their end-to-end latency, flow-control
//! events, pulls by result, and the lost/duplicate accounting against the producers'
//! acknowledgements. Counters are atomics shared by every instance; histograms sit behind one
//! lock taken once per consumed batch.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use parking_lot::Mutex;

use crate::consumer::backlog::Backlog;
use crate::consumer::figures::BrokerCounts;
use crate::consumer::process_queue::Msg;
use crate::consumer::pull_gate::FlowControl;
use crate::consumer::seqset::SeqSet;
use crate::consumer::tracking::SendTracking;
use crate::recorder::{histogram, BusyClass};
use crate::send_order::ledger::OrderLedger;

/// Pull results, as the Java client maps them (consumer §1.3), plus errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullResult {
    Found,
    NotFound,
    RetryImmediately,
    OffsetMoved,
    /// Timeout, closed connection, or any other code (busy answers are counted by class).
    Error,
}

/// One producer's accounting: its acknowledgements and what was consumed of it.
pub struct Ledger {
    pub sent: Arc<SendTracking>,
    pub consumed: SeqSet,
}

/// The consumers' histograms: since the measured window started, and this second. A consume
/// start is recorded in this second's only; the second is added to the window's when it is
/// taken (two records per message, not four: each was a visible share of the cost).
struct Hists {
    e2e: Histogram<u64>,
    stored: Histogram<u64>,
    e2e_second: Histogram<u64>,
    stored_second: Histogram<u64>,
}

/// Shared by every instance of one job.
pub struct Metrics {
    pub consumed: AtomicU64,
    pub duplicates: AtomicU64,
    /// Consumed messages whose UNIQ_KEY is not from this job's producers.
    pub foreign: AtomicU64,
    pub decode_errors: AtomicU64,
    pub fc: [AtomicU64; 4],
    pub pulls: [AtomicU64; 5],
    pub pull_busy: [AtomicU64; 6],
    /// Histograms record once the measured window started.
    measuring: AtomicBool,
    hists: Mutex<Hists>,
    ledgers: Vec<Ledger>,
    pub lag: AtomicI64,
    pub lag_max: AtomicI64,
    /// The job's order accounting, once the runner hands it over (`harness::order`).
    pub order: OnceLock<Arc<OrderLedger>>,
    /// The prefilled backlog's drain (`drain_rate`), fed by the ledger of `backlog_of`.
    pub backlog: Backlog,
    backlog_of: Option<Arc<SendTracking>>,
    /// Per broker of the route, by name: what was consumed of its queues and its lag.
    brokers: Mutex<BTreeMap<Arc<str>, BrokerCounts>>,
}

/// Records `v`; `saturating_record` alone would clamp to the current (auto-resizing) range.
fn record_n(h: &mut Histogram<u64>, v: u64, n: u64) {
    if h.record_n(v, n).is_err() {
        h.saturating_record_n(v, n);
    }
}

/// Equal values in a row recorded once with their count: the messages of a pull share their
/// born and stored millisecond in runs (at 100,000 a second, a hundred to a millisecond), and
/// two histogram records per message were 5% of a consumer's instructions in `make floor`.
struct RunLength<'h> {
    h: &'h mut Histogram<u64>,
    value: u64,
    count: u64,
}

impl<'h> RunLength<'h> {
    fn new(h: &'h mut Histogram<u64>) -> Self {
        RunLength {
            h,
            value: 0,
            count: 0,
        }
    }

    fn push(&mut self, v: u64) {
        if v != self.value && self.count > 0 {
            record_n(self.h, self.value, self.count);
            self.count = 0;
        }
        self.value = v;
        self.count += 1;
    }
}

impl Drop for RunLength<'_> {
    fn drop(&mut self) {
        if self.count > 0 {
            record_n(self.h, self.value, self.count);
        }
    }
}

/// Adds `from` to `into`; `add` fails only where `into` cannot grow, then value by value.
fn merge(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    if into.add(from).is_err() {
        for v in from.iter_recorded() {
            into.saturating_record_n(v.value_iterated_to(), v.count_at_value());
        }
    }
}

/// Microseconds since the epoch.
fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

impl Metrics {
    pub fn new(ledgers: Vec<Arc<SendTracking>>) -> Metrics {
        Metrics {
            consumed: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            foreign: AtomicU64::new(0),
            decode_errors: AtomicU64::new(0),
            fc: Default::default(),
            pulls: Default::default(),
            pull_busy: Default::default(),
            measuring: AtomicBool::new(false),
            hists: Mutex::new(Hists {
                e2e: histogram(),
                stored: histogram(),
                e2e_second: histogram(),
                stored_second: histogram(),
            }),
            ledgers: ledgers
                .into_iter()
                .map(|sent| {
                    let cap = sent.acked.capacity();
                    Ledger {
                        sent,
                        consumed: SeqSet::new(cap),
                    }
                })
                .collect(),
            lag: AtomicI64::new(0),
            lag_max: AtomicI64::new(0),
            order: OnceLock::new(),
            backlog: Backlog::new(std::time::Instant::now()),
            backlog_of: None,
            brokers: Mutex::new(BTreeMap::new()),
        }
    }

    /// First consumes of `prefill`'s messages drain the backlog.
    pub fn with_backlog(mut self, prefill: Arc<SendTracking>) -> Metrics {
        self.backlog_of = Some(prefill);
        self
    }

    pub fn start_measuring(&self) {
        self.measuring.store(true, Ordering::Release);
    }

    pub fn flow_control(&self, kind: FlowControl) {
        self.fc[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    pub fn pull(&self, r: PullResult) {
        self.pulls[r as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn pull_busy(&self, class: BusyClass) {
        self.pull_busy[class.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Batches start being consumed (one clock read and one histogram lock for all): latency
    /// from born and from stored, and which send each message was.
    pub fn consume_start<'a, I>(&self, batches: I)
    where
        I: Iterator<Item = &'a [Msg]> + Clone,
    {
        let now = now_us();
        let msgs = || batches.clone().flatten();
        self.consumed
            .fetch_add(msgs().count() as u64, Ordering::Relaxed);
        if let Some(order) = self.order.get() {
            order.consumed(msgs().map(|m| (m.queue_offset, m.key_seq())));
        }
        let mut backlog = 0;
        // A redelivery after a failure is a retry (counted in `failure.rs`), not a duplicate.
        for m in msgs().filter(|m| m.reconsume_times == 0) {
            let seen_before = match m.key_seq() {
                Some(k) => match self.ledgers.iter().find(|l| l.sent.owns(k.prefix)) {
                    Some(l) => {
                        let index = l.sent.index(k.seq);
                        let first = l.consumed.insert(index);
                        // Only acknowledged prefill messages make up the backlog's length.
                        if first
                            && self
                                .backlog_of
                                .as_ref()
                                .is_some_and(|b| Arc::ptr_eq(b, &l.sent))
                            && l.sent.acked.contains(index)
                        {
                            backlog += 1;
                        }
                        !first
                    }
                    None => {
                        self.foreign.fetch_add(1, Ordering::Relaxed);
                        false
                    }
                },
                None => {
                    self.foreign.fetch_add(1, Ordering::Relaxed);
                    false
                }
            };
            if seen_before {
                self.duplicates.fetch_add(1, Ordering::Relaxed);
            }
        }
        if backlog > 0 {
            self.backlog.consumed(backlog);
        }
        if !self.measuring.load(Ordering::Acquire) {
            return;
        }
        let mut h = self.hists.lock();
        let h = &mut *h;
        let (mut e2e, mut stored) = (
            RunLength::new(&mut h.e2e_second),
            RunLength::new(&mut h.stored_second),
        );
        for m in msgs() {
            e2e.push((now - m.born_ms * 1000).max(0) as u64);
            stored.push((now - m.stored_ms * 1000).max(0) as u64);
        }
    }

    /// This second's histograms (born → consume start, stored → consume start), emptied.
    pub fn take_second(&self) -> (Histogram<u64>, Histogram<u64>) {
        let mut h = self.hists.lock();
        let Hists {
            e2e,
            stored,
            e2e_second,
            stored_second,
        } = &mut *h;
        merge(e2e, e2e_second);
        merge(stored, stored_second);
        let taken = (e2e_second.clone(), stored_second.clone());
        e2e_second.reset();
        stored_second.reset();
        taken
    }

    /// The whole measured window's histograms (the second not taken yet included).
    pub fn totals(&self) -> (Histogram<u64>, Histogram<u64>) {
        let h = self.hists.lock();
        let (mut e, mut s) = (h.e2e.clone(), h.stored.clone());
        merge(&mut e, &h.e2e_second);
        merge(&mut s, &h.stored_second);
        (e, s)
    }

    /// Acknowledged messages not consumed (yet).
    pub fn missing(&self) -> u64 {
        self.ledgers
            .iter()
            .map(|l| l.sent.acked.count_missing_from(&l.consumed))
            .sum()
    }

    /// Up to `n` missing messages as `prefix:index`, for the log.
    pub fn first_missing(&self, n: usize) -> Vec<String> {
        self.ledgers
            .iter()
            .flat_map(|l| {
                l.sent
                    .acked
                    .first_missing_from(&l.consumed, n)
                    .into_iter()
                    .map(|i| format!("{}:{i}", l.sent.prefix))
            })
            .take(n)
            .collect()
    }

    /// Whether any producer's sends are tracked (oneway sends are not acknowledged).
    pub fn tracks_acks(&self) -> bool {
        self.ledgers.iter().any(|l| !l.sent.acked.is_empty())
    }

    /// `n` messages of `broker`'s queues start being consumed.
    pub fn consumed_on(&self, broker: &Arc<str>, n: usize) {
        let mut b = self.brokers.lock();
        b.entry(broker.clone()).or_default().consumed += n as u64;
    }

    /// The lag of `broker`'s queues now.
    pub fn set_broker_lag(&self, broker: &Arc<str>, lag: i64) {
        let measuring = self.measuring.load(Ordering::Acquire);
        let mut b = self.brokers.lock();
        let e = b.entry(broker.clone()).or_default();
        e.lag = lag;
        if measuring {
            e.lag_max = e.lag_max.max(lag);
        }
    }

    /// Every broker seen, by name.
    pub fn per_broker(&self) -> Vec<(String, BrokerCounts)> {
        self.brokers
            .lock()
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect()
    }

    pub fn set_lag(&self, lag: i64) {
        self.lag.store(lag, Ordering::Relaxed);
        if self.measuring.load(Ordering::Acquire) {
            self.lag_max.fetch_max(lag, Ordering::Relaxed);
        }
    }

    pub fn count(a: &AtomicU64) -> u64 {
        a.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_equal_values_are_recorded_with_their_count() {
        let mut h = crate::recorder::histogram();
        {
            let mut r = RunLength::new(&mut h);
            for v in [5, 5, 7, 5, 0, 0] {
                r.push(v);
            }
        }
        let counts: Vec<(u64, u64)> = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        assert_eq!(counts, [(0, 2), (5, 3), (7, 1)]);
    }

    fn msgs(n: usize, born_ms: i64) -> Vec<Msg> {
        (0..n)
            .map(|i| Msg {
                queue_offset: i as i64,
                born_ms,
                stored_ms: born_ms,
                ..Msg::default()
            })
            .collect()
    }

    #[test]
    fn the_window_holds_every_second_taken_or_not() {
        let m = Metrics::new(Vec::new());
        let born = now_us() / 1000 - 50;
        m.consume_start(std::iter::once(&msgs(3, born)[..]));
        assert_eq!(m.totals().0.len(), 0, "nothing before the window starts");
        m.start_measuring();
        m.consume_start(std::iter::once(&msgs(4, born)[..]));
        assert_eq!(
            m.totals().0.len(),
            4,
            "a second not taken yet counts in the window"
        );
        let (e2e, stored) = m.take_second();
        assert_eq!((e2e.len(), stored.len()), (4, 4));
        // About 50 ms from born and stored to the consume start.
        assert!(e2e.min() >= 49_000, "{}", e2e.min());
        m.consume_start(std::iter::once(&msgs(2, born)[..]));
        let (second, _) = m.take_second();
        assert_eq!(second.len(), 2, "a second holds its own starts only");
        let (e2e, stored) = m.totals();
        assert_eq!((e2e.len(), stored.len()), (6, 6));
        assert_eq!(m.take_second().0.len(), 0);
        assert_eq!(m.totals().0.len(), 6, "taking an empty second adds nothing");
        assert_eq!(Metrics::count(&m.consumed), 9);
    }
}
