//! The SYNC_FLUSH hand-off: a put that must wait for the force becomes a [`FlushRequest`] in
//! [`SyncFlushQueues`], answered exactly once by GroupCommitService or, at its deadline, by
//! FlushDiskWatcher (§9.3). A leaf, so the put path and the services share it without importing
//! each other.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::types::PutMessageStatus;

type FlushDone = Box<dyn FnOnce(PutMessageStatus) + Send + 'static>;

/// A GroupCommitRequest: completes exactly once, from group commit or from the watcher.
pub(crate) struct FlushRequest {
    pub(super) next_offset: i64,
    pub(super) deadline: Instant,
    done: Mutex<Option<FlushDone>>,
}

impl FlushRequest {
    pub(crate) fn new(next_offset: i64, timeout: Duration, done: FlushDone) -> Arc<Self> {
        Arc::new(FlushRequest {
            next_offset,
            deadline: Instant::now() + timeout,
            done: Mutex::new(Some(done)),
        })
    }

    pub(super) fn complete(&self, status: PutMessageStatus) {
        // Taken out first so the callback runs without the mutex held.
        let f = self.done.lock().take();
        if let Some(f) = f {
            f(status);
        }
    }

    pub(super) fn is_done(&self) -> bool {
        self.done.lock().is_none()
    }
}

/// The GroupCommitService's write list and the FlushDiskWatcher's queue.
pub(crate) struct SyncFlushQueues {
    pub(super) requests: Mutex<Vec<Arc<FlushRequest>>>,
    pub(super) watched: Mutex<VecDeque<Arc<FlushRequest>>>,
    pub(super) watcher_cv: Condvar,
}

impl SyncFlushQueues {
    pub(crate) fn new() -> Self {
        SyncFlushQueues {
            requests: Mutex::new(Vec::new()),
            watched: Mutex::new(VecDeque::new()),
            watcher_cv: Condvar::new(),
        }
    }

    /// `putRequest` + `flushDiskWatcher.add`.
    pub(crate) fn submit(&self, req: Arc<FlushRequest>) {
        self.watched.lock().push_back(Arc::clone(&req));
        self.watcher_cv.notify_all();
        self.requests.lock().push(req);
    }
}
