//! The CommitLog put-message lock (§8) and `beginTimeInLock`, the page-cache-busy signal (§5),
//! and 5.x's per-topic-queue lock taken before it (§7.4, "5.3.3 differences").

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use parking_lot::{Mutex, MutexGuard};

use super::config::PutLockKind;
use crate::clock::epoch_millis;

/// Guards the CommitLog's append state with either RocketMQ lock flavour.
pub(crate) struct PutLock<T> {
    kind: PutLockKind,
    /// PutMessageSpinLock's flag (true = held here; RocketMQ stores the inverse).
    spin_held: AtomicBool,
    /// PutMessageReentrantLock: a parking mutex. The data lives in `data` for both flavours.
    mutex: Mutex<()>,
    /// Epoch ms at which the current holder acquired the lock, 0 when free (`beginTimeInLock`).
    begin_time_in_lock: AtomicI64,
    data: UnsafeCell<T>,
}

// SAFETY: `data` is only reachable through a `PutLockGuard`, and a guard exists only while either
// `spin_held` was won by compare-and-set or `mutex` is held, so access is exclusive.
unsafe impl<T: Send> Sync for PutLock<T> {}
// SAFETY: the lock owns its `T`; moving it to another thread moves the `T`, which is `Send`.
unsafe impl<T: Send> Send for PutLock<T> {}

impl<T> PutLock<T> {
    pub(crate) fn new(kind: PutLockKind, data: T) -> Self {
        PutLock {
            kind,
            spin_held: AtomicBool::new(false),
            mutex: Mutex::new(()),
            begin_time_in_lock: AtomicI64::new(0),
            data: UnsafeCell::new(data),
        }
    }

    /// Acquires the lock and stamps `beginTimeInLock`. Spin waiters loop on the CAS with no
    /// back-off and no yield, exactly like PutMessageSpinLock: they burn a CPU each while waiting.
    pub(crate) fn lock(&self) -> PutLockGuard<'_, T> {
        let mutex_guard = match self.kind {
            PutLockKind::Spin => {
                while self
                    .spin_held
                    .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
                {}
                None
            }
            // parking_lot does not poison, which is what the put lock wants: a panic while holding
            // it leaves the append state consistent enough (the mapped file positions are only
            // advanced after a complete copy), so the next put carries on.
            PutLockKind::Reentrant => Some(self.mutex.lock()),
        };
        let begin = epoch_millis();
        self.begin_time_in_lock.store(begin, Ordering::Release);
        PutLockGuard {
            lock: self,
            _mutex_guard: mutex_guard,
            begin_millis: begin,
        }
    }

    /// `beginTimeInLock`: epoch ms the current holder took the lock, 0 if free.
    pub(crate) fn begin_time_in_lock(&self) -> i64 {
        self.begin_time_in_lock.load(Ordering::Acquire)
    }
}

/// Holds the put lock; resets `beginTimeInLock` to 0 and releases on drop, on every path
/// (RocketMQ 5.3 resets it per return path instead, §7.4).
pub(crate) struct PutLockGuard<'a, T> {
    lock: &'a PutLock<T>,
    _mutex_guard: Option<MutexGuard<'a, ()>>,
    begin_millis: i64,
}

impl<T> PutLockGuard<'_, T> {
    /// The `beginLockTimestamp` of this hold: the store timestamp of records appended under it.
    pub(crate) fn begin_millis(&self) -> i64 {
        self.begin_millis
    }
}

impl<T> Deref for PutLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves exclusive ownership of the lock (see `Sync` impl).
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for PutLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` prevents aliasing through this guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for PutLockGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.begin_time_in_lock.store(0, Ordering::Release);
        if self.lock.kind == PutLockKind::Spin {
            self.lock.spin_held.store(false, Ordering::Release);
        }
        // The mutex guard, if any, is dropped after this body.
    }
}

/// 5.x's `TopicQueueLock`: parking locks striped by the hash of `topic-queueId`, taken before the
/// put lock and held through the append. Two sends to one queue wait here, parked, instead of
/// both spinning for the put lock, so fewer threads spin (fidelity row 1: with the spin lock and
/// 8 send threads on one core, Apache 4.9.7's knee fell to 1,682/s and 5.3.3's to 3,364-3,370/s).
pub(crate) struct TopicQueueLock {
    stripes: Vec<Mutex<()>>,
}

impl TopicQueueLock {
    /// None for 0 stripes (4.x).
    pub(crate) fn new(stripes: usize) -> Option<TopicQueueLock> {
        (stripes > 0).then(|| TopicQueueLock {
            stripes: (0..stripes).map(|_| Mutex::new(())).collect(),
        })
    }

    /// The stripe of `topic`-`queue_id`, chosen as RocketMQ does: the key's Java `hashCode`,
    /// its sign bit cleared, modulo the stripe count.
    pub(crate) fn lock(&self, topic: &str, queue_id: i32) -> MutexGuard<'_, ()> {
        self.stripes[self.stripe(topic, queue_id)].lock()
    }

    /// Hashes `topic-queueId` without building the string: this runs on every put.
    fn stripe(&self, topic: &str, queue_id: i32) -> usize {
        let mut digits = [0u8; 11];
        let mut at = digits.len();
        let mut n = queue_id.unsigned_abs();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let sign: &[u8] = if queue_id < 0 { b"-" } else { b"" };
        let units = topic
            .encode_utf16()
            .chain(std::iter::once(u16::from(b'-')))
            .chain(sign.iter().chain(&digits[at..]).map(|&b| u16::from(b)));
        (java_hash(units) & 0x7fff_ffff) as usize % self.stripes.len()
    }
}

/// Java's `String.hashCode` over a string's UTF-16 code units: `s[0]·31^(n−1) + … + s[n−1]`,
/// wrapping.
fn java_hash(units: impl Iterator<Item = u16>) -> i32 {
    units.fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

#[cfg(test)]
fn java_string_hash(s: &str) -> i32 {
    java_hash(s.encode_utf16())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn counts_exactly(kind: PutLockKind) {
        let lock = Arc::new(PutLock::new(kind, 0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let lock = Arc::clone(&lock);
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        *lock.lock() += 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*lock.lock(), 40_000);
        assert_eq!(lock.begin_time_in_lock(), 0);
    }

    #[test]
    fn spin_lock_is_exclusive() {
        counts_exactly(PutLockKind::Spin);
    }

    #[test]
    fn reentrant_lock_is_exclusive() {
        counts_exactly(PutLockKind::Reentrant);
    }

    #[test]
    fn begin_time_is_set_while_held_and_reset_after_a_panic() {
        for kind in [PutLockKind::Spin, PutLockKind::Reentrant] {
            let lock = Arc::new(PutLock::new(kind, ()));
            {
                let _g = lock.lock();
                assert!(lock.begin_time_in_lock() > 0);
            }
            assert_eq!(lock.begin_time_in_lock(), 0);
            let l2 = Arc::clone(&lock);
            let r = std::thread::spawn(move || {
                let _g = l2.lock();
                panic!("append failed");
            })
            .join();
            assert!(r.is_err());
            assert_eq!(lock.begin_time_in_lock(), 0);
            drop(lock.lock());
        }
    }

    #[test]
    fn the_stripe_is_javas_hash_of_topic_dash_queue() {
        // "a".hashCode() = 97, "ab".hashCode() = 97·31 + 98 = 3105 (the JDK's documented formula).
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("ab"), 3105);
        assert_eq!(java_string_hash(""), 0);
        // Long keys wrap like Java's int arithmetic; the sign bit is cleared before the modulo.
        let long = "TopicWithAVeryLongNameThatOverflows-7";
        let lock = TopicQueueLock::new(32).unwrap();
        assert_eq!(
            lock.stripe(long, 7),
            (java_string_hash(&format!("{long}-7")) & 0x7fff_ffff) as usize % 32
        );
        // The key is hashed as the string RocketMQ builds, negative ids and all.
        for (topic, q) in [
            ("BenchTopic", 0),
            ("BenchTopic", 31),
            ("T", -5),
            ("x", i32::MIN),
        ] {
            assert_eq!(
                lock.stripe(topic, q),
                (java_string_hash(&format!("{topic}-{q}")) & 0x7fff_ffff) as usize % 32
            );
        }
        // Queues 0-7 of one topic differ in their last character only: 8 distinct stripes.
        let stripes: std::collections::BTreeSet<usize> =
            (0..8).map(|q| lock.stripe("BenchTopic", q)).collect();
        assert_eq!(stripes.len(), 8);
        assert!(TopicQueueLock::new(0).is_none());
    }
}
