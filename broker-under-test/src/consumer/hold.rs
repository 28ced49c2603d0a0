//! Long polling (PullRequestHoldService, consumer §3). A pull that finds nothing new is parked
//! here instead of answered; no thread waits for it. It is re-run on the pull executor when a
//! message for its queue is dispatched (the store calls [`PullHold::notify`] from its dispatch),
//! or when the periodic check finds new data or the hold time over. The re-run answers it and is
//! never held again.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use parking_lot::Mutex;

use super::filter::TagFilter;
use crate::{
    clock::epoch_millis,
    executor::TaskQueue,
    task::{ProcessorKind, RequestTask},
};

/// One parked pull.
pub struct HeldPull {
    pub task: RequestTask,
    pub offset: i64,
    pub suspended_at: Instant,
    pub hold: Duration,
    pub filter: TagFilter,
}

/// The held pulls, per `topic@queueId`.
pub struct PullHold {
    // Held only to move requests in and out, never while one runs.
    table: Mutex<HashMap<(String, i32), Vec<HeldPull>>>,
    count: AtomicUsize,
    pull_queue: Arc<TaskQueue>,
    /// Re-runs the pull queue refused (`execute request when wakeup failed.`): never answered.
    lost_wakeups: AtomicU64,
    /// Pulls released by a dispatched message (not by the periodic check or their hold time):
    /// tests tell "woken by the send" from "found at the next check" by this, not by a clock.
    released_by_message: AtomicU64,
}

impl PullHold {
    pub fn new(pull_queue: Arc<TaskQueue>) -> Self {
        PullHold {
            table: Mutex::new(HashMap::new()),
            count: AtomicUsize::new(0),
            pull_queue,
            lost_wakeups: AtomicU64::new(0),
            released_by_message: AtomicU64::new(0),
        }
    }

    /// Pulls held now.
    pub fn held(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    pub fn lost_wakeups(&self) -> u64 {
        self.lost_wakeups.load(Ordering::Relaxed)
    }

    /// Pulls released by a dispatched message since start.
    pub fn released_by_message(&self) -> u64 {
        self.released_by_message.load(Ordering::Relaxed)
    }

    /// Parks `pull`. `max_offset` is read again once it is parked, so a message dispatched
    /// between the pull's store read and now wakes it at once instead of at the next check.
    pub fn hold(&self, topic: &str, queue_id: i32, pull: HeldPull, max_offset: impl Fn() -> i64) {
        let offset = pull.offset;
        self.table
            .lock()
            .entry((topic.to_owned(), queue_id))
            .or_default()
            .push(pull);
        self.count.fetch_add(1, Ordering::AcqRel);
        let max = max_offset();
        if max > offset {
            self.notify(topic, queue_id, max, None);
        }
    }

    /// notifyMessageArriving: re-runs the pulls of this queue that the new data (or the hold
    /// time) releases. `tags_code` is the new entry's; `None` (the periodic check) matches all.
    pub fn notify(&self, topic: &str, queue_id: i32, max_offset: i64, tags_code: Option<i64>) {
        // The store's ReputMessageService calls this for every message: no lock while nothing
        // is held. A pull
        // parked concurrently re-reads the max offset after parking, so it cannot miss this.
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let now = Instant::now();
        let ready = {
            let mut table = self.table.lock();
            let key = (topic.to_owned(), queue_id);
            let Some(list) = table.get_mut(&key) else {
                return;
            };
            let mut ready = Vec::new();
            let mut i = 0;
            while i < list.len() {
                let p = &list[i];
                let arrived = max_offset > p.offset && p.filter.matches_code(tags_code);
                let expired = now >= p.suspended_at + p.hold;
                if arrived || expired {
                    ready.push(list.swap_remove(i));
                } else {
                    i += 1;
                }
            }
            if list.is_empty() {
                table.remove(&key);
            }
            ready
        };
        for p in ready {
            self.count.fetch_sub(1, Ordering::Relaxed);
            if tags_code.is_some() && max_offset > p.offset {
                self.released_by_message.fetch_add(1, Ordering::Relaxed);
            }
            self.wake(p);
        }
    }

    /// The periodic check (every 5 s, or `shortPollingTimeMills`): every queue with held pulls
    /// against its current max offset.
    pub fn check_all(&self, max_offset: impl Fn(&str, i32) -> i64) {
        let keys: Vec<(String, i32)> = self.table.lock().keys().cloned().collect();
        for (topic, queue_id) in keys {
            let max = max_offset(&topic, queue_id);
            self.notify(&topic, queue_id, max, None);
        }
    }

    /// executeRequestWhenWakeup: a new task on the pull executor, with a fresh creation time,
    /// so it is subject to `[OVERLOAD]` and `[TIMEOUT_CLEAN_QUEUE]` like any pull.
    fn wake(&self, p: HeldPull) {
        let task = RequestTask {
            request: p.task.request,
            responder: p.task.responder,
            processor: ProcessorKind::PullResumed,
            created: Instant::now(),
            created_epoch_ms: epoch_millis(),
        };
        if let Err(task) = self.pull_queue.try_push(task) {
            self.lost_wakeups.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "execute request when wakeup failed. {}: the pull queue is full or closed",
                task.responder.peer()
            );
        }
    }

    /// Drops every held pull (shutdown): the connections close, the clients time out.
    pub fn clear(&self) {
        let n: usize = self.table.lock().drain().map(|(_, v)| v.len()).sum();
        self.count.fetch_sub(n, Ordering::Relaxed);
    }
}
