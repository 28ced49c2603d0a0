//! A connection's attempts awaiting an answer, by opaque.
//!
//! The pacer gives a connection's sends consecutive opaques, and a window of them is in flight
//! at once, so an opaque's low bits find its slot in a table twice the window's size with no
//! hashing and no probing; only an opaque whose slot is still taken (an answer that never came,
//! held until the sweep times it out, or a window wider than the table) goes to a map. In the
//! closed loop at the floor, the hash map's inserts and probes were about 6% of the generator's
//! time (`perf`: `HashMap::extend` 2.9%, and half of the answer loop's own time in the probe).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::runner::common::InFlight;

/// Slots in a table: twice the floor's window of 512, and a power of two for the mask.
const SLOTS: usize = 1024;

/// One slot, on a cache line of its own: an insert into a slot the sweep of the window left
/// cold costs one miss, not two for an entry straddling lines. The opaque is the entry's own
/// field, not an `Option<(i32, InFlight)>`: that tuple was built on the stack and copied in
/// with loads straddling the stores that had just built it (store-to-load forwarding failed on
/// each: 80% of the insert's samples in `perf annotate`).
#[derive(Default)]
#[repr(align(64))]
struct Slot(Option<InFlight>);

/// In-flight attempts by opaque (see the module).
#[derive(Default)]
pub struct InFlightTable {
    /// The attempt written under opaque `o` at `o & (SLOTS - 1)`; allocated at the first insert.
    slots: Vec<Slot>,
    /// What found its slot taken.
    others: HashMap<i32, InFlight, BuildHasherDefault<OpaqueHasher>>,
    len: usize,
}

impl InFlightTable {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `e` under `opaque`, replacing (and dropping) an attempt held under the same one.
    pub fn insert(&mut self, opaque: i32, e: InFlight) {
        self.insert_with(opaque, || e);
    }

    /// [`InFlightTable::insert`] of the attempt `make` builds, built where it is stored: an
    /// attempt built by the caller and passed in was read back with 16-byte loads straddling
    /// the 8-byte stores that had just built it (store-to-load forwarding failed: over half of
    /// the insert's samples in `perf annotate`).
    #[inline(always)]
    pub fn insert_with(&mut self, opaque: i32, make: impl FnOnce() -> InFlight) {
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, Slot::default);
        }
        let slot = &mut self.slots[slot_of(opaque)].0;
        if slot.is_none() {
            *slot = Some(make().with_opaque(opaque));
            // Held in the map while its slot was taken: replaced, not held twice.
            if self.others.is_empty() || self.others.remove(&opaque).is_none() {
                self.len += 1;
            }
            return;
        }
        self.insert_taken(make().with_opaque(opaque));
    }

    /// An insert whose slot holds an attempt: the same opaque's is replaced, another's stays
    /// and `e` goes to the map.
    #[cold]
    fn insert_taken(&mut self, e: InFlight) {
        let opaque = e.opaque;
        match &mut self.slots[slot_of(opaque)].0 {
            Some(old) if old.opaque == opaque => *old = e,
            _ => {
                if self.others.insert(opaque, e).is_none() {
                    self.len += 1;
                }
            }
        }
    }

    /// Adds entries that carry their opaque ([`InFlight::with_opaque`]).
    pub fn extend(&mut self, entries: impl IntoIterator<Item = InFlight>) {
        for e in entries {
            self.insert(e.opaque, e);
        }
    }

    /// `f` of the attempt held under `opaque`, which is then taken out. The answer loop reads
    /// the entry where it lies: moved out to the stack it was copied twice more, and the
    /// copies' loads waited on their own stores.
    #[inline]
    pub fn take_with<R>(&mut self, opaque: i32, f: impl FnOnce(&InFlight) -> R) -> Option<R> {
        if let Some(Slot(slot)) = self.slots.get_mut(slot_of(opaque)) {
            if let Some(e) = slot.as_ref().filter(|e| e.opaque == opaque) {
                let r = f(e);
                *slot = None;
                self.len -= 1;
                return Some(r);
            }
        }
        if self.others.is_empty() {
            return None;
        }
        let e = self.others.remove(&opaque)?;
        self.len -= 1;
        Some(f(&e))
    }

    /// Takes out every attempt for which `expired` holds.
    pub fn take_where(&mut self, mut expired: impl FnMut(&InFlight) -> bool) -> Vec<InFlight> {
        if self.is_empty() {
            // The sweep asks every few milliseconds: no scan of an idle connection's slots.
            return Vec::new();
        }
        let mut out = Vec::with_capacity(self.len());
        for Slot(slot) in &mut self.slots {
            if slot.as_ref().is_some_and(&mut expired) {
                out.extend(slot.take());
            }
        }
        let keys: Vec<i32> = self
            .others
            .iter()
            .filter(|(_, e)| expired(e))
            .map(|(k, _)| *k)
            .collect();
        out.extend(keys.iter().filter_map(|k| self.others.remove(k)));
        self.len -= out.len();
        out
    }

    /// Takes out every attempt.
    pub fn take_all(&mut self) -> Vec<InFlight> {
        self.take_where(|_| true)
    }
}

fn slot_of(opaque: i32) -> usize {
    opaque as u32 as usize & (SLOTS - 1)
}

/// Fibonacci hashing of an opaque, for the map of what collided. Opaques are consecutive
/// integers the pacer assigns, so SipHash's protection against chosen keys buys nothing.
#[derive(Default)]
pub struct OpaqueHasher(u64);

impl Hasher for OpaqueHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i32(&mut self, v: i32) {
        self.0 = u64::from(v as u32).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::time::Instant;

    fn attempt(seq: u64) -> InFlight {
        let t = Instant::now();
        InFlight::new(seq, t, t, None, 0, 1, None)
    }

    #[test]
    fn a_slot_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<InFlight>(), 64);
        assert_eq!(std::mem::size_of::<Slot>(), 64);
        assert_eq!(std::mem::align_of::<Slot>(), 64);
    }

    proptest! {
        /// Inserts (consecutive opaques mostly, any sometimes, colliding ones among them),
        /// removes, sweeps and drains agree with a map at every step.
        #[test]
        fn the_table_is_a_map(
            ops in prop::collection::vec((0u8..8, any::<i32>(), 0u16..3000), 1..400),
        ) {
            let mut table = InFlightTable::default();
            let mut model: BTreeMap<i32, u64> = BTreeMap::new();
            let mut next = 0i32;
            for (i, (op, any_opaque, n)) in ops.into_iter().enumerate() {
                let seq = i as u64;
                match op {
                    0..=2 => {
                        next = next.wrapping_add(1);
                        table.insert(next, attempt(seq));
                        model.insert(next, seq);
                    }
                    3 => {
                        // The same slot as a held opaque, or any opaque.
                        let o = if n % 2 == 0 { next.wrapping_add(SLOTS as i32) } else { any_opaque };
                        table.insert(o, attempt(seq));
                        model.insert(o, seq);
                    }
                    4 | 5 => {
                        let o = next.wrapping_sub(i32::from(n % 600));
                        prop_assert_eq!(table.take_with(o, |e| e.seq), model.remove(&o));
                    }
                    6 => {
                        let cut = u64::from(n);
                        let mut got: Vec<u64> =
                            table.take_where(|e| e.seq < cut).iter().map(|e| e.seq).collect();
                        got.sort_unstable();
                        let want: Vec<u64> = model.values().copied().filter(|s| *s < cut).collect();
                        model.retain(|_, s| *s >= cut);
                        let mut want = want;
                        want.sort_unstable();
                        prop_assert_eq!(got, want);
                    }
                    _ => {
                        if n % 50 == 0 {
                            let mut got: Vec<u64> = table.take_all().iter().map(|e| e.seq).collect();
                            got.sort_unstable();
                            let mut want: Vec<u64> = model.values().copied().collect();
                            want.sort_unstable();
                            model.clear();
                            prop_assert_eq!(got, want);
                        }
                    }
                }
                prop_assert_eq!(table.len(), model.len());
            }
        }
    }

    #[test]
    fn an_opaque_whose_slot_is_taken_is_still_found() {
        let mut t = InFlightTable::default();
        t.insert(5, attempt(1));
        t.insert(5 + SLOTS as i32, attempt(2));
        t.insert(5 - SLOTS as i32, attempt(3));
        assert_eq!(t.len(), 3);
        assert_eq!(t.take_with(5 + SLOTS as i32, |e| e.seq), Some(2));
        assert_eq!(t.take_with(5, |e| e.seq), Some(1));
        assert_eq!(t.take_with(5, |e| e.seq), None);
        assert_eq!(t.take_with(5 - SLOTS as i32, |e| e.seq), Some(3));
        assert!(t.is_empty());
        // The same opaque twice: the later attempt is held, once.
        t.insert(9, attempt(4));
        t.insert(9, attempt(5));
        assert_eq!(t.len(), 1);
        assert_eq!(t.take_with(9, |e| e.seq), Some(5));
    }

    /// Entries handed over by a reader thread's channel carry their opaque: each is found under
    /// its own, a colliding one included.
    #[test]
    fn extended_entries_are_found_under_their_own_opaque() {
        let mut t = InFlightTable::default();
        let handed =
            [(7, 1), (8, 2), (7 + SLOTS as i32, 3)].map(|(o, seq)| attempt(seq).with_opaque(o));
        t.extend(handed);
        assert_eq!(t.len(), 3);
        assert_eq!(t.take_with(7 + SLOTS as i32, |e| e.seq), Some(3));
        assert_eq!(t.take_with(8, |e| e.seq), Some(2));
        assert_eq!(t.take_with(7, |e| e.seq), Some(1));
        assert!(t.is_empty());
    }
}
