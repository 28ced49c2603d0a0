//! CommitLog append throughput through `MessageStore::put_message`: spin vs reentrant put lock at
//! 1, 2, 4 and 8 appending threads (small messages, 4 MiB mapped files, ASYNC_FLUSH).
//!
//! Each sample opens a fresh store in a temp dir (outside the timed region) so disk use stays
//! bounded; one criterion "element" is one appended message.
//!
//! `put_thread_cpu` is the send path's own cost: the CPU time the one appending thread spends per
//! `put_message` (its thread clock, so preemption on a busy machine does not count). It is what
//! moving the consume-queue dispatch to ReputMessageService took off the send thread.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use broker_under_test::store::{MessageStore, PutLockKind, PutMessage, StoreConfig};
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const BODY_LEN: usize = 128;

fn message(queue_id: i32, body: &Bytes) -> PutMessage {
    PutMessage {
        topic: "BenchTopic".into(),
        queue_id,
        flag: 0,
        body: body.clone(),
        properties: "WAIT\u{1}true\u{2}".into(),
        sys_flag: 0,
        born_timestamp: 0,
        born_host: "127.0.0.1:40000".parse().expect("literal address"),
        reconsume_times: 0,
        wait_store_ok: true,
    }
}

/// Appends `total` messages from `threads` threads and returns the time the appends took.
fn run(lock: PutLockKind, threads: usize, total: u64) -> Duration {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = MessageStore::open(StoreConfig {
        store_path_root_dir: dir.path().to_path_buf(),
        mapped_file_size_commit_log: 4 * 1024 * 1024,
        put_lock: lock,
        ..StoreConfig::default()
    })
    .expect("store opens");
    let body = Bytes::from(vec![b'x'; BODY_LEN]);
    let start = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let store = Arc::clone(&store);
            let start = Arc::clone(&start);
            let body = body.clone();
            let n = total / threads as u64 + u64::from((t as u64) < total % threads as u64);
            std::thread::spawn(move || {
                start.wait();
                for _ in 0..n {
                    store.put_message(message(t as i32 % 4, &body), Box::new(|_| {}));
                }
            })
        })
        .collect();
    start.wait();
    let begin = Instant::now();
    for h in handles {
        h.join().expect("appender thread");
    }
    let elapsed = begin.elapsed();
    store.shutdown();
    elapsed
}

fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID needs nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "no thread CPU clock");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Appends `total` messages from this thread and returns the CPU time this thread spent on them.
fn put_thread_cpu(total: u64) -> Duration {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = MessageStore::open(StoreConfig {
        store_path_root_dir: dir.path().to_path_buf(),
        mapped_file_size_commit_log: 4 * 1024 * 1024,
        ..StoreConfig::default()
    })
    .expect("store opens");
    let body = Bytes::from(vec![b'x'; BODY_LEN]);
    // The first put maps the first CommitLog file and pre-creates the next: a fixed cost that
    // would swamp the per-put figure at the few iterations Criterion's warm-up starts with.
    store.put_message(message(0, &body), Box::new(|_| {}));
    let begin = thread_cpu_time();
    for i in 0..total {
        store.put_message(message(i as i32 % 4, &body), Box::new(|_| {}));
    }
    let spent = thread_cpu_time() - begin;
    store.shutdown();
    spent
}

fn commitlog_append(c: &mut Criterion) {
    let mut group = c.benchmark_group("put_thread_cpu");
    group.sample_size(20);
    group.throughput(Throughput::Elements(1));
    group.bench_function("reentrant/1", |b| b.iter_custom(put_thread_cpu));
    group.finish();

    let mut group = c.benchmark_group("commitlog_append");
    group.sample_size(20);
    group.throughput(Throughput::Elements(1));
    for lock in [PutLockKind::Spin, PutLockKind::Reentrant] {
        for threads in [1usize, 2, 4, 8] {
            let name = match lock {
                PutLockKind::Spin => "spin",
                PutLockKind::Reentrant => "reentrant",
            };
            group.bench_with_input(BenchmarkId::new(name, threads), &threads, |b, &threads| {
                b.iter_custom(|iters| run(lock, threads, iters));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, commitlog_append);
criterion_main!(benches);
