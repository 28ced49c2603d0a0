//! Background services (RocketMQ ServiceThreads): FlushRealTimeService (§9.2), GroupCommitService
//! and FlushDiskWatcher (§9.3), CommitRealTimeService (§9.4), ReputMessageService's loop (its
//! round is in `reput.rs`) and StoreStatsService (§10).

use std::io;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::config::FlushDiskType;
use super::inner::StoreInner;
use super::types::PutMessageStatus;
use crate::clock::epoch_millis;
use crate::periodic::Stoppable;

/// ReputMessageService's `Thread.sleep(1)` before every round.
const REPUT_REST: Duration = Duration::from_millis(1);

/// ReputMessageService's thread name (`getServiceName()`).
pub(crate) const REPUT_THREAD_NAME: &str = "ReputMessageService";

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
    let mut last_thorough = epoch_millis();
    while !inner.flush_waiter.is_stopped() {
        let mut least = cfg.flush_commit_log_least_pages;
        let now = epoch_millis();
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
        let reqs = std::mem::take(&mut *inner.sync_flush.requests.lock());
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
    let mut watched = q.watched.lock();
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
                    watched = q.watched.lock();
                } else {
                    // Timed out or woken, the loop looks at the head again.
                    let wait = (req.deadline - now).min(Duration::from_millis(100));
                    q.watcher_cv.wait_for(&mut watched, wait);
                }
            }
            None if stopped => return,
            None => {
                q.watcher_cv
                    .wait_for(&mut watched, Duration::from_millis(100));
            }
        }
    }
}

pub(crate) fn stop_watcher(inner: &StoreInner) {
    inner.watcher_stop.store(true, Ordering::Release);
    // Notified under the queue's mutex, so the watcher is either before its stop check or
    // already waiting: it cannot miss the notify.
    let _g = inner.sync_flush.watched.lock();
    inner.sync_flush.watcher_cv.notify_all();
}

/// Wakes whichever service forces the CommitLog (`flushManager.wakeUpFlush`).
pub(crate) fn wake_up_flush(inner: &StoreInner) {
    inner.flush_waiter.wakeup();
}

/// CommitRealTimeService (transient store pool on).
pub(crate) fn commit_real_time_service(inner: Arc<StoreInner>) {
    no_wakeup_preemption();
    let cfg = &inner.config;
    let mut last_commit = epoch_millis();
    while !inner.commit_waiter.is_stopped() {
        let begin = epoch_millis();
        let mut least = cfg.commit_commit_log_least_pages;
        if begin >= last_commit + cfg.commit_commit_log_thorough_interval as i64 {
            last_commit = begin;
            least = 0;
        }
        let committed = inner.commit_log.commit(least);
        // AllocateMappedFileService's part: the file after the active one, asked for by the
        // last roll, now that a full file's buffer has had this round to come back.
        inner.commit_log.pre_create_wanted();
        let end = epoch_millis();
        if committed {
            last_commit = end;
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
    wake_up_flush(&inner);
}

/// Starts ReputMessageService; its [`Stoppable`] stops it (last round included) and joins it.
pub(crate) fn start_reput(inner: &Arc<StoreInner>) -> io::Result<Stoppable> {
    let inner = Arc::clone(inner);
    Stoppable::spawn(REPUT_THREAD_NAME, move |stop| reput_loop(&inner, &stop))
}

fn reput_loop(inner: &StoreInner, stop: &Receiver<()>) {
    let stall = Duration::from_millis(inner.config.injection.reput_stall_millis);
    loop {
        if stopped_during(stop, REPUT_REST) {
            break;
        }
        // Ours: a dispatch that falls behind by `injectReputStallMillis` whenever there is work.
        if !stall.is_zero()
            && inner.reput.available(&inner.commit_log)
            && stopped_during(stop, stall)
        {
            break;
        }
        reput_round(inner);
    }
    reput_round(inner);
}

/// Waits `d`; true when the owner said stop (or went away) meanwhile.
fn stopped_during(stop: &Receiver<()>, d: Duration) -> bool {
    !matches!(stop.recv_timeout(d), Err(RecvTimeoutError::Timeout))
}

fn reput_round(inner: &StoreInner) {
    match inner.reput.do_reput(&inner.commit_log) {
        // A slave's replicated messages count as puts (RocketMQ's slave dispatch).
        Ok((messages, bytes)) if inner.config.count_replicated_puts && messages > 0 => {
            let s = &inner.stats;
            s.put_times_total.fetch_add(messages, Ordering::Relaxed);
            s.put_size_total.fetch_add(bytes, Ordering::Relaxed);
        }
        Ok(_) => {}
        // RocketMQ logs and goes on with the next round.
        Err(e) => eprintln!("{REPUT_THREAD_NAME} service has exception. {e}"),
    }
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

/// Puts the calling thread (CommitRealTimeService) under SCHED_BATCH, which takes away its
/// preemption of the running thread when it is woken.
///
/// Why: every put wakes the commit thread (RocketMQ's `wakeCommitWhenPutMessage`), and on the
/// broker's one core the kernel let it preempt the send thread at once, to find fewer than
/// `commitCommitLogLeastPages` dirty and sleep again. Measured with /proc's context-switch counts
/// over 5-8 s of row 4a's closed loop (7 December): Apache 5.3.3's commit thread woke 0.14 times
/// a message (3,990/s at 28.7k sends/s), its send thread was preempted 0.05 times a message; the
/// model's woke 0.70 times and preempted the send thread 1.0 times a message, which cost it 38%
/// of its throughput against Apache's 0-10%. On a JVM the woken commit thread is one of a dozen
/// runnable threads and waits its turn while more puts land; SCHED_BATCH gives ours the same
/// wait (0.22 wake-ups a message). It changes when the thread runs, never what it does.
fn no_wakeup_preemption() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler on the calling thread (pid 0) with a valid, initialised param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
    if rc != 0 {
        // Not fatal: the commit thread then runs as any other, as it did before.
        eprintln!(
            "CommitRealTimeService: SCHED_BATCH refused ({}); it keeps the default policy",
            std::io::Error::last_os_error()
        );
    }
}
