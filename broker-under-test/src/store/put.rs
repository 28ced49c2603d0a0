//! The put path (CommitLog.asyncPutMessage and DefaultMessageStore.asyncPutMessage).
//!
//! A put: status checks (shut down, page cache busy, §7.2) → size checks and encoding (outside the
//! lock from 4.9.1, inside for 4.3 via `encode_inside_lock`) → the put lock (`beginTimeInLock`
//! stamped) → append to the last mapped file, rolling with a blank marker → lock released → the
//! commit service woken (pool on) → the answer: at once (ASYNC_FLUSH, WAIT=false, failures) or
//! from group commit / the flush-disk watcher (SYNC_FLUSH). The consume-queue entry is not built
//! here: ReputMessageService (`reput.rs`) reads the CommitLog behind the put path, as in RocketMQ.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use remoting::message::offset_msg_id;

use super::commitlog::{AppendState, Appended};
use super::config::{FlushDiskType, PutCheckOrder, StoreConfig, StoreRole};
use super::error::AppendError;
use super::flush_request::FlushRequest;
use super::inner::StoreInner;
use super::lock::PutLockGuard;
use super::record::{encode, EncodedMessage};
use super::replica::{combine, join, FlushThenReplica, StatusDone};
use super::types::{
    AppendResult, PutCallback, PutMessage, PutMessageStatus, PutResult, MAX_PROPERTIES_LEN,
    RECORD_SLACK,
};

/// A callback invocation deferred until the put left the in-flight count.
type Deferred = Box<dyn FnOnce() + Send + 'static>;

/// Decrements the in-flight count however a put ends.
struct InFlight<'a>(&'a AtomicUsize);
impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs one put (a single message or a batch) on the caller's thread; `done` runs exactly once.
pub(super) fn put(inner: &Arc<StoreInner>, msgs: Vec<PutMessage>, done: PutCallback) {
    let immediate = {
        inner.in_flight.fetch_add(1, Ordering::AcqRel);
        let _in_flight = InFlight(&inner.in_flight);
        put_inner(inner, msgs, done)
    };
    // Callbacks run after the put left the in-flight count, so a callback may even call
    // `shutdown` without waiting for itself.
    if let Some(run) = immediate {
        run();
    }
}

/// Returns the callback invocation when the answer is immediate; None when a flush
/// service will answer.
fn put_inner(
    inner: &Arc<StoreInner>,
    msgs: Vec<PutMessage>,
    done: PutCallback,
) -> Option<Deferred> {
    let begin = Instant::now();
    let stats_inner = Arc::clone(inner);
    // `counted`: the put reached the CommitLog. RocketMQ measures the whole put time and counts
    // failures only from there (the store-status and topic checks return before).
    let finish = move |result: PutResult, counted: bool| {
        if counted {
            let ms = begin.elapsed().as_millis() as u64;
            if ms > 500 {
                eprintln!("putMessage not in lock elapsed time(ms)={ms}");
            }
            stats_inner.stats.record_entire_time(ms);
            if result.append.is_none() {
                stats_inner
                    .stats
                    .put_failed_times
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
        done(result)
    };
    let failed = |status| PutResult {
        status,
        append: None,
    };
    // §7.2: store status first.
    if !inner.running.load(Ordering::Acquire) {
        return defer(finish, failed(PutMessageStatus::ServiceNotAvailable), false);
    }
    // A SLAVE's CommitLog is written by replication only: any put (a send, a send-back, a
    // schedule re-put) would make it differ from the master's (StoreRole::Slave cites the
    // sources; the role check comes right after the shut-down check in all three releases).
    if inner.config.role == StoreRole::Slave {
        inner
            .retention
            .flags
            .refuse_on_slave(inner.retention.config.profile);
        return defer(finish, failed(PutMessageStatus::ServiceNotAvailable), false);
    }
    // RunningFlags.isWriteable: DISK_FULL (retention) refuses before any append.
    if !inner
        .retention
        .flags
        .check_before_put(inner.retention.config.profile)
    {
        return defer(finish, failed(PutMessageStatus::ServiceNotAvailable), false);
    }
    // The busy check comes before the topic and properties checks on 4.9 and after them on
    // 4.3 and 5.3 (PutCheckOrder cites the sources): an illegal topic sent while the page
    // cache is busy is answered OS_PAGECACHE_BUSY on 4.9 and MESSAGE_ILLEGAL on the others.
    let busy_first = inner.config.check_order == PutCheckOrder::BusyFirst;
    if busy_first && inner.is_os_page_cache_busy() {
        return defer(finish, failed(PutMessageStatus::OsPageCacheBusy), false);
    }
    if let Some(status) = msgs.iter().find_map(|m| check_topic(m).err()) {
        return defer(finish, failed(status), false);
    }
    // 4.3: DefaultMessageStore.putMessage refuses long properties up front; the record
    // length is checked inside the lock.
    if inner.config.encode_inside_lock
        && msgs.iter().any(|m| m.properties.len() > MAX_PROPERTIES_LEN)
    {
        return defer(
            finish,
            failed(PutMessageStatus::PropertiesSizeExceeded),
            false,
        );
    }
    if !busy_first && inner.is_os_page_cache_busy() {
        return defer(finish, failed(PutMessageStatus::OsPageCacheBusy), false);
    }
    // The 4.9.1+ encoder runs inside CommitLog.asyncPutMessage: counted as a failed put (4.3
    // encodes inside the lock, `append_in_lock`).
    if !inner.config.encode_inside_lock {
        if let Some(status) = msgs
            .iter()
            .find_map(|m| check_sizes(&inner.config, m).err())
        {
            return defer(finish, failed(status), true);
        }
    }
    // 5.x: the topic-queue lock first, held through encoding and the append (CommitLog
    // .asyncPutMessage); a batch is one topic-queue.
    let queue_guard = inner
        .topic_queue_lock
        .as_ref()
        .map(|l| l.lock(&msgs[0].topic, msgs[0].queue_id));
    let encode_all = |store_timestamp: i64| -> Vec<EncodedMessage> {
        msgs.iter()
            .map(|m| encode(&inner.config, m, store_timestamp))
            .collect()
    };
    let mut encoded = if inner.config.encode_inside_lock {
        Vec::new()
    } else {
        encode_all(0)
    };
    if !inner.config.encode_inside_lock {
        if let Err(status) = check_encoded(&inner.config, &encoded) {
            return defer(finish, failed(status), true);
        }
    }
    let wait_store_ok = msgs[0].wait_store_ok;

    let mut guard = inner.commit_log.lock.lock();
    let lock_begin = Instant::now();
    let appended = append_in_lock(inner, &mut guard, &mut encoded, &encode_all, lock_begin);
    drop(guard);
    drop(queue_guard);
    let in_lock = lock_begin.elapsed();
    let in_lock_micros = in_lock.as_micros() as u64;
    inner.stats.record_in_lock(in_lock_micros);
    if in_lock.as_millis() > 500 {
        eprintln!(
            "[NOTIFYME]putMessage in lock cost time(ms)={}, bodyLength={} AppendMessageResult={:?}",
            in_lock.as_millis(),
            msgs.iter().map(|m| m.body.len()).sum::<usize>(),
            appended.as_ref().map(|a| a.wrote_bytes).ok()
        );
    }
    let appended = match appended {
        Ok(a) => a,
        Err(status) => return defer(finish, failed(status), true),
    };
    inner
        .stats
        .put_times_total
        .fetch_add(appended.offsets.len() as u64, Ordering::Relaxed);
    inner
        .stats
        .put_size_total
        .fetch_add(appended.wrote_bytes as u64, Ordering::Relaxed);
    let store_host = inner.config.store_host;
    let result = AppendResult {
        wrote_offset: appended.wrote_offset,
        wrote_bytes: appended.wrote_bytes,
        msg_ids: appended
            .offsets
            .iter()
            .map(|&o| offset_msg_id(store_host, o))
            .collect(),
        queue_offset: appended.first_queue_offset,
        msg_num: appended.offsets.len(),
        store_timestamp: appended.store_timestamp,
        in_lock_micros,
    };
    let pool_on = inner.commit_log.pool().is_some();
    if pool_on {
        inner.commit_waiter.wakeup();
    }
    let next_offset = result.wrote_offset + result.wrote_bytes as i64;
    // SYNC_MASTER: the answer also waits for the slave (`replica.rs`, reference §3.2).
    let replica = if wait_store_ok {
        inner.replica.get().cloned()
    } else {
        None
    };
    let answer: StatusDone = Box::new(move |status| {
        finish(
            PutResult {
                status,
                append: Some(result),
            },
            true,
        )
    });
    match inner.config.flush_disk_type {
        FlushDiskType::SyncFlush if wait_store_ok => {
            let flush_done: StatusDone = match replica {
                None => answer,
                Some(gate) => match gate.ordering() {
                    FlushThenReplica::Sequential => Box::new(move |flushed| {
                        let g = Arc::clone(&gate);
                        g.await_replica(
                            next_offset,
                            Box::new(move |replicated| answer(combine(flushed, replicated))),
                        )
                    }),
                    FlushThenReplica::Parallel => {
                        let (flush_half, replica_half) = join(answer);
                        gate.await_replica(next_offset, replica_half);
                        flush_half
                    }
                },
            };
            let req = FlushRequest::new(
                next_offset,
                Duration::from_millis(inner.config.sync_flush_timeout),
                flush_done,
            );
            inner.sync_flush.submit(req);
            inner.flush_waiter.wakeup();
            return None;
        }
        // WAIT=false under SYNC_FLUSH only wakes the group-commit service.
        FlushDiskType::SyncFlush => inner.flush_waiter.wakeup(),
        // 4.x wakes the flush service on every put; it only matters with a wake-able wait.
        FlushDiskType::AsyncFlush => {
            if !pool_on && !inner.config.flush_commit_log_timed {
                inner.flush_waiter.wakeup();
            }
        }
    }
    match replica {
        Some(gate) => {
            gate.await_replica(next_offset, answer);
            None
        }
        None => Some(Box::new(move || answer(PutMessageStatus::PutOk))),
    }
}

/// The part of a put that runs under the put lock.
fn append_in_lock(
    inner: &StoreInner,
    guard: &mut PutLockGuard<'_, AppendState>,
    encoded: &mut Vec<EncodedMessage>,
    encode_all: &dyn Fn(i64) -> Vec<EncodedMessage>,
    lock_begin: Instant,
) -> Result<Appended, PutMessageStatus> {
    let inj = inner.config.injection;
    if inj.put_stall_millis > 0 {
        let now = guard.begin_millis();
        if now - guard.last_stall_millis >= inj.put_stall_interval_millis as i64 {
            guard.last_stall_millis = now;
            std::thread::sleep(Duration::from_millis(inj.put_stall_millis));
        }
    }
    if inner.config.encode_inside_lock {
        // 4.3 – 4.9.0: serialization and the size check happen inside the lock (§7.4).
        *encoded = encode_all(guard.begin_millis());
        check_encoded(&inner.config, encoded)?;
    }
    let result = inner.commit_log.append_locked(guard, encoded);
    if !inj.append_spin.is_zero() {
        burn_thread_cpu(inj.append_spin);
    }
    if inj.append_delay_micros > 0 {
        let min = Duration::from_micros(inj.append_delay_micros);
        let spent = lock_begin.elapsed();
        if spent < min {
            std::thread::sleep(min - spent);
        }
    }
    result.map_err(|e| match e {
        AppendError::CreateMappedFileFailed => PutMessageStatus::CreateMappedFileFailed,
    })
}

/// Below this a burn spins on the wall clock alone: reading the thread clock is a system call
/// (0.55 µs on the 2-core CI machine, two per burn), which would turn a 300 ns regression into
/// a 1.4 µs one and leave no way to inject a small one. A spin this short is seldom preempted,
/// and a preempted one burns less CPU than asked, never more.
const THREAD_CLOCK_FROM: Duration = Duration::from_micros(50);

/// Spins until this thread has used `cpu` more CPU time. From [`THREAD_CLOCK_FROM`] up it is
/// counted in thread CPU time, not wall time, so a preempted spin on a loaded machine still
/// costs exactly `cpu` of work: the injected regression is the same size on a quiet and on a
/// busy machine. The loop spins on the cheap wall clock and reads the thread clock only to
/// check the result.
fn burn_thread_cpu(cpu: Duration) {
    if cpu < THREAD_CLOCK_FROM {
        spin_for(cpu);
        return;
    }
    let start = thread_cpu_time();
    let mut left = cpu;
    loop {
        spin_for(left);
        // Without a thread clock the wall-clock spin is all there is.
        let Some(used) = start
            .zip(thread_cpu_time())
            .map(|(s, n)| n.saturating_sub(s))
        else {
            return;
        };
        if used >= cpu {
            return;
        }
        // Preempted during the spin: burn what is still missing.
        left = cpu - used;
    }
}

/// Busy-waits `wall` of wall-clock time.
fn spin_for(wall: Duration) {
    let begin = Instant::now();
    while begin.elapsed() < wall {
        std::hint::spin_loop();
    }
}

fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID needs nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// The topic checks of §7.2 (the topic is also a consume-queue directory name).
fn check_topic(m: &PutMessage) -> Result<(), PutMessageStatus> {
    let t = m.topic.as_bytes();
    // 5.3: > 127 bytes only for retry topics, never > 255.
    let too_long = t.len() > 255 || (t.len() > 127 && !m.topic.starts_with("%RETRY%"));
    if t.is_empty()
        || too_long
        || m.topic == "."
        || m.topic == ".."
        || t.iter().any(|&b| b == b'/' || b == b'\\' || b == 0)
    {
        return Err(PutMessageStatus::MessageIllegal);
    }
    Ok(())
}

/// The encoder's body and properties limits.
fn check_sizes(config: &StoreConfig, m: &PutMessage) -> Result<(), PutMessageStatus> {
    if m.properties.len() > MAX_PROPERTIES_LEN {
        return Err(PutMessageStatus::PropertiesSizeExceeded);
    }
    if m.body.len() > config.max_message_size {
        return Err(PutMessageStatus::MessageIllegal);
    }
    Ok(())
}

fn defer<F>(finish: F, result: PutResult, counted: bool) -> Option<Deferred>
where
    F: FnOnce(PutResult, bool) + Send + 'static,
{
    Some(Box::new(move || finish(result, counted)))
}

/// Record-length limits: `maxMessageSize` + 64 KiB per batch for the 4.9.1+ encoder, plain
/// `maxMessageSize` for the 4.3 – 4.9.0 in-lock append callback, and whatever fits in one file.
fn check_encoded(config: &StoreConfig, encoded: &[EncodedMessage]) -> Result<(), PutMessageStatus> {
    let total: usize = encoded.iter().map(|e| e.bytes.len()).sum();
    let slack = if config.encode_inside_lock {
        0
    } else {
        RECORD_SLACK
    };
    if total > config.max_message_size + slack
        || total + remoting::message::BLANK_MARKER_LEN > config.mapped_file_size_commit_log
    {
        return Err(PutMessageStatus::MessageIllegal);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long burn is counted in this thread's CPU time, so it is at least what was asked for
    /// however the thread was scheduled; a short one spins on the wall clock (only the lower
    /// bounds are properties; how much more either takes depends on the machine).
    #[test]
    fn burn_costs_at_least_what_was_asked() {
        let asked = Duration::from_nanos(300);
        let begin = Instant::now();
        burn_thread_cpu(asked);
        assert!(begin.elapsed() >= asked);
        let Some(start) = thread_cpu_time() else {
            return; // no thread clock on this platform: the wall-clock spin is all there is
        };
        let asked = Duration::from_micros(2_000);
        burn_thread_cpu(asked);
        let used = thread_cpu_time().unwrap() - start;
        assert!(used >= asked, "asked {asked:?}, burned {used:?}");
    }
}
