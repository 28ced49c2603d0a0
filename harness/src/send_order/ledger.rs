//! One job's order accounting, shared by whoever reads the stored messages (the consumers'
//! pulls or the store reader) and, in orderly mode, the consume tasks. One lock per pulled or
//! consumed batch: the counts are a map lookup per message.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::send_order::count::{ConsumeCheck, InversionCount};
use crate::send_order::key::Streams;
use harness_results::cols::{OrderColumns, TimeseriesOrder};
use rmq_client::uniq_key::{key_seq, KeyPrefix, KeySeq};

/// Where `order_inversions` was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// From the consumers' pulls, each queue offset once (a redelivered pull is not counted
    /// again).
    Pull,
    /// From the store read-back, every queue from offset 0 (`order::readback`).
    Store,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Pull => "pull",
            Source::Store => "store",
        }
    }
}

/// Whether consume order is checked (orderly consumers only: concurrent consumption promises
/// no order, so its order would say nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeOrder {
    Unchecked,
    Checked,
}

/// A job's order figures (the `order_*` and `consume_order_*` columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderFigures {
    pub inversions: u64,
    pub source: Source,
    /// Messages read (pulled or read back) of the load's producer.
    pub read: u64,
    /// `None` unless consume order is checked.
    pub consume_violations: Option<u64>,
    pub consume_redelivered: Option<u64>,
}

impl OrderFigures {
    /// The job's `summary.csv` order columns.
    pub fn columns(&self) -> OrderColumns {
        OrderColumns {
            order_inversions: Some(self.inversions),
            order_source: Some(self.source.name()),
            order_read: Some(self.read),
            consume_order_violations: self.consume_violations,
            consume_order_redelivered: self.consume_redelivered,
        }
    }
}

/// One second's new counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OrderSecond {
    pub inversions: u64,
    pub consume_violations: Option<u64>,
}

impl OrderSecond {
    /// The second's `timeseries.csv` order columns.
    pub fn columns(&self) -> TimeseriesOrder {
        TimeseriesOrder {
            order_inversions: Some(self.inversions),
            consume_order_violations: self.consume_violations,
        }
    }
}

#[derive(Default)]
struct Inner {
    stored: InversionCount,
    read: u64,
    /// Pull source: per queue, the lowest offset not counted yet.
    next_offset: HashMap<i32, i64>,
    consume: ConsumeCheck,
    /// Totals at the last [`OrderLedger::take_second`]: inversions, violations.
    last: (u64, u64),
}

/// The order accounting of one producer (the job's load) on one topic.
pub struct OrderLedger {
    /// The UNIQ_KEY prefix of the load's messages; others (a prefill, another load) are skipped.
    /// None (nothing counts) for a prefix the send builder would not write.
    prefix: Option<KeyPrefix>,
    streams: Streams,
    source: Source,
    consume: ConsumeOrder,
    inner: Mutex<Inner>,
}

impl OrderLedger {
    pub fn new(prefix: &str, streams: Streams, source: Source, consume: ConsumeOrder) -> Self {
        OrderLedger {
            prefix: prefix.as_bytes().try_into().ok(),
            streams,
            source,
            consume,
            inner: Mutex::new(Inner::default()),
        }
    }

    pub fn source(&self) -> Source {
        self.source
    }

    fn seq_of(&self, key: Option<KeySeq<'_>>) -> Option<u64> {
        // Another producer's message (a prefill) is told apart by its prefix.
        key.filter(|k| Some(k.prefix) == self.prefix.as_ref())
            .map(|k| k.seq)
    }

    /// Messages of `queue` as a pull returned them: `(queue offset, UNIQ_KEY read)` in offset
    /// order. Offsets below one already counted (a queue pulled again after a rebalance) are
    /// skipped.
    pub fn pulled<'a>(
        &self,
        queue: i32,
        msgs: impl IntoIterator<Item = (i64, Option<KeySeq<'a>>)>,
    ) {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        let next = inner.next_offset.entry(queue).or_insert(0);
        for (offset, key) in msgs {
            if offset < *next {
                continue;
            }
            *next = offset + 1;
            if let Some(seq) = self.seq_of(key) {
                inner.read += 1;
                inner.stored.observe(self.streams.stream(seq), seq);
            }
        }
    }

    /// The next UNIQ_KEYs of one queue read back from the store, in offset order.
    pub fn stored<'a>(&self, keys: impl IntoIterator<Item = Option<&'a str>>) {
        let mut inner = self.inner.lock();
        for key in keys {
            if let Some(seq) = self.seq_of(key.and_then(|k| key_seq(k.as_bytes()))) {
                inner.read += 1;
                inner.stored.observe(self.streams.stream(seq), seq);
            }
        }
    }

    /// A batch an orderly consumer starts consuming: `(queue offset, UNIQ_KEY)` in consume
    /// order. The queue of a message is its send's (`Streams::queue`).
    pub fn consumed<'a>(&self, msgs: impl IntoIterator<Item = (i64, Option<KeySeq<'a>>)>) {
        if self.consume == ConsumeOrder::Unchecked {
            return;
        }
        let mut inner = self.inner.lock();
        for (offset, key) in msgs {
            if let Some(seq) = self.seq_of(key) {
                let (stream, queue) = (self.streams.stream(seq), self.streams.queue(seq));
                inner.consume.consumed(stream, queue, offset, seq);
            }
        }
    }

    /// Counts since the previous call.
    pub fn take_second(&self) -> OrderSecond {
        let mut inner = self.inner.lock();
        let now = (inner.stored.inversions, inner.consume.violations);
        let (last_inv, last_vio) = std::mem::replace(&mut inner.last, now);
        OrderSecond {
            inversions: now.0 - last_inv,
            consume_violations: (self.consume == ConsumeOrder::Checked).then_some(now.1 - last_vio),
        }
    }

    pub fn figures(&self) -> OrderFigures {
        let inner = self.inner.lock();
        let checked = self.consume == ConsumeOrder::Checked;
        OrderFigures {
            inversions: inner.stored.inversions,
            source: self.source,
            read: inner.read,
            consume_violations: checked.then_some(inner.consume.violations),
            consume_redelivered: checked.then_some(inner.consume.redelivered),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_model::profile::{SendOrdering, Workload};

    const P: &str = "7F00000112340000ABCD";

    fn key(seq: u64) -> String {
        format!("{P}{seq:012X}")
    }

    #[test]
    fn a_pulled_queue_is_counted_once_and_foreign_keys_are_skipped() {
        let w = Workload {
            ordering: SendOrdering::ByKey,
            order_keys: 1,
            queues: 1,
            ..Workload::default()
        };
        let l = OrderLedger::new(P, Streams::of(&w), Source::Pull, ConsumeOrder::Checked);
        let keys: Vec<String> = [0u64, 2, 1, 3].iter().map(|&s| key(s)).collect();
        let batch = |from: usize| -> Vec<(i64, Option<KeySeq>)> {
            (from..4)
                .map(|i| (i as i64, key_seq(keys[i].as_bytes())))
                .collect()
        };
        l.pulled(0, batch(0));
        // The same queue pulled again from offset 1 (a rebalance): nothing new.
        l.pulled(0, batch(1));
        // Another load's key (another prefix) and a message without one.
        let other = format!("7F00000112340000ABCE{:012X}", 9);
        l.pulled(0, [(4, key_seq(other.as_bytes())), (5, None)]);
        assert_eq!(l.take_second().inversions, 1);
        l.consumed(batch(0));
        l.consumed(batch(2));
        let f = l.figures();
        assert_eq!((f.inversions, f.read), (1, 4));
        assert_eq!(f.consume_violations, Some(1));
        assert_eq!(f.consume_redelivered, Some(2));
        assert_eq!(
            l.take_second(),
            OrderSecond {
                inversions: 0,
                consume_violations: Some(1)
            }
        );
    }
}
