//! ReputMessageService at the store level: a put is answered before its consume-queue entry
//! exists, `dispatchBehindBytes` shows the backlog, recovery rebuilds the consume queues before
//! the thread starts at the recovered end, shutdown is prompt and dispatches what is readable,
//! and 5.3 under SYNC_FLUSH dispatches forced data only.

mod store_util;

use std::path::Path;
use std::time::{Duration, Instant};

use broker_under_test::store::{
    FaultInjection, FlushDiskType, GetMessageStatus, MessageStore, PutMessageStatus, ReputEnd,
    StoreConfig,
};
use store_util::{dispatched, plain_message, put};

fn config(dir: &Path, reput_stall_millis: u64) -> StoreConfig {
    StoreConfig {
        store_path_root_dir: dir.to_path_buf(),
        mapped_file_size_commit_log: 64 * 1024,
        injection: FaultInjection {
            reput_stall_millis,
            ..FaultInjection::default()
        },
        ..StoreConfig::default()
    }
}

#[test]
fn a_put_is_answered_before_its_consume_queue_entry_exists() {
    let dir = tempfile::tempdir().unwrap();
    // The thread waits 3 s whenever it finds new data: far longer than the checks below take.
    let store = MessageStore::open(config(dir.path(), 3_000)).unwrap();
    let r = put(&store, plain_message("Held", 0, vec![7; 100], false));
    assert_eq!(r.status, PutMessageStatus::PutOk);
    let a = r.append.unwrap();
    assert_eq!(a.queue_offset, 0);
    // Answered, readable in the CommitLog, not yet in the consume queue.
    assert_eq!(store.commit_log_max_offset(), a.wrote_bytes as i64);
    assert_eq!(store.max_offset_in_queue("Held", 0), 0);
    assert_ne!(
        store.get_message("Held", 0, 0, 32, 1 << 20).status,
        GetMessageStatus::Found
    );
    assert_eq!(store.dispatch_behind_bytes(), a.wrote_bytes as i64);
    assert_eq!(
        store.runtime_info()["dispatchBehindBytes"],
        a.wrote_bytes.to_string()
    );
    // Caught up after the stall: the entry exists and the backlog is gone.
    dispatched(&store);
    assert_eq!(store.max_offset_in_queue("Held", 0), 1);
    let got = store.get_message("Held", 0, 0, 32, 1 << 20);
    assert_eq!((got.status, got.msg_count), (GetMessageStatus::Found, 1));
    assert_eq!(store.runtime_info()["dispatchBehindBytes"], "0");
}

#[test]
fn restart_rebuilds_the_queues_and_the_thread_starts_at_the_recovered_end() {
    const N: usize = 300;
    let dir = tempfile::tempdir().unwrap();
    {
        let store = MessageStore::open(config(dir.path(), 0)).unwrap();
        for i in 0..N {
            let m = plain_message("Rec", (i % 3) as i32, vec![i as u8; 500], false);
            assert_eq!(put(&store, m).status, PutMessageStatus::PutOk);
        }
        // Several files, so the rebuild crosses file ends and blank markers.
        assert!(store.commit_log_file_offsets().len() > 2);
    }
    // A thread that would hold anything it finds for a minute.
    let store = MessageStore::open(config(dir.path(), 60_000)).unwrap();
    // The rebuild ran on the opening thread: every entry is there when open returns.
    assert_eq!(store.dispatch_behind_bytes(), 0);
    for q in 0..3 {
        assert_eq!(store.max_offset_in_queue("Rec", q), (N / 3) as i64);
    }
    let got = store.get_message("Rec", 2, 0, 1000, 1 << 24);
    assert_eq!(got.msg_count, N / 3);
    // The thread starts at the recovered end: behind by exactly the new record.
    let a = put(&store, plain_message("Rec", 0, vec![1; 500], false))
        .append
        .unwrap();
    assert_eq!(a.queue_offset, (N / 3) as i64);
    assert_eq!(store.dispatch_behind_bytes(), a.wrote_bytes as i64);
    assert_eq!(store.max_offset_in_queue("Rec", 0), (N / 3) as i64);
    // The stop cuts the minute short, and the last round dispatches what is readable.
    let begin = Instant::now();
    store.shutdown();
    assert!(
        begin.elapsed() < Duration::from_secs(10),
        "{:?}",
        begin.elapsed()
    );
    assert_eq!(store.max_offset_in_queue("Rec", 0), (N / 3) as i64 + 1);
    assert_eq!(store.dispatch_behind_bytes(), 0);
}

/// Linux truncates thread names to 15 bytes.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_owned())
        .collect()
}

#[test]
fn the_dispatch_runs_on_a_thread_named_reput_message_service() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), 0)).unwrap();
    assert!(
        thread_names().iter().any(|n| n == "ReputMessageSer"),
        "{:?}",
        thread_names()
    );
    store.shutdown();
}

/// 4.x dispatches up to the readable end; 5.3 under SYNC_FLUSH up to `flushedWhere`
/// (`getConfirmOffset`), so a message is consumable only once it is forced.
#[test]
fn under_sync_flush_5_3_dispatches_forced_data_only() {
    for end in [ReputEnd::MaxOffset, ReputEnd::FlushedWhere] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path(), 0);
        cfg.flush_disk_type = FlushDiskType::SyncFlush;
        cfg.reput_end = end;
        // Every force takes 2 s; a put with WAIT=false does not wait for it.
        cfg.injection.flush_stall_millis = 2_000;
        let store = MessageStore::open(cfg).unwrap();
        let a = put(&store, plain_message("Sync", 0, vec![3; 100], false))
            .append
            .unwrap();
        let written = a.wrote_bytes as i64;
        match end {
            ReputEnd::MaxOffset => {
                dispatched(&store);
                assert_eq!(store.max_offset_in_queue("Sync", 0), 1);
                assert!(store.flushed_offset() < written, "{end:?}: flushed already");
            }
            ReputEnd::FlushedWhere => {
                // Nothing forced, so nothing to dispatch and no backlog to show.
                assert_eq!(store.dispatch_behind_bytes(), 0);
                assert_eq!(store.max_offset_in_queue("Sync", 0), 0);
                let deadline = Instant::now() + Duration::from_secs(20);
                while store.max_offset_in_queue("Sync", 0) < 1 {
                    assert!(Instant::now() < deadline, "never dispatched");
                    std::thread::sleep(Duration::from_millis(5));
                }
                assert_eq!(store.flushed_offset(), written);
            }
        }
    }
}
