//! The listener's failures and the retry accounting (retention-retry reference B6, B8.1).
//!
//! Which deliveries fail: `fail_until` (a message fails while its `reconsumeTimes` < K),
//! `fail_every` (the message whose UNIQ_KEY sequence is a multiple of N fails every time),
//! `fail_ratio` (each delivery fails with that probability, drawn anew on every delivery).
//!
//! A failed message is *pending* from its failure until its next delivery (a retry: its delay
//! is recorded) or until it is sent to the DLQ. At the end of the drain every acknowledged
//! message was consumed at least once, and none is pending: consumed or in the DLQ. A
//! redelivery is counted as a retry, never as a duplicate.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use hdrhistogram::Histogram;
use parking_lot::Mutex;

use crate::consumer::process_queue::Msg;
use crate::recorder::histogram;
use harness_model::profile::Consumer;

/// When the broker's handleRetryAndDLQ sends a message published to `%RETRY%<group>` to the
/// DLQ, on the `reconsumeTimes` of the send header (4.9.8 SendMessageProcessor
/// .handleRetryAndDLQ l.344-372: `>=`; 5.3.3 l.180-230: `>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DlqRule {
    /// 4.x: at the limit.
    AtLimit,
    /// 5.x: past it.
    PastLimit,
}

impl DlqRule {
    /// From GET_BROKER_RUNTIME_INFO's `brokerVersionDesc` (`V4_9_8`, `V5_3_3`).
    pub fn of_version_desc(desc: &str) -> DlqRule {
        if desc.starts_with("V3_") || desc.starts_with("V4_") {
            DlqRule::AtLimit
        } else {
            DlqRule::PastLimit
        }
    }

    pub fn dead(self, reconsume_times: i32, max: i32) -> bool {
        match self {
            DlqRule::AtLimit => reconsume_times >= max,
            DlqRule::PastLimit => reconsume_times > max,
        }
    }
}

/// The failure model and its counters, shared by every instance of a job.
pub struct Failures {
    ratio: f64,
    every: u64,
    until: i32,
    /// Failed message → when it failed (the key is the UNIQ_KEY, stable over every hop).
    pending: Mutex<HashMap<String, Instant>>,
    /// Failure → next delivery, µs.
    delays: Mutex<Histogram<u64>>,
    /// Deliveries whose listener returned RECONSUME_LATER (or SUSPEND, orderly).
    pub failures: AtomicU64,
    /// Deliveries with reconsumeTimes > 0 (from `%RETRY%`, or a local re-consume).
    pub retries: AtomicU64,
    /// Messages in the DLQ: sent back past the retry limit (or with a negative level), or
    /// published to `%RETRY%` for the broker to dead-letter (a fallback past the broker's limit,
    /// an orderly message at the limit).
    pub dlq: AtomicU64,
    /// CONSUMER_SEND_MSG_BACK calls answered 0.
    pub send_backs: AtomicU64,
    /// Send-backs that failed (non-zero code, timeout, no master) and whose fallback publish
    /// to `%RETRY%<group>` failed too: re-consumed locally after 5 s.
    pub send_back_failed: AtomicU64,
    /// Send-backs that failed and whose fallback publish to `%RETRY%<group>` was stored
    /// (`fallback.rs`).
    pub send_back_fallback: AtomicU64,
    /// The broker's dead-letter rule for a send to `%RETRY%`, once a fallback asked it.
    pub retry_dlq_rule: OnceLock<DlqRule>,
    /// Orderly: SUSPEND_CURRENT_QUEUE_A_MOMENT answers (each a pause of the queue).
    pub suspends: AtomicU64,
}

impl Failures {
    pub fn new(cfg: &Consumer) -> Failures {
        Failures {
            ratio: cfg.fail_ratio,
            every: cfg.fail_every,
            until: cfg.fail_until as i32,
            pending: Mutex::new(HashMap::new()),
            delays: Mutex::new(histogram()),
            failures: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            dlq: AtomicU64::new(0),
            send_backs: AtomicU64::new(0),
            send_back_failed: AtomicU64::new(0),
            send_back_fallback: AtomicU64::new(0),
            retry_dlq_rule: OnceLock::new(),
            suspends: AtomicU64::new(0),
        }
    }

    /// Whether no delivery ever fails (no failure model set).
    pub fn never(&self) -> bool {
        self.until <= 0 && self.every == 0 && self.ratio <= 0.0
    }

    /// Whether the listener fails this delivery of `m`.
    pub fn fails(&self, m: &Msg, rng: &mut fastrand::Rng) -> bool {
        if m.reconsume_times < self.until {
            return true;
        }
        if self.every > 0 {
            let seq = m.key_seq().map(|k| k.seq);
            if seq.is_some_and(|s| s % self.every == 0) {
                return true;
            }
        }
        self.ratio > 0.0 && rng.f64() < self.ratio
    }

    /// Whether a batch fails: the listener answers for the whole batch.
    pub fn batch_fails(&self, msgs: &[Msg]) -> bool {
        let mut rng = fastrand::Rng::new();
        msgs.iter().any(|m| self.fails(m, &mut rng))
    }

    /// A delivery starts: a redelivery ends its message's pending time.
    pub fn delivered(&self, msgs: &[Msg]) {
        let mut now = None;
        for m in msgs.iter().filter(|m| m.reconsume_times > 0) {
            let now = *now.get_or_insert_with(Instant::now);
            self.retries.fetch_add(1, Ordering::Relaxed);
            let since = m
                .uniq_key
                .as_deref()
                .and_then(|k| self.pending.lock().remove(k));
            if let Some(t) = since {
                let us = now.saturating_duration_since(t).as_micros() as u64;
                let mut h = self.delays.lock();
                if h.record(us).is_err() {
                    h.saturating_record(us);
                }
            }
        }
    }

    /// The listener failed `m`: pending until its next delivery.
    pub fn failed(&self, m: &Msg) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        if let Some(k) = &m.uniq_key {
            self.pending.lock().insert(k.to_string(), Instant::now());
        }
    }

    /// `m` went to the DLQ: no longer pending.
    pub fn dead_lettered(&self, m: &Msg) {
        self.dlq.fetch_add(1, Ordering::Relaxed);
        if let Some(k) = m.uniq_key.as_deref() {
            self.pending.lock().remove(k);
        }
    }

    /// Failures, retries and DLQ sends so far, in that order (a second's are a difference).
    pub fn counts(&self) -> [u64; 3] {
        [&self.failures, &self.retries, &self.dlq].map(Failures::count)
    }

    /// Failed messages neither redelivered nor in the DLQ yet.
    pub fn pending(&self) -> u64 {
        self.pending.lock().len() as u64
    }

    /// Failure → next delivery p50 and p99, µs (0 without retries).
    pub fn delay_quantiles(&self) -> [u64; 2] {
        let h = self.delays.lock();
        [
            crate::recorder::quantile(&h, 0.5),
            crate::recorder::quantile(&h, 0.99),
        ]
    }

    pub fn count(a: &AtomicU64) -> u64 {
        a.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(key: &str, reconsume: i32) -> Msg {
        Msg {
            uniq_key: Some(key.into()),
            reconsume_times: reconsume,
            ..Msg::default()
        }
    }

    #[test]
    fn each_rule_fails_what_it_says() {
        let mut rng = fastrand::Rng::with_seed(7);
        let until = Failures::new(&Consumer {
            fail_until: 2,
            ..Consumer::default()
        });
        assert!(until.fails(&msg("k", 0), &mut rng));
        assert!(until.fails(&msg("k", 1), &mut rng));
        assert!(!until.fails(&msg("k", 2), &mut rng));

        let every = Failures::new(&Consumer {
            fail_every: 10,
            ..Consumer::default()
        });
        let key = |seq: u64| format!("7F0000010001AABBCCDD{seq:012X}");
        assert!(every.fails(&msg(&key(20), 5), &mut rng), "every delivery");
        assert!(!every.fails(&msg(&key(21), 0), &mut rng));

        let ratio = Failures::new(&Consumer {
            fail_ratio: 0.1,
            ..Consumer::default()
        });
        let n = (0..10_000)
            .filter(|_| ratio.fails(&msg("k", 0), &mut rng))
            .count();
        assert!((800..1200).contains(&n), "{n} of 10000 at 10%");
        assert!(!Failures::new(&Consumer::default()).fails(&msg("k", 0), &mut rng));
    }

    #[test]
    fn a_failure_is_pending_until_redelivered_or_dead_lettered() {
        let f = Failures::new(&Consumer::default());
        f.failed(&msg("a", 0));
        f.failed(&msg("b", 0));
        assert_eq!(f.pending(), 2);
        f.delivered(&[msg("a", 1)]);
        assert_eq!((f.pending(), Failures::count(&f.retries)), (1, 1));
        f.dead_lettered(&msg("b", 16));
        assert_eq!((f.pending(), Failures::count(&f.dlq)), (0, 1));
        assert_eq!(Failures::count(&f.failures), 2);
        // timeseries.csv's consumer_failures, consumer_retries, consumer_dlq, in that order.
        assert_eq!(f.counts(), [2, 1, 1]);
        let [p50, _] = f.delay_quantiles();
        assert!(p50 < 1_000_000);
    }
}
