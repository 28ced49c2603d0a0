//! Background services (RocketMQ ServiceThreads): FlushRealTimeService (§9.2), GroupCommitService
//! and FlushDiskWatcher (§9.3), CommitRealTimeService (§9.4) and StoreStatsService (§10).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::{now_millis, FlushDiskType, PutMessageStatus, StoreInner};

/// `ServiceThread.waitForRunning` / `wakeup` / `shutdown` for OS threads.
pub(crate) struct Waiter {
    state: Mutex<WaitState>,
    cv: Condvar,
}

#[derive(Default)]
struct WaitState {
    notified: bool,
    stopped: bool,
}

impl Waiter {
    pub(crate) fn new() -> Self {
        Waiter {
            state: Mutex::new(WaitState::default()),
            cv: Condvar::new(),
        }
    }

    pub(crate) fn wakeup(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !s.notified {
            s.notified = true;
            self.cv.notify_all();
        }
    }

    pub(crate) fn stop(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.stopped = true;
        self.cv.notify_all();
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).stopped
    }

    /// Waits up to `timeout`. When `wakeable`, a pending or new `wakeup` ends the wait early
    /// (and is consumed); otherwise only `stop` does, like a plain `Thread.sleep`.
    pub(crate) fn wait(&self, timeout: Duration, wakeable: bool) {
        let deadline = Instant::now() + timeout;
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if s.stopped {
                return;
            }
            if wakeable && s.notified {
                s.notified = false;
                return;
            }
            let now = Instant::now();
            if now >= deadline {
                if wakeable {
                    s.notified = false;
                }
                return;
            }
            s = self
                .cv
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

type FlushDone = Box<dyn FnOnce(PutMessageStatus) + Send + 'static>;

/// A GroupCommitRequest: completes exactly once, from group commit or from the watcher.
pub(crate) struct FlushRequest {
    next_offset: i64,
    deadline: Instant,
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

    fn complete(&self, status: PutMessageStatus) {
        let f = self.done.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(f) = f {
            f(status);
        }
    }

    fn is_done(&self) -> bool {
        self.done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }
}

/// The GroupCommitService's write list and the FlushDiskWatcher's queue.
pub(crate) struct SyncFlushQueues {
    requests: Mutex<Vec<Arc<FlushRequest>>>,
    watched: Mutex<VecDeque<Arc<FlushRequest>>>,
    watcher_cv: Condvar,
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
        self.watched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(Arc::clone(&req));
        self.watcher_cv.notify_all();
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(req);
    }
}

fn flush_stall(inner: &StoreInner) -> Duration {
    Duration::from_millis(inner.config.injection.flush_stall_millis)
}

fn flush_logged(inner: &StoreInner, least_pages: usize) {
    let begin = Instant::now();
    if let Err(e) = inner.commit_log.flush(least_pages, flush_stall(inner)) {
        eprintln!("flush failed: {e}");
    }
    let ms = begin.elapsed().as_millis();
    if ms > 500 {
        eprintln!("Flush data to disk costs {ms} ms");
    }
}

/// FlushRealTimeService (ASYNC_FLUSH).
pub(crate) fn flush_real_time_service(inner: Arc<StoreInner>) {
    let cfg = &inner.config;
    let mut last_thorough = now_millis();
    while !inner.flush_waiter.is_stopped() {
        let mut least = cfg.flush_commit_log_least_pages;
        let now = now_millis();
        if now >= last_thorough + cfg.flush_commit_log_thorough_interval as i64 {
            last_thorough = now;
            least = 0;
        }
        // flushCommitLogTimed: a plain sleep that put-path wake-ups cannot cut short.
        inner.flush_waiter.wait(
            Duration::from_millis(cfg.flush_interval_commit_log),
            !cfg.flush_commit_log_timed,
        );
        flush_logged(&inner, least);
    }
    for _ in 0..10 {
        match inner.commit_log.flush(0, flush_stall(&inner)) {
            Ok(true) => continue,
            Ok(false) => break,
            Err(e) => {
                eprintln!("flush on shutdown failed: {e}");
                break;
            }
        }
    }
}

/// GroupCommitService (SYNC_FLUSH): one force satisfies every request up to the flushed offset.
pub(crate) fn group_commit_service(inner: Arc<StoreInner>) {
    loop {
        let stopped = inner.flush_waiter.is_stopped();
        if !stopped {
            inner.flush_waiter.wait(Duration::from_millis(10), true);
        }
        let reqs = std::mem::take(
            &mut *inner
                .sync_flush
                .requests
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        if reqs.is_empty() {
            // Puts with WAIT=false only wake the service; it flushes whatever is there.
            flush_logged(&inner, 0);
        }
        for req in reqs {
            let mut ok = inner.commit_log.flushed_where() >= req.next_offset;
            // 5.2.0+: up to 1000 attempts with 1 ms sleeps, so a commit delayed by the pool can
            // catch up (apache/rocketmq #7523).
            let mut attempts = 0;
            while !ok && attempts < 1000 && !req.is_done() {
                flush_logged(&inner, 0);
                ok = inner.commit_log.flushed_where() >= req.next_offset;
                if !ok {
                    std::thread::sleep(Duration::from_millis(1));
                }
                attempts += 1;
            }
            req.complete(if ok {
                PutMessageStatus::PutOk
            } else {
                PutMessageStatus::FlushDiskTimeout
            });
        }
        if stopped {
            break;
        }
    }
}

/// FlushDiskWatcher: completes requests still pending at their deadline with FLUSH_DISK_TIMEOUT.
pub(crate) fn flush_disk_watcher(inner: Arc<StoreInner>) {
    let q = &inner.sync_flush;
    let mut watched = q.watched.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        while watched.front().is_some_and(|r| r.is_done()) {
            watched.pop_front();
        }
        let stopped = inner.watcher_stop.load(Ordering::Acquire);
        match watched.front().cloned() {
            Some(req) => {
                let now = Instant::now();
                if stopped || now >= req.deadline {
                    watched.pop_front();
                    drop(watched);
                    req.complete(PutMessageStatus::FlushDiskTimeout);
                    watched = q.watched.lock().unwrap_or_else(|e| e.into_inner());
                } else {
                    let wait = (req.deadline - now).min(Duration::from_millis(100));
                    watched = q
                        .watcher_cv
                        .wait_timeout(watched, wait)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
            None if stopped => return,
            None => {
                watched = q
                    .watcher_cv
                    .wait_timeout(watched, Duration::from_millis(100))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
    }
}

pub(crate) fn stop_watcher(inner: &StoreInner) {
    inner.watcher_stop.store(true, Ordering::Release);
    let _g = inner
        .sync_flush
        .watched
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    inner.sync_flush.watcher_cv.notify_all();
}

/// Wakes whichever service forces the CommitLog (`flushManager.wakeUpFlush`).
pub(crate) fn wake_up_flush(inner: &StoreInner) {
    inner.flush_waiter.wakeup();
}

/// CommitRealTimeService (transient store pool on).
pub(crate) fn commit_real_time_service(inner: Arc<StoreInner>) {
    let cfg = &inner.config;
    let mut last_commit = now_millis();
    while !inner.commit_waiter.is_stopped() {
        let begin = now_millis();
        let mut least = cfg.commit_commit_log_least_pages;
        if begin >= last_commit + cfg.commit_commit_log_thorough_interval as i64 {
            last_commit = begin;
            least = 0;
        }
        let committed = inner.commit_log.commit(least);
        let end = now_millis();
        if committed {
            last_commit = end;
            // Readers see committed data only: dispatch it now (ReputMessageService's job).
            if let Err(e) = inner.commit_log.dispatch() {
                eprintln!("dispatch failed: {e}");
            }
            wake_up_flush(&inner);
        }
        if end - begin > 500 {
            eprintln!("Commit data to file costs {} ms", end - begin);
        }
        inner
            .commit_waiter
            .wait(Duration::from_millis(cfg.commit_interval_commit_log), true);
    }
    for _ in 0..10 {
        if !inner.commit_log.commit(0) {
            break;
        }
    }
    if let Err(e) = inner.commit_log.dispatch() {
        eprintln!("dispatch failed: {e}");
    }
    wake_up_flush(&inner);
}

/// StoreStatsService: one sample per second.
pub(crate) fn store_stats_service(inner: Arc<StoreInner>) {
    while !inner.stats_waiter.is_stopped() {
        inner.stats.sample();
        inner.stats_waiter.wait(Duration::from_secs(1), false);
    }
}

pub(crate) fn flush_service_name(kind: FlushDiskType) -> &'static str {
    match kind {
        FlushDiskType::AsyncFlush => "FlushRealTimeService",
        FlushDiskType::SyncFlush => "GroupCommitService",
    }
}
