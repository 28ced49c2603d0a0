//! The page-cache stall model: a stall hits whichever thread writes file-backed pages. With the
//! transient store pool off that is the appender, inside the put lock, so a stall longer than
//! `osPageCacheBusyTimeOutMills` makes the page cache busy; with the pool on it is the commit
//! thread, so sends go on, the commit lag grows and drains, and only a stall that outlasts the
//! pool's buffers turns into `[REJECTREQUEST]`. Readers never see uncommitted bytes.

mod common;
mod store_util;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use broker_under_test::store::{
    FaultInjection, GetMessageStatus, MessageStore, PutMessageStatus, StoreConfig,
};
use common::*;
use remoting::RemotingCommand;

const REJECT: &str = "[REJECTREQUEST]system busy, start flow control for a while";
const PCBUSY: &str =
    "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ";

/// Broker tests hold stalls of seconds and time their answers: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Polls runtime info (on its own connection) until `pred` holds, within 10 s.
async fn wait_info(b: &TestBroker, what: &str, pred: impl Fn(&BTreeMap<String, String>) -> bool) {
    let mut probe = b.client().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info = probe.runtime_info().await;
        if pred(&info) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}: {info:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Sends one message and waits for its answer; returns it with the round-trip time.
async fn timed_send(c: &mut Client, topic: &str, body: &[u8]) -> (RemotingCommand, Duration) {
    let o = c.opaque();
    let t = Instant::now();
    let r = c.call(send_v2(o, topic, 0, body)).await;
    (r, t.elapsed())
}

#[tokio::test]
async fn pool_off_a_stall_past_the_busy_limit_rejects_and_drains_the_queue() {
    let _serial = SERIAL.lock().await;
    let b = TestBroker::start(&[
        ("sendMessageThreadPoolNums", "1"),
        ("osPageCacheBusyTimeOutMills", "1000"),
        ("waitTimeMillsInSendQueue", "60000"),
        ("injectPageCacheStallMillis", "2000"),
        ("injectPageCacheStallIntervalMillis", "600000"),
    ])
    .await;
    let mut c = b.client().await;
    // The first append writes the page cache and stalls inside the put lock; the two behind it
    // wait in the send queue.
    for o in 1..=3 {
        c.send(&send_v2(o, "PcOff", 0, format!("m{o}").as_bytes()))
            .await;
    }
    wait_info(&b, "the put lock held past the busy limit", |i| {
        counter(i, "pageCacheLockTimeMills") > 1050
    })
    .await;
    c.send(&send_v2(4, "PcOff", 0, b"late")).await;
    let mut answers = BTreeMap::new();
    while answers.len() < 4 {
        let r = c.read().await;
        answers.insert(r.opaque, r);
    }
    assert_eq!(answers[&1].code, 0, "{:?}", answers[&1].remark);
    for o in [2, 3] {
        assert_eq!(answers[&o].code, 2);
        assert!(
            remark(&answers[&o]).starts_with(PCBUSY),
            "{:?}",
            answers[&o]
        );
    }
    assert_eq!((answers[&4].code, remark(&answers[&4])), (2, REJECT));
    let info = c.runtime_info().await;
    assert_eq!(counter(&info, "storePageCacheStallTimes"), 1);
    assert_eq!(counter(&info, "flowControlPcBusyCleanQueue"), 2);
    assert_eq!(counter(&info, "flowControlRejectRequestPageCache"), 1);
    assert_eq!(counter(&info, "flowControlRejectRequestPool"), 0);
    assert_eq!(counter(&info, "commitLogUncommittedBytes"), 0);
    b.stop().await;
}

#[tokio::test]
async fn pool_on_with_enough_buffers_the_same_stall_delays_commits_not_sends() {
    let _serial = SERIAL.lock().await;
    let b = TestBroker::start(&[
        ("sendMessageThreadPoolNums", "1"),
        ("osPageCacheBusyTimeOutMills", "1000"),
        ("transientStorePoolEnable", "true"),
        ("transientStorePoolSize", "5"),
        ("mappedFileSizeCommitLog", "1048576"),
        ("maxMessageSize", "65536"),
        ("injectPageCacheStallMillis", "2500"),
        ("injectPageCacheStallIntervalMillis", "600000"),
    ])
    .await;
    let mut c = b.client().await;
    let (first, _) = timed_send(&mut c, "PcOn", b"first").await;
    assert_eq!(first.code, 0, "{:?}", first.remark);
    // The commit thread's first write into the page cache is the one that stalls.
    wait_info(&b, "the commit thread to stall", |i| {
        counter(i, "storePageCacheStallTimes") == 1
    })
    .await;
    let lag_before = counter(&c.runtime_info().await, "commitLogUncommittedBytes");
    assert!(lag_before > 0, "the first message is not committed yet");
    // Every send is answered while the commit thread is still stalled (nothing committed
    // below): that, not a time limit, shows the stall does not delay sends.
    for i in 0..40 {
        let (r, _) = timed_send(&mut c, "PcOn", format!("m{i}").as_bytes()).await;
        assert_eq!(
            r.code, 0,
            "send {i} during the commit stall: {:?}",
            r.remark
        );
    }
    let info = c.runtime_info().await;
    let lag_after = counter(&info, "commitLogUncommittedBytes");
    assert!(lag_after > lag_before, "{lag_before} -> {lag_after}");
    assert_eq!(counter(&info, "storePageCacheStallTimes"), 1);
    // Readers see committed bytes only: nothing has been committed yet.
    assert!(counter(&info, "commitLogMaxOffset") == 0, "{info:?}");
    assert!(c.pull_all("PcOn", 0).await.is_empty());
    wait_info(&b, "the commit lag to drain", |i| {
        counter(i, "commitLogUncommittedBytes") == 0
    })
    .await;
    let info = c.runtime_info().await;
    assert_eq!(counter(&info, "flowControlTotal"), 0, "{info:?}");
    // Dispatch follows the commit on the commit thread.
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.pull_all("PcOn", 0).await.len() < 41 {
        assert!(
            Instant::now() < deadline,
            "committed messages never became readable"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    b.stop().await;
}

#[tokio::test]
async fn pool_on_a_stall_that_outlasts_the_buffers_makes_the_pool_deficient() {
    let _serial = SERIAL.lock().await;
    // Three buffers: the active file and the pre-created next one hold two, one is spare. Files
    // of 64 KiB fill in ~50 sends, so the stalled commit thread cannot return buffers in time.
    let b = TestBroker::start(&[
        ("sendMessageThreadPoolNums", "1"),
        ("transientStorePoolEnable", "true"),
        ("transientStorePoolSize", "3"),
        ("mappedFileSizeCommitLog", "65536"),
        ("maxMessageSize", "4096"),
        ("injectPageCacheStallMillis", "3000"),
        ("injectPageCacheStallIntervalMillis", "600000"),
    ])
    .await;
    let mut c = b.client().await;
    let body = vec![b'x'; 1000];
    let (first, _) = timed_send(&mut c, "PcPool", &body).await;
    assert_eq!(first.code, 0, "{:?}", first.remark);
    wait_info(&b, "the commit thread to stall", |i| {
        counter(i, "storePageCacheStallTimes") == 1
    })
    .await;
    let mut ok = 1;
    let mut rejected = 0;
    for _ in 0..200 {
        let (r, _) = timed_send(&mut c, "PcPool", &body).await;
        match r.code {
            0 => ok += 1,
            2 => {
                assert_eq!(remark(&r), REJECT);
                rejected += 1;
            }
            other => panic!("unexpected code {other}: {:?}", r.remark),
        }
        if rejected >= 5 {
            break;
        }
    }
    assert!(rejected >= 5, "no pool-deficient answers after {ok} stored");
    assert!(ok > 40, "the spare buffer lasted only {ok} sends");
    let info = c.runtime_info().await;
    assert_eq!(counter(&info, "flowControlRejectRequestPool"), rejected);
    assert_eq!(counter(&info, "flowControlRejectRequestPageCache"), 0);
    assert_eq!(counter(&info, "remainTransientStoreBufferNumbs"), 0);
    // Once the stall ends the commit thread catches up and gives the buffers back.
    wait_info(&b, "buffers back", |i| {
        counter(i, "remainTransientStoreBufferNumbs") > 0
            && counter(i, "commitLogUncommittedBytes") < 65536
    })
    .await;
    let (r, _) = timed_send(&mut c, "PcPool", &body).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    b.stop().await;
}

// Store-level: the writeback stall, which follows the flush thread.

fn writeback_config(dir: &std::path::Path, pool: bool) -> StoreConfig {
    StoreConfig {
        store_path_root_dir: dir.to_path_buf(),
        mapped_file_size_commit_log: 1 << 20,
        transient_store_pool_in_effect: pool,
        transient_store_pool_size: 3,
        flush_interval_commit_log: 20,
        flush_commit_log_least_pages: 0,
        commit_interval_commit_log: 20,
        commit_commit_log_thorough_interval: 0,
        injection: FaultInjection {
            writeback_stall_millis: 1500,
            ..FaultInjection::default()
        },
        ..StoreConfig::default()
    }
}

/// Waits (10 s deadline) until a force is inside its injected writeback stall.
fn wait_forcing(store: &MessageStore) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while store.runtime_info()["storeWritebackForcing"] == "0" {
        assert!(Instant::now() < deadline, "no force ever started");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Puts one message on a named thread; returns its status and how long it took, and whether
/// the page cache was seen busy meanwhile.
fn put_while_forcing(store: &std::sync::Arc<MessageStore>) -> (PutMessageStatus, Duration, bool) {
    let s = std::sync::Arc::clone(store);
    let putter = std::thread::Builder::new()
        .name("test-put".into())
        .spawn(move || {
            let t = Instant::now();
            let r = store_util::put(&s, store_util::plain_message("W", 0, vec![2; 100], false));
            (r.status, t.elapsed())
        })
        .unwrap();
    let mut busy = false;
    while !putter.is_finished() {
        busy |= store.is_os_page_cache_busy();
        std::thread::sleep(Duration::from_millis(5));
    }
    let (status, took) = putter.join().unwrap();
    (status, took, busy)
}

#[test]
fn pool_off_an_append_into_pages_under_writeback_waits_inside_the_put_lock() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = writeback_config(dir.path(), false);
    cfg.os_page_cache_busy_timeout_mills = 1000;
    let store = MessageStore::open(cfg).unwrap();
    let r = store_util::put(
        &store,
        store_util::plain_message("W", 0, vec![1; 100], false),
    );
    assert_eq!(r.status, PutMessageStatus::PutOk);
    // The flush thread starts forcing that page within ~20 ms and holds it for 1.5 s.
    wait_forcing(&store);
    let (status, took, busy) = put_while_forcing(&store);
    assert_eq!(status, PutMessageStatus::PutOk);
    assert!(took >= Duration::from_millis(1000), "{took:?}");
    assert!(
        busy,
        "the put lock was held past osPageCacheBusyTimeOutMills"
    );
    assert!(store.runtime_info()["storePageCacheStallTimes"] != "0");
}

#[test]
fn pool_on_the_commit_thread_waits_for_the_writeback_instead() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(writeback_config(dir.path(), true)).unwrap();
    let r = store_util::put(
        &store,
        store_util::plain_message("W", 0, vec![1; 100], false),
    );
    assert_eq!(r.status, PutMessageStatus::PutOk);
    // Committed within ~20 ms, then forced for 1.5 s.
    wait_forcing(&store);
    // The first message's consume-queue entry is ReputMessageService's, on its own thread: on a
    // busy machine it can come after the second put, so it is waited for here.
    let deadline = Instant::now() + Duration::from_secs(10);
    while store.max_offset_in_queue("W", 0) < 1 {
        assert!(
            Instant::now() < deadline,
            "the first message was never dispatched"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let (status, _, busy) = put_while_forcing(&store);
    assert_eq!(status, PutMessageStatus::PutOk);
    assert!(!busy);
    // The put was answered while the force (and the commit thread behind it) still ran: the
    // second message waits in the pool buffer: acknowledged, uncommitted, unreadable.
    assert_ne!(store.runtime_info()["storeWritebackForcing"], "0");
    assert!(store.uncommitted_bytes() > 0);
    assert_eq!(store.max_offset_in_queue("W", 0), 1);
    let got = store.get_message("W", 0, 1, 32, 1 << 20);
    assert_ne!(got.status, GetMessageStatus::Found);
    let deadline = Instant::now() + Duration::from_secs(10);
    while store.uncommitted_bytes() > 0 || store.max_offset_in_queue("W", 0) < 2 {
        assert!(Instant::now() < deadline, "the commit lag never drained");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(store.runtime_info()["commitLogUncommittedBytes"], "0");
}
