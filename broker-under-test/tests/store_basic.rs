//! CommitLog append, read-back, roll-over, batches, restart and torn-tail recovery, run with both
//! put locks and both encode placements.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use broker_under_test::store::{
    GetMessageStatus, MessageStore, PutLockKind, PutMessage, PutMessageStatus, StoreConfig,
};
use bytes::Bytes;
use remoting::message::{
    decode_record, decode_records, encode_properties, offset_msg_id, RecordAt, MAGIC_BLANK,
};

mod store_util;
use store_util::{dispatched, put, put_batch};

const FILE_SIZE: usize = 64 * 1024;

fn config(dir: &Path, lock: PutLockKind, encode_inside_lock: bool) -> StoreConfig {
    StoreConfig {
        store_path_root_dir: dir.to_path_buf(),
        mapped_file_size_commit_log: FILE_SIZE,
        max_message_size: 16 * 1024,
        put_lock: lock,
        encode_inside_lock,
        flush_interval_commit_log: 50,
        ..StoreConfig::default()
    }
}

fn message(topic: &str, queue_id: i32, body: Vec<u8>) -> PutMessage {
    PutMessage {
        topic: topic.into(),
        queue_id,
        flag: 7,
        body: Bytes::from(body),
        properties: encode_properties([("WAIT", "true"), ("TAGS", "tagA")]),
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "127.0.0.1:50000".parse().unwrap(),
        reconsume_times: 0,
        wait_store_ok: true,
    }
}

fn body(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i * 31 + j) as u8).collect()
}

fn commitlog_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("commitlog"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

fn read_all(
    store: &MessageStore,
    topic: &str,
    queue_id: i32,
) -> Vec<remoting::message::MessageRecord> {
    // Every message put so far, not only those ReputMessageService reached.
    dispatched(store);
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let r = store.get_message(topic, queue_id, offset, 32, 1024 * 1024);
        if r.status != GetMessageStatus::Found {
            break;
        }
        out.extend(decode_records(&r.body).expect("records decode with valid CRC"));
        offset = r.next_begin_offset;
    }
    out
}

fn append_and_read_back(lock: PutLockKind, inside: bool) {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), lock, inside)).unwrap();
    let mut results = Vec::new();
    for i in 0..200 {
        let r = put(&store, message("TopicTest", (i % 2) as i32, body(i, 1000)));
        assert_eq!(r.status, PutMessageStatus::PutOk);
        results.push(r.append.unwrap());
    }
    // Queue offsets are per topic-queue and consecutive.
    for (i, a) in results.iter().enumerate() {
        assert_eq!(a.queue_offset, (i / 2) as i64);
        assert_eq!(a.msg_num, 1);
        assert_eq!(
            a.msg_ids[0],
            offset_msg_id(store.config().store_host, a.wrote_offset)
        );
    }
    dispatched(&store);
    assert_eq!(store.max_offset_in_queue("TopicTest", 0), 100);
    assert_eq!(store.max_offset_in_queue("TopicTest", 1), 100);
    for q in 0..2 {
        let recs = read_all(&store, "TopicTest", q);
        assert_eq!(recs.len(), 100);
        for (k, rec) in recs.iter().enumerate() {
            let i = k * 2 + q as usize;
            assert_eq!(rec.body, body(i, 1000));
            assert_eq!(rec.queue_offset, k as i64);
            assert_eq!(rec.physical_offset, results[i].wrote_offset);
            assert_eq!(rec.store_timestamp, results[i].store_timestamp);
            assert_eq!(rec.flag, 7);
            assert_eq!(rec.topic, "TopicTest");
        }
    }
    // 200 records of ~1.1 KB in 64 KiB files: several files, each closed by a blank marker.
    let in_use = store.commit_log_file_offsets();
    store.shutdown();
    let on_disk = commitlog_files(dir.path());
    // Plus the file pre-created for the next roll (AllocateMappedFileService).
    assert_eq!(on_disk.len(), in_use.len() + 1);
    let files = &on_disk[..in_use.len()];
    assert!(files.len() >= 3, "{files:?}");
    for (n, f) in files.iter().enumerate() {
        let name = f.file_name().unwrap().to_str().unwrap().to_owned();
        assert_eq!(name, format!("{:020}", n * FILE_SIZE));
        let data = std::fs::read(f).unwrap();
        assert_eq!(data.len(), FILE_SIZE);
        let mut pos = 0;
        let end = loop {
            match decode_record(&data[pos..], true).unwrap() {
                RecordAt::Message { len, .. } => pos += len,
                other => break other,
            }
        };
        if n + 1 < files.len() {
            assert_eq!(
                end,
                RecordAt::EndOfFile {
                    len: FILE_SIZE - pos
                }
            );
            assert_eq!(&data[pos + 4..pos + 8], &MAGIC_BLANK.to_be_bytes());
        } else {
            assert_eq!(end, RecordAt::Empty);
        }
    }
}

fn batch_gets_consecutive_offsets(lock: PutLockKind, inside: bool) {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), lock, inside)).unwrap();
    assert_eq!(
        put(&store, message("B", 0, body(0, 10))).status,
        PutMessageStatus::PutOk
    );
    let batch: Vec<_> = (1..=5).map(|i| message("B", 0, body(i, 100))).collect();
    let r = put_batch(&store, batch);
    assert_eq!(r.status, PutMessageStatus::PutOk);
    let a = r.append.unwrap();
    assert_eq!(a.queue_offset, 1);
    assert_eq!(a.msg_num, 5);
    assert_eq!(a.msg_ids.len(), 5);
    let recs = read_all(&store, "B", 0);
    assert_eq!(recs.len(), 6);
    for (k, rec) in recs.iter().enumerate().skip(1) {
        assert_eq!(rec.queue_offset, k as i64);
        assert_eq!(rec.body, body(k, 100));
        // One lock hold: one store timestamp for the whole batch.
        assert_eq!(rec.store_timestamp, a.store_timestamp);
    }
    assert_eq!(recs[1].physical_offset, a.wrote_offset);
    let total: usize = recs[1..].iter().map(|r| r.encoded_len()).sum();
    assert_eq!(total, a.wrote_bytes);
}

fn restart_continues_offsets(lock: PutLockKind, inside: bool) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), lock, inside);
    let last_end;
    {
        let store = MessageStore::open(cfg.clone()).unwrap();
        for i in 0..120 {
            assert_eq!(
                put(&store, message("R", 3, body(i, 700))).status,
                PutMessageStatus::PutOk
            );
        }
        last_end = store.max_wrote_offset();
    }
    let store = MessageStore::open(cfg).unwrap();
    assert_eq!(store.max_offset_in_queue("R", 3), 120);
    assert_eq!(store.commit_log_max_offset(), last_end);
    let a = put(&store, message("R", 3, body(120, 700))).append.unwrap();
    assert_eq!(a.queue_offset, 120);
    let recs = read_all(&store, "R", 3);
    assert_eq!(recs.len(), 121);
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r.body, body(i, 700));
    }
}

/// Damages the last record in the last file and checks recovery cuts it off.
fn torn_tail(lock: PutLockKind, inside: bool, damage: fn(&Path, usize, usize)) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), lock, inside);
    let last;
    {
        let store = MessageStore::open(cfg.clone()).unwrap();
        let mut a = None;
        for i in 0..70 {
            a = put(&store, message("T", 0, body(i, 900))).append;
        }
        last = a.unwrap();
    }
    let file_start = last.wrote_offset as usize / FILE_SIZE * FILE_SIZE;
    let f = dir
        .path()
        .join("commitlog")
        .join(format!("{file_start:020}"));
    let start = (last.wrote_offset as usize) % FILE_SIZE;
    damage(&f, start, last.wrote_bytes);
    let store = MessageStore::open(cfg).unwrap();
    assert_eq!(store.max_offset_in_queue("T", 0), 69);
    assert_eq!(store.commit_log_max_offset(), last.wrote_offset);
    let a = put(&store, message("T", 0, body(1000, 900)))
        .append
        .unwrap();
    assert_eq!(a.queue_offset, 69);
    assert_eq!(a.wrote_offset, last.wrote_offset);
    let recs = read_all(&store, "T", 0);
    assert_eq!(recs.len(), 70);
    assert_eq!(recs[69].body, body(1000, 900));
}

fn garble_body(f: &Path, start: usize, len: usize) {
    let mut data = std::fs::read(f).unwrap();
    data[start + len - 40] ^= 0x5a;
    std::fs::write(f, data).unwrap();
}

fn zero_the_end(f: &Path, start: usize, len: usize) {
    let mut data = std::fs::read(f).unwrap();
    for b in &mut data[start + len / 2..start + len] {
        *b = 0;
    }
    std::fs::write(f, data).unwrap();
}

fn cut_the_file(f: &Path, start: usize, len: usize) {
    let file = std::fs::OpenOptions::new().write(true).open(f).unwrap();
    file.set_len((start + len / 2) as u64).unwrap();
}

fn size_checks(lock: PutLockKind, inside: bool) {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), lock, inside)).unwrap();
    let big = put(&store, message("S", 0, vec![1; 16 * 1024 + 1]));
    assert_eq!(big.status, PutMessageStatus::MessageIllegal);
    let mut props = message("S", 0, vec![1]);
    props.properties = "K\u{1}".to_owned() + &"v".repeat(32767) + "\u{2}";
    assert_eq!(
        put(&store, props).status,
        PutMessageStatus::PropertiesSizeExceeded
    );
    let bad_topic = put(&store, message("../etc", 0, vec![1]));
    assert_eq!(bad_topic.status, PutMessageStatus::MessageIllegal);
    // A body at the limit: the 4.9.1+ encoder allows records up to maxMessageSize + 64 KiB, the
    // 4.3 in-lock append callback only up to maxMessageSize (§7.2).
    let at_limit = put(&store, message("S", 0, vec![1; 16 * 1024])).status;
    let fail_counted: u64 = store.runtime_info()["putMessageFailedTimes"]
        .parse()
        .unwrap();
    if inside {
        assert_eq!(at_limit, PutMessageStatus::MessageIllegal);
        assert_eq!(store.max_offset_in_queue("S", 0), 0);
        // Both oversized bodies were refused inside the lock; the properties and topic checks
        // came before the CommitLog and are not counted.
        assert_eq!(fail_counted, 2);
    } else {
        assert_eq!(at_limit, PutMessageStatus::PutOk);
        dispatched(&store);
        assert_eq!(store.max_offset_in_queue("S", 0), 1);
        // The encoder rejections (body, properties) count as failed puts; the topic check does not.
        assert_eq!(fail_counted, 2);
    }
}

fn concurrent_appends_are_complete(lock: PutLockKind, inside: bool) {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), lock, inside)).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..250 {
                    let r = put(&store, message("C", t, body(t as usize * 1000 + i, 200)));
                    assert_eq!(r.status, PutMessageStatus::PutOk);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for q in 0..4 {
        let recs = read_all(&store, "C", q);
        assert_eq!(recs.len(), 250);
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(r.body, body(q as usize * 1000 + i, 200));
        }
    }
    let info = store.runtime_info();
    assert_eq!(info["putMessageTimesTotal"], "1000");
}

macro_rules! suite {
    ($($name:ident),*) => {
        mod spin {
            use super::*;
            $( #[test] fn $name() { super::$name(PutLockKind::Spin, false); } )*
        }
        mod reentrant {
            use super::*;
            $( #[test] fn $name() { super::$name(PutLockKind::Reentrant, false); } )*
        }
        mod spin_encode_in_lock {
            use super::*;
            $( #[test] fn $name() { super::$name(PutLockKind::Spin, true); } )*
        }
        mod reentrant_encode_in_lock {
            use super::*;
            $( #[test] fn $name() { super::$name(PutLockKind::Reentrant, true); } )*
        }
    };
}

fn torn_tail_bad_crc(lock: PutLockKind, inside: bool) {
    torn_tail(lock, inside, garble_body);
}
fn torn_tail_zeroed(lock: PutLockKind, inside: bool) {
    torn_tail(lock, inside, zero_the_end);
}
fn torn_tail_short_file(lock: PutLockKind, inside: bool) {
    torn_tail(lock, inside, cut_the_file);
}

suite!(
    append_and_read_back,
    batch_gets_consecutive_offsets,
    restart_continues_offsets,
    torn_tail_bad_crc,
    torn_tail_zeroed,
    torn_tail_short_file,
    size_checks,
    concurrent_appends_are_complete
);

#[test]
fn get_message_statuses() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), PutLockKind::Reentrant, false)).unwrap();
    let r = store.get_message("nope", 0, 0, 32, 1 << 20);
    assert_eq!(r.status, GetMessageStatus::NoMatchedLogicQueue);
    for i in 0..3 {
        put(&store, message("G", 0, body(i, 10)));
    }
    dispatched(&store);
    assert_eq!(
        store.get_message("G", 0, 3, 32, 1 << 20).status,
        GetMessageStatus::OffsetOverflowOne
    );
    let bad = store.get_message("G", 0, 9, 32, 1 << 20);
    assert_eq!(bad.status, GetMessageStatus::OffsetOverflowBadly);
    assert_eq!(bad.next_begin_offset, 0);
    let one = store.get_message("G", 0, 1, 1, 1 << 20);
    assert_eq!(
        (one.status, one.msg_count, one.next_begin_offset),
        (GetMessageStatus::Found, 1, 2)
    );
    // The byte budget stops after the first message, which is always returned.
    let tight = store.get_message("G", 0, 0, 32, 1);
    assert_eq!(tight.msg_count, 1);
    assert_eq!((tight.min_offset, tight.max_offset), (0, 3));
}

#[test]
fn shutdown_refuses_puts_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), PutLockKind::Spin, false)).unwrap();
    assert_eq!(
        put(&store, message("X", 0, vec![1])).status,
        PutMessageStatus::PutOk
    );
    store.shutdown();
    store.shutdown();
    assert_eq!(
        put(&store, message("X", 0, vec![1])).status,
        PutMessageStatus::ServiceNotAvailable
    );
}

/// Audit #19 (fidelity-after-wave-3): an empty store's min offset is −1, as CommitLog
/// .getMinOffset returns without a first file (4.9.8 CommitLog l.928-939); 0 once a file exists.
#[test]
fn an_empty_store_reports_commit_log_min_offset_minus_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), PutLockKind::Reentrant, false)).unwrap();
    assert_eq!(store.runtime_info()["commitLogMinOffset"], "-1");
    put(&store, message("I", 0, vec![1; 100]));
    assert_eq!(store.runtime_info()["commitLogMinOffset"], "0");
}

#[test]
fn runtime_info_has_rocketmq_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), PutLockKind::Reentrant, false)).unwrap();
    put(&store, message("I", 0, vec![1; 100]));
    dispatched(&store);
    let info = store.runtime_info();
    for key in [
        "putMessageEntireTimeMax",
        "putMessageDistributeTime",
        "putLatency99",
        "putLatency999",
        "putTps",
        "putMessageTimesTotal",
        "putMessageSizeTotal",
        "putMessageFailedTimes",
        "putMessageAverageSize",
        "remainTransientStoreBufferNumbs",
        "remainHowManyDataToFlush",
        "commitLogMinOffset",
        "commitLogMaxOffset",
        "pageCacheLockTimeMills",
        "storePutLockMaxHoldMillis",
        "commitLogDirCapacity",
        "dispatchBehindBytes",
    ] {
        assert!(info.contains_key(key), "missing {key}");
    }
    assert!(!info.contains_key("remainHowManyDataToCommit"));
    assert_eq!(info["remainTransientStoreBufferNumbs"], "2147483647");
    assert_eq!(info["pageCacheLockTimeMills"], "0");
    assert_eq!(info["dispatchBehindBytes"], "0");
    assert!(info["commitLogDirCapacity"].starts_with("Total : "));
    assert_eq!(info["putMessageDistributeTime"], "null");
    assert_eq!(
        info["commitLogMaxOffset"],
        store.commit_log_max_offset().to_string()
    );
    let _: SocketAddr = store.config().store_host;
}
