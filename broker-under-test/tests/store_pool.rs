//! The transient store pool (§9.4): commit visibility, deficiency, fast-fail and restart.

use std::path::Path;
use std::time::{Duration, Instant};

use broker_under_test::store::{
    FlushDiskType, GetMessageStatus, MessageStore, PutLockKind, PutMessage, PutMessageStatus,
    StoreConfig,
};
use remoting::message::decode_records;

mod store_util;
use store_util::{plain_message, put};

const FILE_SIZE: usize = 64 * 1024;

fn config(dir: &Path, pool_size: usize) -> StoreConfig {
    StoreConfig {
        store_path_root_dir: dir.to_path_buf(),
        mapped_file_size_commit_log: FILE_SIZE,
        transient_store_pool_in_effect: true,
        transient_store_pool_size: pool_size,
        flush_interval_commit_log: 20,
        flush_commit_log_thorough_interval: 100,
        commit_interval_commit_log: 20,
        commit_commit_log_thorough_interval: 50,
        ..StoreConfig::default()
    }
}

fn message(i: usize, len: usize) -> PutMessage {
    plain_message("P", 0, vec![i as u8; len], true)
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn data_is_visible_only_after_commit() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), 3);
    // A commit thread that practically never commits on its own.
    cfg.commit_interval_commit_log = 3_600_000;
    cfg.commit_commit_log_thorough_interval = 3_600_000;
    cfg.commit_commit_log_least_pages = 1000;
    let store = MessageStore::open(cfg).unwrap();
    let r = put(&store, message(1, 100));
    assert_eq!(r.status, PutMessageStatus::PutOk);
    assert_eq!(r.append.unwrap().queue_offset, 0);
    // Acknowledged but still in the pool buffer: invisible.
    assert_eq!(store.max_offset_in_queue("P", 0), 0);
    assert_eq!(store.commit_log_max_offset(), 0);
    assert!(store.max_wrote_offset() > 0);
    assert_ne!(
        store.get_message("P", 0, 0, 32, 1 << 20).status,
        GetMessageStatus::Found
    );
    let info = store.runtime_info();
    assert_ne!(info["remainHowManyDataToCommit"], "0 B");
    store.shutdown();
    drop(store);
    // Shutdown committed it: a restart reads it back.
    let store = MessageStore::open(config(dir.path(), 3)).unwrap();
    let got = store.get_message("P", 0, 0, 32, 1 << 20);
    assert_eq!(got.status, GetMessageStatus::Found);
    assert_eq!(decode_records(&got.body).unwrap()[0].body, vec![1u8; 100]);
}

#[test]
fn commit_thread_makes_data_visible() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), 3)).unwrap();
    for i in 0..10 {
        assert_eq!(put(&store, message(i, 500)).status, PutMessageStatus::PutOk);
    }
    wait_for("commit", || store.max_offset_in_queue("P", 0) == 10);
    let got = store.get_message("P", 0, 0, 32, 1 << 20);
    let recs = decode_records(&got.body).unwrap();
    assert_eq!(recs.len(), 10);
    assert_eq!(recs[9].body, vec![9u8; 500]);
    wait_for("flush", || {
        store.flushed_offset() == store.max_wrote_offset()
    });
}

#[test]
fn buffers_are_lent_and_returned_after_full_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), 3)).unwrap();
    assert_eq!(store.remain_transient_store_buffer_numbs(), 3);
    put(&store, message(0, 100));
    // The active file and the one pre-created for the next roll (by the commit service, after
    // its round) each hold a buffer.
    wait_for("the next file pre-created", || {
        store.remain_transient_store_buffer_numbs() == 1
    });
    assert!(!store.is_transient_store_pool_deficient());
    // Fill several files; committed files give their buffer back.
    for i in 0..200 {
        assert_eq!(
            put(&store, message(i, 1000)).status,
            PutMessageStatus::PutOk
        );
    }
    assert!(store.commit_log_file_offsets().len() >= 3);
    // Every full file gives its buffer back once committed; only the active and the pre-created
    // file may keep one (if the pool ran dry while files rolled quickly, they were created
    // unbuffered and hold none).
    wait_for("buffers back", || {
        store.remain_transient_store_buffer_numbs() >= 1
    });
    wait_for("all visible", || store.max_offset_in_queue("P", 0) == 201);
}

#[test]
fn a_roll_with_a_commit_that_keeps_up_leaves_a_buffer_free() {
    // Three buffers: the full file until its last commit, the active one and the next. The
    // real broker's allocator borrows for the next file only once it has mapped it, by which
    // time the commit woken by the rolling put has given the full file's buffer back: Apache
    // 5.3.3 with 3 buffers under load refused 0, 0 and 20 sends as pool-deficient (fidelity
    // row 12b). So while the commit keeps up, no put leaves the pool empty. 16 KiB messages
    // (4 pages: each put is committable at once), about 4 to a 64 KiB file.
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), 3)).unwrap();
    for i in 0..20 {
        assert_eq!(
            put(&store, message(i, 16 * 1024)).status,
            PutMessageStatus::PutOk
        );
        assert!(
            !store.is_transient_store_pool_deficient(),
            "deficient after put {i} (files {:?})",
            store.commit_log_file_offsets()
        );
        // The commit keeps up: readers see a message only once it is committed.
        wait_for("the put committed", || {
            store.max_offset_in_queue("P", 0) == i as i64 + 1
        });
    }
    assert!(store.commit_log_file_offsets().len() >= 4);
}

#[test]
fn pool_of_one_is_always_deficient() {
    // apache/rocketmq #2439: the active file holds the only buffer.
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), 1)).unwrap();
    assert!(!store.is_transient_store_pool_deficient());
    put(&store, message(0, 100));
    assert_eq!(store.remain_transient_store_buffer_numbs(), 0);
    assert!(store.is_transient_store_pool_deficient());
    assert_eq!(store.runtime_info()["remainTransientStoreBufferNumbs"], "0");
}

#[test]
fn pool_of_two_is_deficient_after_the_first_put() {
    // Active file + pre-created next file: both buffers are out, so every send is rejected
    // ([REJECTREQUEST]) until the first file is full and committed.
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), 2)).unwrap();
    put(&store, message(0, 100));
    wait_for("the next file pre-created", || {
        store.remain_transient_store_buffer_numbs() == 0
    });
    assert!(store.is_transient_store_pool_deficient());
}

#[test]
fn fast_fail_without_buffer_is_create_mapped_file_failed() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), 1);
    cfg.fast_fail_if_no_buffer_in_store_pool = true;
    // Commits never happen, so the first file's buffer is never returned.
    cfg.commit_interval_commit_log = 3_600_000;
    cfg.commit_commit_log_thorough_interval = 3_600_000;
    cfg.commit_commit_log_least_pages = 1000;
    let store = MessageStore::open(cfg).unwrap();
    let mut statuses = Vec::new();
    for i in 0..80 {
        statuses.push(put(&store, message(i, 1000)).status);
    }
    let first_fail = statuses
        .iter()
        .position(|s| *s != PutMessageStatus::PutOk)
        .expect("the second file cannot be created while the first holds the only buffer");
    assert!(first_fail > 30, "{first_fail}");
    assert_eq!(
        statuses[first_fail],
        PutMessageStatus::CreateMappedFileFailed
    );
    // Once the first file is full it is committable, so the commit thread may return its buffer
    // and later puts succeed again; every failure is CREATE_MAPPED_FILE_FAILED.
    let failures = statuses
        .iter()
        .filter(|s| **s != PutMessageStatus::PutOk)
        .count();
    assert!(statuses.iter().all(|s| matches!(
        s,
        PutMessageStatus::PutOk | PutMessageStatus::CreateMappedFileFailed
    )));
    assert_eq!(
        store.runtime_info()["putMessageFailedTimes"],
        failures.to_string()
    );
}

#[test]
fn without_fast_fail_files_are_created_unbuffered() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), 1);
    cfg.commit_interval_commit_log = 3_600_000;
    cfg.commit_commit_log_thorough_interval = 3_600_000;
    cfg.commit_commit_log_least_pages = 1000;
    let store = MessageStore::open(cfg).unwrap();
    for i in 0..80 {
        assert_eq!(
            put(&store, message(i, 1000)).status,
            PutMessageStatus::PutOk
        );
    }
    assert!(store.commit_log_file_offsets().len() >= 2);
}

#[test]
fn graceful_restart_loses_nothing() {
    for lock in [PutLockKind::Spin, PutLockKind::Reentrant] {
        for flush in [FlushDiskType::AsyncFlush, FlushDiskType::SyncFlush] {
            let dir = tempfile::tempdir().unwrap();
            let mut cfg = config(dir.path(), 2);
            cfg.put_lock = lock;
            cfg.flush_disk_type = flush;
            // Under SYNC_FLUSH a waiting put needs its bytes committed within ~1 s of group-commit
            // retries (5.2+), so only ASYNC_FLUSH gets a lazy committer that leaves data in buffers.
            if flush == FlushDiskType::AsyncFlush {
                cfg.commit_interval_commit_log = 500;
                cfg.commit_commit_log_thorough_interval = 10_000;
            } else {
                // Commit on every wake-up, so waiting puts are not held up by the least-pages rule.
                cfg.commit_commit_log_thorough_interval = 0;
            }
            {
                let store = MessageStore::open(cfg.clone()).unwrap();
                for i in 0..150 {
                    let mut m = message(i, 700);
                    // Half of them do not wait for the flush, so some may sit in the buffer.
                    m.wait_store_ok = i % 2 == 0;
                    assert_eq!(put(&store, m).status, PutMessageStatus::PutOk);
                }
            }
            let store = MessageStore::open(cfg).unwrap();
            assert_eq!(store.max_offset_in_queue("P", 0), 150, "{lock:?} {flush:?}");
            let mut offset = 0;
            let mut n = 0;
            while offset < 150 {
                let got = store.get_message("P", 0, offset, 32, 1 << 20);
                for r in decode_records(&got.body).unwrap() {
                    assert_eq!(r.body, vec![n as u8; 700]);
                    n += 1;
                }
                offset = got.next_begin_offset;
            }
            assert_eq!(n, 150);
        }
    }
}
