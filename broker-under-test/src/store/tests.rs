//! Unit tests of store internals; end-to-end store tests live in `tests/store_*.rs`.

use super::record::java_string_hash;
use super::*;

#[test]
fn tag_hash_is_java_string_hash_code() {
    assert_eq!(java_string_hash(""), 0);
    assert_eq!(java_string_hash("TagA"), 2_598_919);
    // Overflow wraps like Java's int arithmetic, then widens to long.
    assert_eq!(java_string_hash("TagA_very_long_tag_value"), {
        let mut h: i32 = 0;
        for c in "TagA_very_long_tag_value".chars() {
            h = h.wrapping_mul(31).wrapping_add(c as i32);
        }
        h as i64
    });
}

#[test]
fn a_file_out_of_sequence_and_everything_after_it_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        store_path_root_dir: dir.path().to_path_buf(),
        mapped_file_size_commit_log: MIN_MAPPED_FILE_SIZE,
        ..StoreConfig::default()
    };
    let cl = dir.path().join("commitlog");
    std::fs::create_dir_all(&cl).unwrap();
    // Files 0 and 8192: a gap where 4096 should be.
    for off in [0usize, 2 * MIN_MAPPED_FILE_SIZE] {
        std::fs::write(
            cl.join(format!("{off:020}")),
            vec![0u8; MIN_MAPPED_FILE_SIZE],
        )
        .unwrap();
    }
    let store = MessageStore::open(cfg).unwrap();
    assert_eq!(store.commit_log_file_offsets(), vec![0]);
    assert!(!cl
        .join(format!("{:020}", 2 * MIN_MAPPED_FILE_SIZE))
        .exists());
}

#[test]
fn oversized_file_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let cl = dir.path().join("commitlog");
    std::fs::create_dir_all(&cl).unwrap();
    std::fs::write(
        cl.join(format!("{:020}", 0)),
        vec![0u8; 2 * MIN_MAPPED_FILE_SIZE],
    )
    .unwrap();
    let err = MessageStore::open(StoreConfig {
        store_path_root_dir: dir.path().to_path_buf(),
        mapped_file_size_commit_log: MIN_MAPPED_FILE_SIZE,
        ..StoreConfig::default()
    })
    .err()
    .expect("size mismatch refused");
    assert!(matches!(err, StoreError::Config(_)), "{err}");
}

#[test]
fn invalid_config_is_refused() {
    let cfg = StoreConfig {
        mapped_file_size_commit_log: 100,
        ..StoreConfig::default()
    };
    assert!(matches!(cfg.validate(), Err(StoreError::Config(_))));
    assert!(StoreConfig::default().validate().is_ok());
}

#[test]
fn dropping_the_last_handle_inside_a_callback_does_not_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(StoreConfig {
        store_path_root_dir: dir.path().to_path_buf(),
        mapped_file_size_commit_log: 64 * 1024,
        flush_disk_type: FlushDiskType::SyncFlush,
        ..StoreConfig::default()
    })
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let holder = std::sync::Arc::new(parking_lot::Mutex::new(Some(std::sync::Arc::clone(&store))));
    let h2 = std::sync::Arc::clone(&holder);
    drop(store);
    let msg = PutMessage {
        topic: "D".into(),
        queue_id: 0,
        flag: 0,
        body: bytes::Bytes::from_static(b"x"),
        properties: String::new(),
        sys_flag: 0,
        born_timestamp: 0,
        born_host: "127.0.0.1:1".parse().unwrap(),
        reconsume_times: 0,
        wait_store_ok: true,
    };
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let s = holder.lock().clone().unwrap();
    s.put_message(
        msg,
        Box::new(move |r| {
            // Once the test thread let go of its handle, drop the last one here, on the
            // group-commit thread.
            let _ = go_rx.recv_timeout(std::time::Duration::from_secs(5));
            h2.lock().take();
            let _ = tx.send(r.status);
        }),
    );
    drop(s);
    go_tx.send(()).unwrap();
    assert_eq!(
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap(),
        PutMessageStatus::PutOk
    );
}

#[test]
fn a_callback_may_shut_the_store_down() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(StoreConfig {
        store_path_root_dir: dir.path().to_path_buf(),
        mapped_file_size_commit_log: 64 * 1024,
        ..StoreConfig::default()
    })
    .unwrap();
    let s = std::sync::Arc::clone(&store);
    let (tx, rx) = std::sync::mpsc::channel();
    store.put_message(
        PutMessage {
            topic: "D".into(),
            queue_id: 0,
            flag: 0,
            body: bytes::Bytes::from_static(b"x"),
            properties: String::new(),
            sys_flag: 0,
            born_timestamp: 0,
            born_host: "127.0.0.1:1".parse().unwrap(),
            reconsume_times: 0,
            wait_store_ok: true,
        },
        Box::new(move |r| {
            s.shutdown();
            let _ = tx.send(r.status);
        }),
    );
    assert_eq!(
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap(),
        PutMessageStatus::PutOk
    );
}

/// The commit thread runs under SCHED_BATCH (`service::no_wakeup_preemption`): woken by every
/// put, it must not preempt the send thread on a shared core. Read back from the kernel, by the
/// thread's name, as `chrt -p` would.
#[test]
fn the_commit_thread_runs_under_sched_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(StoreConfig {
        store_path_root_dir: dir.path().to_path_buf(),
        mapped_file_size_commit_log: MIN_MAPPED_FILE_SIZE,
        transient_store_pool_in_effect: true,
        transient_store_pool_size: 2,
        ..StoreConfig::default()
    })
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut found = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim_end() == "CommitRealTimeS" {
                let tid: libc::pid_t = task.file_name().to_string_lossy().parse().unwrap();
                // SAFETY: sched_getscheduler only reads the policy of the given thread.
                found.push(unsafe { libc::sched_getscheduler(tid) });
            }
        }
        // The thread sets its policy first thing; poll until it is there (or the deadline).
        if !found.is_empty() && found.iter().all(|&p| p == libc::SCHED_BATCH) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "commit threads' policies: {found:?}, want SCHED_BATCH ({})",
            libc::SCHED_BATCH
        );
        std::thread::yield_now();
    }
    store.shutdown();
}
