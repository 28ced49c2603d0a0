//! Retention and disk space through the wire (retention reference part A): with 1 MiB files and
//! a reserved time of seconds, old CommitLog files go, the mapped bytes drop, the min offsets
//! move, a pull below the min gets 21 and goes on from the new min, and nothing acknowledged
//! inside the retained range is lost; with the store folder capped, a fuller disk than the
//! warning ratio refuses sends with 14 and freeing space makes them succeed again.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{props, pull_header, remark, send_v2, Client, TestBroker};
use remoting::{message::decode_records, RemotingCommand, RequestCode};

const TOPIC: &str = "Retained";
const BODY: usize = 4000;

/// Every hour of the day, so age-based deletion runs whenever the test does.
const EVERY_HOUR: &str = "00;01;02;03;04;05;06;07;08;09;10;11;12;13;14;15;16;17;18;19;20;21;22;23";

fn body(seq: u32) -> Vec<u8> {
    let mut b = vec![b'.'; BODY];
    let tag = format!("seq={seq:08};");
    b[..tag.len()].copy_from_slice(tag.as_bytes());
    b
}

fn seq_of(body: &[u8]) -> u32 {
    std::str::from_utf8(&body[4..12]).unwrap().parse().unwrap()
}

/// Sends `seq`, returning (code, queue offset when acknowledged, remark).
async fn send(c: &mut Client, seq: u32) -> (i32, Option<i64>, String) {
    let o = c.opaque();
    let mut cmd = send_v2(o, TOPIC, 0, &body(seq));
    cmd.ext_fields
        .insert("i".into(), props(&[("WAIT", "true")]));
    let r = c.call(cmd).await;
    let q = r.ext("queueOffset").and_then(|v| v.parse().ok());
    (
        r.code,
        if r.code == 0 { q } else { None },
        remark(&r).to_owned(),
    )
}

async fn pull(c: &mut Client, offset: i64) -> RemotingCommand {
    let o = c.opaque();
    let h = pull_header("far-behind", TOPIC, 0, offset, 32);
    c.call(RemotingCommand::request(RequestCode::PULL_MESSAGE, o).with_header(&h))
        .await
}

fn num(info: &BTreeMap<String, String>, key: &str) -> f64 {
    info.get(key)
        .unwrap_or_else(|| panic!("runtime info lacks {key}"))
        .parse()
        .unwrap_or_else(|_| panic!("{key}={:?}", info[key]))
}

fn commit_log_files(b: &TestBroker) -> usize {
    std::fs::read_dir(b.dir.path().join("commitlog"))
        .unwrap()
        .count()
}

#[tokio::test]
async fn old_files_go_min_offsets_move_and_a_far_behind_pull_gets_21() {
    let b = TestBroker::start(&[
        ("mappedFileSizeCommitLog", "1048576"),
        ("maxMessageSize", "65536"),
        ("injectFileReservedSeconds", "2"),
        ("deleteWhen", EVERY_HOUR),
        ("injectCleanFirstDelayMillis", "0"),
        ("cleanResourceInterval", "300"),
        ("deleteCommitLogFilesInterval", "0"),
    ])
    .await;
    let mut c = b.client().await;
    // Rounds of ~2 MiB while files age out: every acknowledged message is kept as (offset, seq).
    let mut acked: BTreeMap<i64, u32> = BTreeMap::new();
    let mut seq = 0u32;
    let mut peak_mapped = 0.0f64;
    let mut min_offsets = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while min_offsets.len() < 3 {
        assert!(
            Instant::now() < deadline,
            "min offset moved only {min_offsets:?}"
        );
        for _ in 0..500 {
            let (code, q, rm) = send(&mut c, seq).await;
            assert_eq!(code, 0, "{rm}");
            acked.insert(q.unwrap(), seq);
            seq += 1;
        }
        let info = c.runtime_info().await;
        peak_mapped = peak_mapped.max(num(&info, "storeMappedBytes"));
        let min = num(&info, "commitLogMinOffset") as i64;
        if min > 0 && min_offsets.last() != Some(&min) {
            min_offsets.push(min);
        }
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    // Quiet now: wait until every file but the last is gone (the writer is idle, so they age).
    let deadline = Instant::now() + Duration::from_secs(30);
    let info = loop {
        let info = c.runtime_info().await;
        // A reader may still hold a deleted file for a moment: its map goes with that reader.
        if num(&info, "storeCommitLogFileCount") == 1.0
            && num(&info, "storeMappedBytes") <= 2.0 * 1048576.0
        {
            break info;
        }
        assert!(Instant::now() < deadline, "files remain: {info:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(num(&info, "storeDeletedCommitLogFiles") >= 4.0);
    // Mapped memory: the last file and the pre-created next one, far below the peak.
    let mapped = num(&info, "storeMappedBytes");
    assert!(
        mapped <= 2.0 * 1048576.0,
        "mapped {mapped} of peak {peak_mapped}"
    );
    assert!(peak_mapped >= 4.0 * 1048576.0, "peak {peak_mapped}");
    assert!(
        commit_log_files(&b) <= 2,
        "files on disk: {}",
        commit_log_files(&b)
    );
    let cl_min = num(&info, "commitLogMinOffset") as i64;
    assert_eq!(cl_min % 1048576, 0);
    assert!(cl_min > *min_offsets.last().unwrap() - 1);

    // The consume queue's min followed: a pull at 0 gets 21 with the new min.
    let r = pull(&mut c, 0).await;
    assert_eq!((r.code, remark(&r)), (21, "OFFSET_TOO_SMALL"));
    let next: i64 = r.ext("nextBeginOffset").unwrap().parse().unwrap();
    let min: i64 = r.ext("minOffset").unwrap().parse().unwrap();
    assert_eq!(next, min);
    assert!(next > 0);
    // ... and goes on from there: every acknowledged message from the min on is there, in order.
    let max = *acked.keys().last().unwrap() + 1;
    let mut offset = next;
    while offset < max {
        let r = pull(&mut c, offset).await;
        assert_eq!(r.code, 0, "pull at {offset}: {:?}", r.remark);
        for rec in decode_records(&r.body).expect("records") {
            assert_eq!(rec.queue_offset, offset);
            assert!(rec.physical_offset >= cl_min);
            assert_eq!(seq_of(&rec.body), acked[&offset], "offset {offset}");
            offset += 1;
        }
    }
    // The retained range is exactly what the first CommitLog file holds on: the message just
    // below the min lies in a deleted file.
    assert!(acked.contains_key(&(next - 1)));
    b.stop().await;
}

#[tokio::test]
async fn over_the_warning_ratio_sends_get_14_and_succeed_once_space_returns() {
    // 4.8+ names the disk among other causes; up to 4.7 it said "maybe disk full".
    disk_full_and_back(
        "5.3",
        "service not available now. It may be caused by one of the following reasons: \
         the broker's disk is full [CL:  0.9",
        "], messages are put to the slave, message store has been shut down, etc.",
    )
    .await;
    // 4.9's 10 s disk check sets and clears the flag too (first run after 1 s).
    disk_full_and_back(
        "4.9",
        "service not available now. It may be caused by one of the following reasons: \
         the broker's disk is full [CL:  0.9",
        "], messages are put to the slave, message store has been shut down, etc.",
    )
    .await;
    disk_full_and_back(
        "4.3",
        "service not available now, maybe disk full, CL:  0.9",
        " maybe your broker machine memory too small.",
    )
    .await;
}

async fn disk_full_and_back(profile: &str, starts: &str, ends: &str) {
    let cap: u64 = 8 << 20;
    let b = TestBroker::start(&[
        ("brokerVersionProfile", profile),
        ("mappedFileSizeCommitLog", "1048576"),
        ("maxMessageSize", "65536"),
        ("injectStoreSizeCapBytes", &cap.to_string()),
        ("injectCleanFirstDelayMillis", "0"),
        ("cleanResourceInterval", "100"),
        // Nothing the broker may delete: the space comes back from outside.
        ("cleanFileForciblyEnable", "false"),
    ])
    .await;
    let mut c = b.client().await;
    let (code, _, rm) = send(&mut c, 0).await;
    assert_eq!(code, 0, "{rm}");
    assert_eq!(c.runtime_info().await["storeWriteable"], "true");
    // Another tenant fills the disk past 90%.
    let ballast = b.dir.path().join("ballast");
    std::fs::write(&ballast, vec![7u8; (cap as usize) * 92 / 100]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let (refused_remark, mut seq) = loop {
        let (code, _, rm) = send(&mut c, 1).await;
        if code == 14 {
            break (rm, 2);
        }
        assert_eq!(code, 0, "{rm}");
        assert!(Instant::now() < deadline, "never refused");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(refused_remark.starts_with(starts), "{refused_remark}");
    assert!(refused_remark.ends_with(ends), "{refused_remark}");
    let info = c.runtime_info().await;
    assert_eq!(info["storeWriteable"], "false");
    assert!(num(&info, "commitLogDiskRatio") > 0.90, "{info:?}");
    assert!(num(&info, "consumeQueueDiskRatio") > 0.90);
    // Refusals are steady while the disk stays full; pulls still work.
    for _ in 0..5 {
        assert_eq!(send(&mut c, seq).await.0, 14);
        seq += 1;
    }
    assert_eq!(pull(&mut c, 0).await.code, 0);
    // Space comes back: the next clean round clears DISK_FULL.
    std::fs::remove_file(&ballast).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, _, rm) = send(&mut c, seq).await;
        seq += 1;
        if code == 0 {
            break;
        }
        assert_eq!(code, 14, "{rm}");
        assert!(Instant::now() < deadline, "still refused");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let info = c.runtime_info().await;
    assert_eq!(info["storeWriteable"], "true");
    assert!(num(&info, "storeNotWriteableRefusals") >= 6.0);
    b.stop().await;
}
