//! Which messages of a run were acknowledged and which were consumed, by send sequence number:
//! a lock-free bitmap in lazily allocated chunks, so a reader thread marks an answer with one
//! atomic `or` and memory grows with the sends actually made (1 bit each), never with a map of
//! key strings.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Bits per chunk (8 KiB of words).
const CHUNK_BITS: u64 = 1 << 16;
const WORDS: usize = (CHUNK_BITS / 64) as usize;

/// A set of sequence numbers below a fixed capacity.
pub struct SeqSet {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
    /// Inserts at or above the capacity (counted, never stored).
    overflow: AtomicU64,
}

impl SeqSet {
    /// A set for sequence numbers below `capacity` (rounded up to a whole chunk).
    pub fn new(capacity: u64) -> SeqSet {
        let n = capacity.div_ceil(CHUNK_BITS).max(1) as usize;
        SeqSet {
            chunks: (0..n).map(|_| OnceLock::new()).collect(),
            overflow: AtomicU64::new(0),
        }
    }

    pub fn capacity(&self) -> u64 {
        self.chunks.len() as u64 * CHUNK_BITS
    }

    /// Adds `seq`; true if it was not there yet. A number beyond the capacity is counted in
    /// [`SeqSet::overflow`] and reported as new.
    pub fn insert(&self, seq: u64) -> bool {
        let Some(slot) = self.chunks.get((seq / CHUNK_BITS) as usize) else {
            self.overflow.fetch_add(1, Ordering::Relaxed);
            return true;
        };
        let words = slot.get_or_init(|| (0..WORDS).map(|_| AtomicU64::new(0)).collect());
        let bit = seq % CHUNK_BITS;
        let mask = 1u64 << (bit % 64);
        words[(bit / 64) as usize].fetch_or(mask, Ordering::AcqRel) & mask == 0
    }

    pub fn contains(&self, seq: u64) -> bool {
        let Some(words) = self
            .chunks
            .get((seq / CHUNK_BITS) as usize)
            .and_then(OnceLock::get)
        else {
            return false;
        };
        let bit = seq % CHUNK_BITS;
        words[(bit / 64) as usize].load(Ordering::Acquire) & (1u64 << (bit % 64)) != 0
    }

    /// Numbers beyond the capacity that were inserted.
    pub fn overflow(&self) -> u64 {
        self.overflow.load(Ordering::Relaxed)
    }

    /// Members of `self` not in `other`: e.g. acknowledged but never consumed.
    pub fn count_missing_from(&self, other: &SeqSet) -> u64 {
        let mut missing = 0u64;
        for (i, slot) in self.chunks.iter().enumerate() {
            let Some(words) = slot.get() else { continue };
            let theirs = other.chunks.get(i).and_then(OnceLock::get);
            for (w, word) in words.iter().enumerate() {
                let mine = word.load(Ordering::Acquire);
                let seen = theirs.map_or(0, |t| t[w].load(Ordering::Acquire));
                missing += u64::from((mine & !seen).count_ones());
            }
        }
        missing
    }

    /// The first few members of `self` not in `other`, for a log line.
    pub fn first_missing_from(&self, other: &SeqSet, limit: usize) -> Vec<u64> {
        let mut out = Vec::new();
        for (i, slot) in self.chunks.iter().enumerate() {
            let Some(words) = slot.get() else { continue };
            let theirs = other.chunks.get(i).and_then(OnceLock::get);
            for (w, word) in words.iter().enumerate() {
                let mut bits = word.load(Ordering::Acquire)
                    & !theirs.map_or(0, |t| t[w].load(Ordering::Acquire));
                while bits != 0 && out.len() < limit {
                    let b = u64::from(bits.trailing_zeros());
                    out.push(i as u64 * CHUNK_BITS + w as u64 * 64 + b);
                    bits &= bits - 1;
                }
                if out.len() >= limit {
                    return out;
                }
            }
        }
        out
    }

    /// Number of members.
    pub fn len(&self) -> u64 {
        self.chunks
            .iter()
            .filter_map(OnceLock::get)
            .flat_map(|w| w.iter())
            .map(|w| u64::from(w.load(Ordering::Acquire).count_ones()))
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_reports_first_time_and_missing_counts_the_difference() {
        let acked = SeqSet::new(200_000);
        let consumed = SeqSet::new(200_000);
        for s in [0, 1, 63, 64, 65_535, 65_536, 199_999] {
            assert!(acked.insert(s));
            assert!(!acked.insert(s), "second insert of {s} is not new");
        }
        for s in [1, 64, 65_536] {
            consumed.insert(s);
        }
        assert_eq!(acked.len(), 7);
        assert_eq!(acked.count_missing_from(&consumed), 4);
        assert_eq!(
            acked.first_missing_from(&consumed, 10),
            vec![0, 63, 65_535, 199_999]
        );
        assert!(acked.contains(199_999) && !consumed.contains(0));
        assert!(acked.insert(u64::MAX));
        assert_eq!(acked.overflow(), 1);
    }
}
