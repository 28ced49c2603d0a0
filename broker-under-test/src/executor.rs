//! A fixed pool of named OS threads taking [`RequestTask`]s from one bounded FIFO queue: Java's
//! `ThreadPoolExecutor` over a `LinkedBlockingQueue`, as the broker builds it (reference §4.1).
//!
//! The queue is a `Mutex<VecDeque>` + `Condvar` rather than a channel because BrokerFastFailure
//! must look at the head's creation time and remove it from outside the pool (reference §6).

use std::{
    collections::VecDeque,
    io,
    panic::{catch_unwind, AssertUnwindSafe},
    sync::Arc,
    thread::JoinHandle,
    time::{Duration, Instant},
};

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::task::{ExecutorKind, RequestTask};

struct QueueState {
    tasks: VecDeque<RequestTask>,
    /// Set on shutdown: no new tasks; workers drain what is queued, then exit.
    closed: bool,
}

/// The bounded work queue of one executor.
pub struct TaskQueue {
    kind: ExecutorKind,
    capacity: usize,
    // Held only for queue operations, never while a task runs.
    state: Mutex<QueueState>,
    ready: Condvar,
}

impl TaskQueue {
    pub fn new(kind: ExecutorKind, capacity: usize) -> Self {
        TaskQueue {
            kind,
            capacity,
            state: Mutex::new(QueueState {
                tasks: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock()
    }

    pub fn kind(&self) -> ExecutorKind {
        self.kind
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.lock().tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Java's `offer`: the task back when the queue is full (→ `[OVERLOAD]`) or shut down.
    // Handing the task back by value keeps the hot path free of a per-request allocation.
    #[allow(clippy::result_large_err)]
    pub fn try_push(&self, task: RequestTask) -> Result<(), RequestTask> {
        let mut st = self.lock();
        if st.closed || st.tasks.len() >= self.capacity {
            return Err(task);
        }
        st.tasks.push_back(task);
        drop(st);
        self.ready.notify_one();
        Ok(())
    }

    /// Blocks for the next task; `None` once the queue is closed and drained.
    fn take(&self) -> Option<RequestTask> {
        let mut st = self.lock();
        loop {
            if let Some(t) = st.tasks.pop_front() {
                return Some(t);
            }
            if st.closed {
                return None;
            }
            self.ready.wait(&mut st);
        }
    }

    /// Removes the head: the task and the queue length after the removal.
    pub fn poll_head(&self) -> Option<(RequestTask, usize)> {
        let mut st = self.lock();
        let t = st.tasks.pop_front()?;
        Some((t, st.tasks.len()))
    }

    /// Removes the head if it has waited at least `limit` at `now`.
    pub fn poll_head_older_than(
        &self,
        limit: Duration,
        now: Instant,
    ) -> Option<(RequestTask, usize)> {
        let mut st = self.lock();
        let head = st.tasks.front()?;
        if now.saturating_duration_since(head.created) < limit {
            return None;
        }
        let t = st.tasks.pop_front()?;
        Some((t, st.tasks.len()))
    }

    /// How long the head has waited (`…HeadWaitTimeMills`); 0 when empty.
    pub fn head_wait(&self, now: Instant) -> Duration {
        self.lock()
            .tasks
            .front()
            .map(|t| now.saturating_duration_since(t.created))
            .unwrap_or_default()
    }

    /// Refuses new tasks and wakes idle workers so they can drain and exit.
    pub fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }
}

/// The worker threads of one executor; closes its queue and joins them on shutdown.
pub struct Workers {
    queue: Arc<TaskQueue>,
    threads: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Starts `threads` workers named `<prefix>1`, `<prefix>2`, … running `handler` per task.
    pub fn start(
        queue: Arc<TaskQueue>,
        threads: usize,
        handler: Arc<dyn Fn(RequestTask) + Send + Sync>,
    ) -> io::Result<Self> {
        let mut workers = Workers {
            queue: queue.clone(),
            threads: Vec::with_capacity(threads),
        };
        for i in 1..=threads {
            let q = queue.clone();
            let h = handler.clone();
            let name = format!("{}{}", queue.kind().thread_prefix(), i);
            let spawned = std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || {
                    while let Some(task) = q.take() {
                        // One faulty request must not take a pool thread down with it.
                        if catch_unwind(AssertUnwindSafe(|| h(task))).is_err() {
                            eprintln!("{name}: a request handler panicked; the thread continues");
                        }
                    }
                });
            match spawned {
                Ok(handle) => workers.threads.push(handle),
                Err(e) => {
                    workers.shutdown();
                    return Err(e);
                }
            }
        }
        Ok(workers)
    }

    /// Closes the queue, lets the workers finish what is queued, and joins them.
    pub fn shutdown(&mut self) {
        self.queue.close();
        for t in self.threads.drain(..) {
            if t.join().is_err() {
                eprintln!("{:?} worker ended by a panic", self.queue.kind());
            }
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.shutdown();
    }
}
