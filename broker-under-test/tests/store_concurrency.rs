//! Readers racing writers: every record a reader gets is whole (CRC verified) and in order, with
//! and without the transient store pool, with both locks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use broker_under_test::store::{
    FlushDiskType, MessageStore, PutLockKind, PutMessage, PutMessageStatus, StoreConfig,
};
use bytes::Bytes;
use remoting::message::decode_records;

const WRITERS: i32 = 3;
const PER_WRITER: usize = 400;

fn body(queue: i32, i: usize) -> Vec<u8> {
    let len = 50 + (i * 7) % 300;
    (0..len)
        .map(|j| (queue as usize * 13 + i + j) as u8)
        .collect()
}

fn race(lock: PutLockKind, pool: bool, flush: FlushDiskType) {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(StoreConfig {
        store_path_root_dir: dir.path().to_path_buf(),
        mapped_file_size_commit_log: 32 * 1024,
        put_lock: lock,
        flush_disk_type: flush,
        transient_store_pool_in_effect: pool,
        transient_store_pool_size: 4,
        commit_interval_commit_log: 5,
        commit_commit_log_thorough_interval: 10,
        flush_interval_commit_log: 10,
        ..StoreConfig::default()
    })
    .unwrap();
    let writing = Arc::new(AtomicBool::new(true));
    let readers: Vec<_> = (0..WRITERS)
        .map(|q| {
            let store = Arc::clone(&store);
            let writing = Arc::clone(&writing);
            std::thread::spawn(move || {
                let mut next = 0i64;
                let deadline = Instant::now() + Duration::from_secs(60);
                while next < PER_WRITER as i64 {
                    assert!(
                        Instant::now() < deadline,
                        "reader of queue {q} stuck at {next}"
                    );
                    let got = store.get_message("Race", q, next, 16, 64 * 1024);
                    let recs = decode_records(&got.body).expect("whole records only");
                    assert_eq!(recs.len(), got.msg_count);
                    for r in recs {
                        assert_eq!(r.queue_offset, next);
                        assert_eq!(r.body, body(q, next as usize));
                        next += 1;
                    }
                    if got.msg_count == 0 {
                        if !writing.load(Ordering::Acquire) {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    let writers: Vec<_> = (0..WRITERS)
        .map(|q| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let (tx, rx) = mpsc::channel();
                for i in 0..PER_WRITER {
                    let tx = tx.clone();
                    store.put_message(
                        PutMessage {
                            topic: "Race".into(),
                            queue_id: q,
                            flag: 0,
                            body: Bytes::from(body(q, i)),
                            properties: String::new(),
                            sys_flag: 0,
                            born_timestamp: 0,
                            born_host: "127.0.0.1:1".parse().unwrap(),
                            reconsume_times: 0,
                            wait_store_ok: i % 3 == 0,
                        },
                        Box::new(move |r| {
                            let _ = tx.send(r.status);
                        }),
                    );
                }
                for _ in 0..PER_WRITER {
                    let s = rx.recv_timeout(Duration::from_secs(30)).unwrap();
                    assert_eq!(s, PutMessageStatus::PutOk);
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    writing.store(false, Ordering::Release);
    for r in readers {
        r.join().unwrap();
    }
}

#[test]
fn readers_race_writers_without_pool() {
    for lock in [PutLockKind::Spin, PutLockKind::Reentrant] {
        race(lock, false, FlushDiskType::AsyncFlush);
        race(lock, false, FlushDiskType::SyncFlush);
    }
}

#[test]
fn readers_race_writers_with_pool() {
    for lock in [PutLockKind::Spin, PutLockKind::Reentrant] {
        race(lock, true, FlushDiskType::AsyncFlush);
        race(lock, true, FlushDiskType::SyncFlush);
    }
}
