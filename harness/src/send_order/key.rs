//! Which key a send carries, which queue a key goes to, and (sync-by-key) whether a key has a
//! send in flight.
//!
//! Send `i` carries key `ORDER-<i mod order_keys>`: every key gets every `order_keys`-th send,
//! so each key's sends are spread over the whole run, and the key of a message read back is
//! known from the send number in its UNIQ_KEY alone. The queue of a key is what RocketMQ's
//! `SelectMessageQueueByHash` picks with the key string as `arg`: `arg.hashCode() % n`, made
//! positive with `Math.abs`.

use std::sync::atomic::{AtomicBool, Ordering};

use harness_model::profile::{SendOrdering, Workload};

/// Java's `String.hashCode` (over UTF-16 code units, wrapping).
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// `SelectMessageQueueByHash.select`: `hash % queues` (Java's signed remainder), then
/// `Math.abs` if negative.
pub fn select_by_hash(hash: i32, queues: u32) -> i32 {
    let value = hash.wrapping_rem(queues as i32);
    if value < 0 {
        value.wrapping_abs()
    } else {
        value
    }
}

/// The string of key `k`, as the producer would pass it to the selector.
pub fn key_name(k: u32) -> String {
    format!("ORDER-{k}")
}

/// What an order stream is: the messages whose relative order is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Streams {
    /// `ordering = "none"`: one stream per queue (send `i` goes to queue `i mod queues`).
    ByQueue { queues: u32 },
    /// `by-key` / `sync-by-key`: one stream per key; `queue_of_key[k]` is its queue.
    ByKey { queue_of_key: Vec<i32> },
}

impl Streams {
    pub fn of(w: &Workload) -> Streams {
        match w.ordering {
            SendOrdering::None => Streams::ByQueue { queues: w.queues },
            SendOrdering::ByKey | SendOrdering::SyncByKey => Streams::ByKey {
                queue_of_key: (0..w.order_keys)
                    .map(|k| select_by_hash(java_string_hash(&key_name(k)), w.queues))
                    .collect(),
            },
        }
    }

    /// The stream of send `seq`.
    pub fn stream(&self, seq: u64) -> u64 {
        match self {
            Streams::ByQueue { queues } => seq % u64::from(*queues),
            Streams::ByKey { queue_of_key } => seq % queue_of_key.len() as u64,
        }
    }

    /// The queue send `seq` is written to.
    pub fn queue(&self, seq: u64) -> i32 {
        match self {
            Streams::ByQueue { queues } => (seq % u64::from(*queues)) as i32,
            Streams::ByKey { queue_of_key } => {
                queue_of_key[(seq % queue_of_key.len() as u64) as usize]
            }
        }
    }
}

/// sync-by-key: one flag per key, taken when a send of the key is written and released when
/// that send ends (answered, timed out or failed), so a key never has two sends in flight.
pub struct KeyGate {
    busy: Box<[AtomicBool]>,
}

impl KeyGate {
    pub fn new(keys: u32) -> KeyGate {
        KeyGate {
            busy: (0..keys.max(1)).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    fn slot(&self, seq: u64) -> &AtomicBool {
        &self.busy[(seq % self.busy.len() as u64) as usize]
    }

    /// Whether send `seq`'s key has no send in flight.
    pub fn is_free(&self, seq: u64) -> bool {
        !self.slot(seq).load(Ordering::Acquire)
    }

    /// Marks send `seq`'s key busy.
    pub fn take(&self, seq: u64) {
        self.slot(seq).store(true, Ordering::Release);
    }

    /// Send `seq` ended: its key may send again.
    pub fn release(&self, seq: u64) {
        self.slot(seq).store(false, Ordering::Release);
    }
}

/// sync-by-key: which waiting send may be written next. The first, among the next `2 × keys`
/// waiting sends, whose key has no send in flight. A key found busy stays skipped for the rest
/// of the scan: a reader may free it meanwhile, and then a later send of the key would be
/// written before the earlier one passed over.
pub struct KeyScan {
    /// Per key, the number of the last scan that skipped it as busy.
    skipped: Vec<u64>,
    scan: u64,
}

impl KeyScan {
    pub fn new(keys: u32) -> KeyScan {
        KeyScan {
            skipped: vec![0; keys.max(1) as usize],
            scan: 0,
        }
    }

    /// The index, in `waiting` (send numbers in send order), of the send to write next.
    pub fn next_ready(
        &mut self,
        gate: &KeyGate,
        waiting: impl Iterator<Item = u64>,
    ) -> Option<usize> {
        self.scan += 1;
        let keys = self.skipped.len() as u64;
        for (i, seq) in waiting.take(2 * keys as usize).enumerate() {
            let k = (seq % keys) as usize;
            if self.skipped[k] == self.scan {
                continue;
            }
            if gate.is_free(seq) {
                return Some(i);
            }
            self.skipped[k] = self.scan;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_and_the_selector_are_javas() {
        // Values of "…".hashCode() in Java.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(select_by_hash(99_162_322, 4), 2);
        // Java: -7 % 4 == -3, then Math.abs.
        assert_eq!(select_by_hash(-7, 4), 3);
        assert_eq!(select_by_hash(i32::MIN, 4), 0);
        assert_eq!(select_by_hash(i32::MIN, 3), 2);
    }

    #[test]
    fn a_key_always_goes_to_one_queue() {
        let w = Workload {
            ordering: SendOrdering::ByKey,
            order_keys: 5,
            queues: 4,
            ..Workload::default()
        };
        let s = Streams::of(&w);
        for seq in 0..100u64 {
            assert_eq!(s.stream(seq), seq % 5);
            assert_eq!(s.queue(seq), s.queue(seq % 5));
            assert!((0..4).contains(&s.queue(seq)));
        }
        let none = Streams::of(&Workload::default());
        assert_eq!((none.stream(6), none.queue(6)), (2, 2));

        let gate = KeyGate::new(5);
        assert!(gate.is_free(3));
        gate.take(3);
        assert!(!gate.is_free(8), "send 8 has send 3's key");
        assert!(gate.is_free(4));
        gate.release(3);
        assert!(gate.is_free(8));
    }

    #[test]
    fn a_key_freed_during_a_scan_does_not_let_its_later_send_overtake() {
        let gate = KeyGate::new(4);
        let mut scan = KeyScan::new(4);
        gate.take(1);
        gate.take(2);
        // Waiting: 5 (key 1), 6 (key 2), 9 (key 1). Key 1 is freed by a reader while the scan
        // is past send 5: send 9 must still wait behind it.
        let waiting = [5u64, 6, 9].into_iter().inspect(|&s| {
            if s == 6 {
                gate.release(1);
            }
        });
        assert_eq!(scan.next_ready(&gate, waiting), None);
        // The next scan sees key 1 free and picks send 5, the earlier one.
        assert_eq!(scan.next_ready(&gate, [5u64, 6, 9].into_iter()), Some(0));
        gate.take(1);
        gate.take(3);
        assert_eq!(scan.next_ready(&gate, [6u64, 7, 9, 10].into_iter()), None);
        gate.release(2);
        assert_eq!(
            scan.next_ready(&gate, [6u64, 7, 9, 10].into_iter()),
            Some(0)
        );
    }
}
