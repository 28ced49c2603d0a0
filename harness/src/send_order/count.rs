//! The two order counts, on plain sequences: what the store (or a pull) holds in queue-offset
//! order, and what an orderly consumer consumed.
//!
//! **`order_inversions` counts messages**, not pairs: a message is an inversion when, in its
//! stream, a message with a *later* send number was stored at a lower queue offset. Each
//! stream keeps the highest send number seen so far; a message below it counts once. So one
//! send stored late after k later ones counts 1, and one send stored early, ahead of k earlier
//! ones, counts k (each of those k is stored after a later send). A duplicate (a send stored
//! twice) counts when its second copy lands after a later send.

use std::collections::HashMap;

/// Messages stored after a later send of the same stream.
#[derive(Debug, Default, Clone)]
pub struct InversionCount {
    /// Per stream: the highest send number seen so far.
    max: HashMap<u64, u64>,
    pub inversions: u64,
}

impl InversionCount {
    /// The next message of `stream` in store order is send `seq`; true if it is an inversion.
    pub fn observe(&mut self, stream: u64, seq: u64) -> bool {
        match self.max.get_mut(&stream) {
            Some(m) if seq < *m => {
                self.inversions += 1;
                true
            }
            Some(m) => {
                *m = seq;
                false
            }
            None => {
                self.max.insert(stream, seq);
                false
            }
        }
    }
}

/// What an orderly consumer saw, message by message in consume order.
#[derive(Debug, Default, Clone)]
pub struct ConsumeCheck {
    /// Per stream: the highest send number consumed so far.
    max_seq: HashMap<u64, u64>,
    /// Per queue: the highest queue offset consumed so far.
    max_offset: HashMap<i32, i64>,
    /// First consumptions of a message after a later send of its stream.
    pub violations: u64,
    /// Consumptions of an offset at or below one already consumed in its queue: the queue was
    /// consumed again from its committed offset, after a rebalance or a restart (RocketMQ's
    /// orderly consumption is at least once). Counted apart from `violations`.
    pub redelivered: u64,
}

impl ConsumeCheck {
    /// Message at `offset` of `queue`, send `seq` of `stream`, is consumed.
    pub fn consumed(&mut self, stream: u64, queue: i32, offset: i64, seq: u64) {
        let seen = self.max_offset.entry(queue).or_insert(-1);
        if offset <= *seen {
            self.redelivered += 1;
            return;
        }
        *seen = offset;
        let m = self.max_seq.entry(stream).or_insert(seq);
        if seq < *m {
            self.violations += 1;
        } else {
            *m = seq;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(stored: &[u64]) -> u64 {
        let mut c = InversionCount::default();
        for &s in stored {
            c.observe(0, s);
        }
        c.inversions
    }

    #[test]
    fn in_order_has_no_inversion() {
        assert_eq!(count(&[0, 1, 2, 3, 4, 5]), 0);
        // Gaps (lost or busy-refused sends) are not inversions.
        assert_eq!(count(&[0, 2, 5, 9]), 0);
    }

    #[test]
    fn one_swap_is_one_inversion() {
        assert_eq!(count(&[0, 2, 1, 3]), 1);
    }

    #[test]
    fn a_retry_that_lands_late_counts_once_and_an_early_send_counts_what_it_overtook() {
        // Send 1 was busy-refused, retried, and stored after 2..4.
        assert_eq!(count(&[0, 2, 3, 4, 1, 5]), 1);
        // Send 4 overtook 1, 2 and 3: each of them is stored after a later send.
        assert_eq!(count(&[0, 4, 1, 2, 3, 5]), 3);
        // A duplicate stored after later sends is an inversion too.
        assert_eq!(count(&[0, 1, 2, 1, 3]), 1);
    }

    #[test]
    fn streams_are_counted_apart() {
        let mut c = InversionCount::default();
        // Two keys interleaved, each in order: no inversion across keys.
        for (stream, seq) in [(0, 0), (1, 1), (1, 3), (0, 2), (0, 4), (1, 5)] {
            assert!(!c.observe(stream, seq));
        }
        assert!(c.observe(1, 4));
        assert_eq!(c.inversions, 1);
    }

    #[test]
    fn redelivery_is_told_apart_from_a_violation() {
        let mut c = ConsumeCheck::default();
        // Queue 0 holds key 0's sends 0, 2, 1 at offsets 0, 1, 2: send 1 is a violation.
        c.consumed(0, 0, 0, 0);
        c.consumed(0, 0, 1, 2);
        c.consumed(0, 0, 2, 1);
        assert_eq!((c.violations, c.redelivered), (1, 0));
        // A rebalance: the new owner starts again at the committed offset 1.
        c.consumed(0, 0, 1, 2);
        c.consumed(0, 0, 2, 1);
        c.consumed(0, 0, 3, 3);
        assert_eq!((c.violations, c.redelivered), (1, 2));
    }
}
