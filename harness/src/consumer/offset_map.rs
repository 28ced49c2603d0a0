//! The process queue's map from queue offset to message, for offsets that arrive in order.
//!
//! A pull returns the next offsets of its queue, so entries are appended at the back; consume
//! requests finish them in about that order, so they leave from the front. A `BTreeMap` paid
//! node splits, merges and allocations for that (5% of the consumers' CPU in `make floor`).
//! Here the entries sit in a `VecDeque` sorted by offset: an append is a push, a removal a
//! binary search that leaves a hole, and holes at either end are dropped at once, so the first
//! and the last entry are always present. Holes in the middle (a message finished before an
//! earlier one) last until the entries before them leave: at most the queue's span, which the
//! pull gates bound. An offset below the last one (a message put back to be consumed again) is
//! inserted in place.

use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct OffsetMap<V> {
    /// Sorted by offset; `None` is a removed entry. Neither end is `None`.
    slots: VecDeque<(i64, Option<V>)>,
    len: usize,
}

impl<V> Default for OffsetMap<V> {
    fn default() -> Self {
        OffsetMap {
            slots: VecDeque::new(),
            len: 0,
        }
    }
}

impl<V> OffsetMap<V> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where `offset` is (Ok) or would go (Err). The ends first: appends and in-order
    /// removals, nearly every call, touch only them.
    fn find(&self, offset: i64) -> Result<usize, usize> {
        match (self.slots.front(), self.slots.back()) {
            (None, _) | (_, None) => Err(0),
            (Some((first, _)), _) if offset == *first => Ok(0),
            (Some((first, _)), _) if offset < *first => Err(0),
            (_, Some((last, _))) if offset == *last => Ok(self.slots.len() - 1),
            (_, Some((last, _))) if offset > *last => Err(self.slots.len()),
            _ => self.slots.binary_search_by_key(&offset, |(o, _)| *o),
        }
    }

    pub fn contains_key(&self, offset: i64) -> bool {
        matches!(self.find(offset), Ok(i) if self.slots[i].1.is_some())
    }

    /// Inserts `v` at `offset` unless an entry is there; false (and `v` dropped) if one is.
    pub fn insert(&mut self, offset: i64, v: V) -> bool {
        match self.slots.back() {
            Some((last, _)) if *last >= offset => {}
            _ => {
                self.slots.push_back((offset, Some(v)));
                self.len += 1;
                return true;
            }
        }
        match self.find(offset) {
            Ok(i) if self.slots[i].1.is_some() => return false,
            Ok(i) => self.slots[i].1 = Some(v),
            Err(i) => self.slots.insert(i, (offset, Some(v))),
        }
        self.len += 1;
        true
    }

    // Inlined into the process queue's removal loop: as a call (whether LLVM inlines it moves
    // with how the crate's code is split into units) it cost 25 instructions a consumed message.
    #[inline]
    pub fn remove(&mut self, offset: i64) -> Option<V> {
        let i = self.find(offset).ok()?;
        let v = self.slots[i].1.take()?;
        self.len -= 1;
        self.trim();
        Some(v)
    }

    /// The smallest offset and its entry, removed.
    pub fn pop_first(&mut self) -> Option<(i64, V)> {
        let (offset, v) = self.slots.pop_front()?;
        let v = v.expect("the first slot holds an entry");
        self.len -= 1;
        self.trim();
        Some((offset, v))
    }

    pub fn first_key(&self) -> Option<i64> {
        self.slots.front().map(|(o, _)| *o)
    }

    pub fn last_key(&self) -> Option<i64> {
        self.slots.back().map(|(o, _)| *o)
    }

    /// Drops the holes at both ends.
    fn trim(&mut self) {
        while self.slots.front().is_some_and(|(_, v)| v.is_none()) {
            self.slots.pop_front();
        }
        while self.slots.back().is_some_and(|(_, v)| v.is_none()) {
            self.slots.pop_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(i64),
        Remove(i64),
        PopFirst,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0i64..40).prop_map(Op::Insert),
            3 => (0i64..40).prop_map(Op::Remove),
            1 => Just(Op::PopFirst),
        ]
    }

    proptest! {
        /// Any sequence of inserts (in order or not), removals and pops leaves the same
        /// entries, first and last key as a `BTreeMap` given the same sequence.
        #[test]
        fn behaves_as_a_sorted_map(ops in proptest::collection::vec(op(), 0..200)) {
            let (mut m, mut model) = (OffsetMap::default(), BTreeMap::new());
            for (step, op) in ops.into_iter().enumerate() {
                match op {
                    Op::Insert(o) => {
                        let fresh = !model.contains_key(&o);
                        if fresh {
                            model.insert(o, step);
                        }
                        prop_assert_eq!(m.insert(o, step), fresh);
                    }
                    Op::Remove(o) => prop_assert_eq!(m.remove(o), model.remove(&o)),
                    Op::PopFirst => prop_assert_eq!(m.pop_first(), model.pop_first()),
                }
                prop_assert_eq!(m.len(), model.len());
                prop_assert_eq!(m.first_key(), model.first_key_value().map(|(k, _)| *k));
                prop_assert_eq!(m.last_key(), model.last_key_value().map(|(k, _)| *k));
                for o in 0..40 {
                    prop_assert_eq!(m.contains_key(o), model.contains_key(&o));
                }
            }
        }
    }

    #[test]
    fn holes_in_the_middle_stay_until_the_front_leaves() {
        let mut m = OffsetMap::default();
        for o in 10..15 {
            assert!(m.insert(o, ()));
        }
        m.remove(12);
        m.remove(13);
        assert_eq!((m.len(), m.slots.len()), (3, 5));
        m.remove(10);
        m.remove(11);
        assert_eq!(
            (m.len(), m.slots.len()),
            (1, 1),
            "the holes went with the front"
        );
        assert_eq!((m.first_key(), m.last_key()), (Some(14), Some(14)));
    }
}
