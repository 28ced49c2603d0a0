//! Queue locks for orderly consumption (RebalanceLockManager, consumer §7.2): one lock per
//! (group, queue), held by a client id, expiring `rebalanceLockMaxLiveTime` after its last
//! renewal; a lock held by another live client is refused; only the holder unlocks.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use parking_lot::Mutex;
use remoting::fastjson::lenient;
use serde::{Deserialize, Serialize};

/// MessageQueue; equality on all three fields.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueue {
    #[serde(default, deserialize_with = "lenient::string")]
    pub broker_name: String,
    #[serde(default, deserialize_with = "lenient::int")]
    pub queue_id: i32,
    #[serde(default, deserialize_with = "lenient::string")]
    pub topic: String,
}

struct LockEntry {
    client_id: String,
    last_update: Instant,
}

pub struct LockManager {
    max_live: Duration,
    // One lock for the whole table, as RocketMQ's `lock` ReentrantLock.
    table: Mutex<HashMap<String, HashMap<MessageQueue, LockEntry>>>,
}

impl LockManager {
    pub fn new(max_live: Duration) -> Self {
        LockManager {
            max_live,
            table: Mutex::new(HashMap::new()),
        }
    }

    /// tryLockBatch: the queues now locked by `client_id` (taken, renewed or handed over).
    pub fn try_lock_batch(
        &self,
        group: &str,
        mqs: &[MessageQueue],
        client_id: &str,
    ) -> Vec<MessageQueue> {
        self.try_lock_batch_at(group, mqs, client_id, Instant::now())
    }

    /// [`Self::try_lock_batch`] at `now`: a lock held longer than `rebalanceLockMaxLiveTime`
    /// (strictly, as RebalanceLockManager's `LockEntry.isExpired`) goes to the asker.
    fn try_lock_batch_at(
        &self,
        group: &str,
        mqs: &[MessageQueue],
        client_id: &str,
        now: Instant,
    ) -> Vec<MessageQueue> {
        let mut table = self.table.lock();
        let locks = table.entry(group.to_owned()).or_default();
        let mut ok = Vec::new();
        for mq in mqs {
            match locks.get_mut(mq) {
                None => {
                    locks.insert(
                        mq.clone(),
                        LockEntry {
                            client_id: client_id.to_owned(),
                            last_update: now,
                        },
                    );
                }
                Some(e) if e.client_id == client_id => e.last_update = now,
                Some(e) if now.duration_since(e.last_update) > self.max_live => {
                    eprintln!(
                        "tryLockBatch, message queue lock expired, OLD: {} NEW: {client_id} {mq:?}",
                        e.client_id
                    );
                    e.client_id = client_id.to_owned();
                    e.last_update = now;
                }
                Some(e) => {
                    eprintln!(
                        "tryLockBatch, message queue locked by other client. Group: {group} \
                         OtherClientId: {} NewClientId: {client_id} {mq:?}",
                        e.client_id
                    );
                    continue;
                }
            }
            ok.push(mq.clone());
        }
        ok
    }

    /// unlockBatch: removes only the caller's locks.
    pub fn unlock_batch(&self, group: &str, mqs: &[MessageQueue], client_id: &str) {
        let mut table = self.table.lock();
        let Some(locks) = table.get_mut(group) else {
            return;
        };
        for mq in mqs {
            match locks.get(mq) {
                Some(e) if e.client_id == client_id => {
                    locks.remove(mq);
                }
                Some(e) => eprintln!(
                    "unlockBatch, but mq locked by other client: {}, group={group}, mq={mq:?}",
                    e.client_id
                ),
                None => {}
            }
        }
        if locks.is_empty() {
            table.remove(group);
        }
    }

    /// RebalanceLockManager.isLockAllExpired (5.1.1+): whether `group` holds no lock renewed
    /// within `rebalanceLockMaxLiveTime`, on any queue of any topic. The 5.3 send path reads
    /// it to dead-letter an orderly group's retry message at once (`retry_send_to_dlq`).
    pub fn is_lock_all_expired(&self, group: &str) -> bool {
        self.is_lock_all_expired_at(group, Instant::now())
    }

    fn is_lock_all_expired_at(&self, group: &str, now: Instant) -> bool {
        let table = self.table.lock();
        table.get(group).is_none_or(|locks| {
            locks
                .values()
                .all(|e| now.duration_since(e.last_update) > self.max_live)
        })
    }

    /// Locks held now (runtime info).
    pub fn held(&self) -> usize {
        self.table.lock().values().map(HashMap::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mq(q: i32) -> MessageQueue {
        MessageQueue {
            broker_name: "b".into(),
            queue_id: q,
            topic: "T".into(),
        }
    }

    #[test]
    fn one_holder_per_queue_until_unlock_or_expiry() {
        let m = LockManager::new(Duration::from_millis(50));
        assert_eq!(m.try_lock_batch("G", &[mq(0), mq(1)], "A"), [mq(0), mq(1)]);
        assert_eq!(m.try_lock_batch("G", &[mq(0), mq(2)], "B"), [mq(2)]);
        assert_eq!(m.try_lock_batch("H", &[mq(0)], "B"), [mq(0)], "per group");
        m.unlock_batch("G", &[mq(0)], "B");
        assert_eq!(
            m.try_lock_batch("G", &[mq(0)], "B"),
            Vec::<MessageQueue>::new()
        );
        m.unlock_batch("G", &[mq(0)], "A");
        assert_eq!(m.try_lock_batch("G", &[mq(0)], "B"), [mq(0)]);
        // A renews queue 1 at t; B asks at t + 50 ms (not expired: the rule is strictly
        // longer) and at t + 51 ms (expired: B takes it over).
        let t = Instant::now();
        assert_eq!(m.try_lock_batch_at("G", &[mq(1)], "A", t), [mq(1)]);
        let at = |ms| t + Duration::from_millis(ms);
        assert_eq!(
            m.try_lock_batch_at("G", &[mq(1)], "B", at(50)),
            Vec::<MessageQueue>::new(),
            "held exactly max live: still A's"
        );
        assert_eq!(
            m.try_lock_batch_at("G", &[mq(1)], "B", at(51)),
            [mq(1)],
            "expired"
        );
        assert_eq!(
            m.try_lock_batch_at("G", &[mq(1)], "A", at(52)),
            Vec::<MessageQueue>::new(),
            "now B's"
        );
        assert_eq!(m.held(), 4);
    }

    #[test]
    fn a_group_s_locks_are_all_expired_when_none_was_renewed_within_the_limit() {
        let m = LockManager::new(Duration::from_millis(50));
        assert!(m.is_lock_all_expired("G"), "no lock record");
        let t = Instant::now();
        m.try_lock_batch_at("G", &[mq(0)], "A", t);
        m.try_lock_batch_at("G", &[mq(1)], "A", t + Duration::from_millis(30));
        let at = |ms| t + Duration::from_millis(ms);
        assert!(!m.is_lock_all_expired_at("G", at(50)));
        assert!(
            !m.is_lock_all_expired_at("G", at(80)),
            "queue 1's is 50 ms old"
        );
        assert!(m.is_lock_all_expired_at("G", at(81)));
        assert!(m.is_lock_all_expired_at("H", at(0)), "per group");
        m.unlock_batch("G", &[mq(0), mq(1)], "A");
        assert!(m.is_lock_all_expired_at("G", at(0)), "unlocked");
    }
}
