//! SYNC_FLUSH group commit, flush timeouts, ASYNC_FLUSH, and the injected put stall that makes
//! the page cache look busy (§5, §9.2, §9.3).

use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use broker_under_test::store::{
    FaultInjection, FlushDiskType, MessageStore, PutLockKind, PutMessage, PutMessageStatus,
    PutResult, StoreConfig,
};

mod store_util;
use store_util::plain_message;

fn config(dir: &Path, lock: PutLockKind, flush: FlushDiskType) -> StoreConfig {
    StoreConfig {
        store_path_root_dir: dir.to_path_buf(),
        mapped_file_size_commit_log: 256 * 1024,
        flush_disk_type: flush,
        put_lock: lock,
        ..StoreConfig::default()
    }
}

fn message(i: usize, wait: bool) -> PutMessage {
    plain_message("F", 0, vec![i as u8; 300], wait)
}

/// Puts and reports the result together with the flushed offset seen when the callback ran.
fn put_observing_flush(
    store: &Arc<MessageStore>,
    msg: PutMessage,
) -> mpsc::Receiver<(PutResult, i64)> {
    let (tx, rx) = mpsc::channel();
    let s = Arc::clone(store);
    store.put_message(
        msg,
        Box::new(move |r| {
            let flushed = s.flushed_offset();
            let _ = tx.send((r, flushed));
        }),
    );
    rx
}

fn sync_success_only_after_force(lock: PutLockKind) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), lock, FlushDiskType::SyncFlush);
    cfg.injection.flush_stall_millis = 300;
    let store = MessageStore::open(cfg).unwrap();
    // Many concurrent waiting puts: each success must come after its record end was forced.
    let start = Instant::now();
    let receivers: Vec<_> = (0..8)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                (0..5)
                    .map(|i| {
                        let begin = Instant::now();
                        let rx = put_observing_flush(&store, message(t * 10 + i, true));
                        (begin, rx)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .flat_map(|h| h.join().unwrap())
        .collect();
    // Every put was handed to the store by now (a put does not wait for its flush here).
    let submitted = start.elapsed();
    for (begin, rx) in receivers {
        let (r, flushed) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(r.status, PutMessageStatus::PutOk);
        let a = r.append.unwrap();
        assert!(
            flushed >= a.wrote_offset + a.wrote_bytes as i64,
            "answered at flushed={flushed} before the record end {}",
            a.wrote_offset + a.wrote_bytes as i64
        );
        // Every force takes ≥ 300 ms here, so no success can come sooner.
        assert!(begin.elapsed() >= Duration::from_millis(300));
    }
    let info = store.runtime_info();
    // Group commit: one force serves every put that arrived before it began. Forces run one
    // after another and each takes ≥ 300 ms here, so at most ⌊submitted / 300 ms⌋ + 1 of them
    // begin while puts still arrive, and one more serves the puts that came during the last.
    // A few ms of submission give 1 or 2; a force per put would give 40. The bound grows with
    // `submitted` on a loaded machine instead of being a guess.
    let forces: u64 = info["storeFlushTimes"].parse().unwrap();
    let bound = (submitted.as_millis() / 300) as u64 + 2;
    assert!(
        (1..=bound).contains(&forces),
        "{forces} forces for 40 puts submitted in {submitted:?} (at most {bound})"
    );
    let max: u64 = info["putMessageEntireTimeMax"].parse().unwrap();
    assert!(max >= 300, "entire time includes the flush wait: {max}");
}

fn flush_stall_beyond_timeout_is_flush_disk_timeout(lock: PutLockKind) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), lock, FlushDiskType::SyncFlush);
    cfg.sync_flush_timeout = 300;
    cfg.injection.flush_stall_millis = 1500;
    let store = MessageStore::open(cfg).unwrap();
    let begin = Instant::now();
    let rx = put_observing_flush(&store, message(1, true));
    let (r, _) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    let waited = begin.elapsed();
    assert_eq!(r.status, PutMessageStatus::FlushDiskTimeout);
    assert!(
        r.append.is_some(),
        "the header is filled: the message was appended"
    );
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(
        waited < Duration::from_millis(1400),
        "the watcher, not the flush, answered: {waited:?}"
    );
    // WAIT=false does not wait at all.
    let rx = put_observing_flush(&store, message(2, false));
    let (r, _) = rx.recv_timeout(Duration::from_secs(1)).unwrap();
    assert_eq!(r.status, PutMessageStatus::PutOk);
}

fn async_flush_eventually_forces(lock: PutLockKind) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), lock, FlushDiskType::AsyncFlush);
    cfg.flush_interval_commit_log = 20;
    cfg.flush_commit_log_thorough_interval = 100;
    let store = MessageStore::open(cfg).unwrap();
    let rx = put_observing_flush(&store, message(1, true));
    let (r, _) = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(r.status, PutMessageStatus::PutOk);
    // Less than 4 pages: only the thorough interval (least pages = 0) forces it.
    let end = store.max_wrote_offset();
    let deadline = Instant::now() + Duration::from_secs(20);
    while store.flushed_offset() < end {
        assert!(Instant::now() < deadline, "never flushed");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn put_stall_makes_page_cache_busy(lock: PutLockKind) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), lock, FlushDiskType::AsyncFlush);
    cfg.os_page_cache_busy_timeout_mills = 200;
    cfg.injection = FaultInjection {
        put_stall_millis: 1500,
        put_stall_interval_millis: 3_600_000,
        ..FaultInjection::default()
    };
    let store = MessageStore::open(cfg).unwrap();
    assert!(!store.is_os_page_cache_busy());
    // The first append stalls (then not again for an hour).
    let stalled = {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            put_observing_flush(&store, message(1, true))
                .recv()
                .unwrap()
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !store.is_os_page_cache_busy() {
        assert!(Instant::now() < deadline, "never busy");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(store.lock_time_mills() > 200);
    let ms = |info: &std::collections::BTreeMap<String, String>, k: &str| -> i64 {
        info[k].parse().unwrap()
    };
    let during = store.runtime_info();
    assert!(ms(&during, "pageCacheLockTimeMills") > 200);
    // The longest hold since the last read includes the hold in progress.
    assert!(ms(&during, "storePutLockMaxHoldMillis") >= ms(&during, "pageCacheLockTimeMills"));
    // A put arriving now is refused before it queues for the lock.
    let rx = put_observing_flush(&store, message(2, true));
    let (r, _) = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(r.status, PutMessageStatus::OsPageCacheBusy);
    let (r, _) = stalled.join().unwrap();
    assert_eq!(r.status, PutMessageStatus::PutOk);
    let in_lock_micros = r.append.unwrap().in_lock_micros;
    assert!(in_lock_micros >= 1_500_000);
    assert!(!store.is_os_page_cache_busy());
    assert_eq!(store.lock_time_mills(), 0);
    // The hold ended after the last read: the next read shows all of it, where the instant
    // value (the lock is free now) shows nothing; the read after that starts from 0 again.
    let after = store.runtime_info();
    assert_eq!(ms(&after, "pageCacheLockTimeMills"), 0);
    assert_eq!(
        ms(&after, "storePutLockMaxHoldMillis"),
        (in_lock_micros / 1000) as i64
    );
    assert_eq!(store.runtime_info()["storePutLockMaxHoldMillis"], "0");
    let rx = put_observing_flush(&store, message(3, true));
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(5)).unwrap().0.status,
        PutMessageStatus::PutOk
    );
    store_util::dispatched(&store);
    assert_eq!(store.max_offset_in_queue("F", 0), 2);
}

/// Audit #16 (fidelity-after-wave-3): a put with an illegal topic while the page cache is busy
/// is refused for its topic on 4.3 and 5.3 (topic checked before the busy check: 4.3.2
/// DefaultMessageStore.putMessage l.331-343, 5.3.3 HookUtils.checkBeforePutMessage l.86-107)
/// and for the busy page cache on 4.9 (4.9.8 checkStoreStatus, then checkMessage).
fn an_illegal_topic_while_busy_is_answered_per_version(lock: PutLockKind) {
    use broker_under_test::keys::{self, VersionProfile};
    for (profile, expected) in [
        (VersionProfile::V4_3, PutMessageStatus::MessageIllegal),
        (VersionProfile::V4_9, PutMessageStatus::OsPageCacheBusy),
        (VersionProfile::V5_3, PutMessageStatus::MessageIllegal),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = StoreConfig::from_keys(&keys::defaults(profile, None)).unwrap();
        cfg.store_path_root_dir = dir.path().to_path_buf();
        cfg.mapped_file_size_commit_log = 256 * 1024;
        cfg.put_lock = lock;
        cfg.os_page_cache_busy_timeout_mills = 200;
        cfg.injection = FaultInjection {
            put_stall_millis: 1000,
            put_stall_interval_millis: 3_600_000,
            ..FaultInjection::default()
        };
        let store = MessageStore::open(cfg).unwrap();
        let stalled = {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                put_observing_flush(&store, message(1, false))
                    .recv()
                    .unwrap()
            })
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !store.is_os_page_cache_busy() {
            assert!(Instant::now() < deadline, "never busy");
            std::thread::sleep(Duration::from_millis(5));
        }
        // 200 bytes: over every version's 127-byte limit for a topic that is not a retry topic.
        let illegal = plain_message(&"T".repeat(200), 0, vec![1; 10], false);
        let (r, _) = put_observing_flush(&store, illegal)
            .recv_timeout(Duration::from_secs(5))
            .unwrap();
        assert_eq!(r.status, expected, "{profile:?}");
        assert_eq!(stalled.join().unwrap().0.status, PutMessageStatus::PutOk);
    }
}

fn append_delay_holds_the_lock(lock: PutLockKind) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), lock, FlushDiskType::AsyncFlush);
    cfg.injection.append_delay_micros = 20_000;
    let store = MessageStore::open(cfg).unwrap();
    let rx = put_observing_flush(&store, message(1, true));
    let (r, _) = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(r.append.unwrap().in_lock_micros >= 20_000);
}

fn append_spin_holds_the_lock(lock: PutLockKind) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), lock, FlushDiskType::AsyncFlush);
    cfg.injection.append_spin = Duration::from_millis(20);
    let store = MessageStore::open(cfg).unwrap();
    let rx = put_observing_flush(&store, message(1, true));
    let (r, _) = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    // 20 ms of CPU time take at least 20 ms of wall time inside the lock.
    assert!(r.append.unwrap().in_lock_micros >= 20_000);
}

macro_rules! both_locks {
    ($($name:ident),*) => {
        mod spin {
            use super::*;
            $( #[test] fn $name() { super::$name(PutLockKind::Spin); } )*
        }
        mod reentrant {
            use super::*;
            $( #[test] fn $name() { super::$name(PutLockKind::Reentrant); } )*
        }
    };
}

both_locks!(
    sync_success_only_after_force,
    flush_stall_beyond_timeout_is_flush_disk_timeout,
    async_flush_eventually_forces,
    put_stall_makes_page_cache_busy,
    an_illegal_topic_while_busy_is_answered_per_version,
    append_delay_holds_the_lock,
    append_spin_holds_the_lock
);
