//! Recovery against arbitrary damage: whatever bytes are written over the end of the CommitLog,
//! reopening never fails or panics, keeps every record that lies wholly before the damage, and
//! appends after what the rebuilt queue holds.
//!
//! Recovery checks what RocketMQ's `checkMessageAndReturnSize` checks: the lengths, the magic code
//! and the body CRC (`checkCRCOnRecover`). Header fields outside the body (QUEUEOFFSET, the
//! timestamps, the hosts) carry no checksum, so damage there passes recovery, and the consume-queue
//! rebuild then sees a record with a wrong queue offset. After an intact record that entry is
//! skipped (with the "[BUG]logic queue order maybe wrong" line), and so is every later one of the
//! queue; a wrong offset on the queue's very first record starts the queue wherever it says, as a
//! queue whose front retention deleted would. The prefix guarantee therefore holds from the first
//! intact record, and nothing is promised about the start of a queue whose first record is hit.

use std::path::Path;

use broker_under_test::store::{
    GetMessageStatus, MessageStore, PutMessage, PutMessageStatus, StoreConfig,
};
use proptest::prelude::*;
use remoting::message::decode_records;

mod store_util;
use store_util::{plain_message, put};

const FILE_SIZE: usize = 16 * 1024;

fn config(dir: &Path) -> StoreConfig {
    StoreConfig {
        store_path_root_dir: dir.to_path_buf(),
        mapped_file_size_commit_log: FILE_SIZE,
        max_message_size: 4096,
        ..StoreConfig::default()
    }
}

fn message(i: usize) -> PutMessage {
    plain_message("Rec", 1, vec![i as u8; 200 + i % 50], true)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn damage_anywhere_in_the_last_file_keeps_the_prefix(
        count in 1usize..120,
        damage_at in any::<prop::sample::Index>(),
        garbage in prop::collection::vec(any::<u8>(), 1..64),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut ends = Vec::new();
        {
            let store = MessageStore::open(config(dir.path())).unwrap();
            for i in 0..count {
                let a = put(&store, message(i)).append.unwrap();
                ends.push((a.wrote_offset, a.wrote_offset + a.wrote_bytes as i64));
            }
        }
        let last_end = ends.last().unwrap().1;
        let last_file_start = (last_end - 1) / FILE_SIZE as i64 * FILE_SIZE as i64;
        // Damage somewhere in the last file's used part (or just past it).
        let span = (last_end - last_file_start) as usize + 8;
        let at = last_file_start as usize + damage_at.index(span);
        let path = dir.path().join("commitlog").join(format!("{last_file_start:020}"));
        let mut data = std::fs::read(&path).unwrap();
        let local = at - last_file_start as usize;
        let end = (local + garbage.len()).min(FILE_SIZE);
        let before = data[local..end].to_vec();
        data[local..end].copy_from_slice(&garbage[..end - local]);
        let changed = before != data[local..end];
        std::fs::write(&path, data).unwrap();

        let store = MessageStore::open(config(dir.path())).unwrap();
        let kept = store.max_offset_in_queue("Rec", 1) as usize;
        // Every record wholly before the first changed byte survives.
        let first_changed = at as i64;
        let intact = ends.iter().filter(|(_, e)| *e <= first_changed).count();
        prop_assert!(kept >= intact, "kept {kept} < intact {intact}");
        if !changed {
            prop_assert_eq!(kept, count);
        }
        if intact > 0 || !changed {
            // The queue starts at 0 and every record it holds is one of ours, in order.
            prop_assert!(kept <= count);
            prop_assert_eq!(store.min_offset_in_queue("Rec", 1), 0);
            let got = store.get_message("Rec", 1, 0, 1000, 1 << 24);
            prop_assert_eq!(got.status, GetMessageStatus::Found);
            let recs = decode_records(&got.body).unwrap();
            prop_assert_eq!(recs.len(), kept);
            for (i, r) in recs.iter().enumerate() {
                prop_assert_eq!(&r.body, &message(i).body.to_vec());
            }
        }
        let r = put(&store, message(kept));
        prop_assert_eq!(r.status, PutMessageStatus::PutOk);
        prop_assert_eq!(r.append.unwrap().queue_offset, kept as i64);
    }
}

/// The input fresh-clone CI found (seed-independent here): 28 bytes over the first record from
/// byte 20: QUEUEOFFSET, PHYSICALOFFSET, SYSFLAG and BORNTIMESTAMP. The body CRC still matches and
/// the lengths still agree, so recovery keeps all 44 records; the first one's queue offset is now
/// out of range and its entry is skipped, so the rebuilt queue starts at 1 and the other 43 are
/// read at their own offsets.
#[test]
fn damage_to_the_first_records_queue_offset_starts_the_queue_at_the_second() {
    let dir = tempfile::tempdir().unwrap();
    let count = 44;
    let mut end = 0;
    {
        let store = MessageStore::open(config(dir.path())).unwrap();
        for i in 0..count {
            let a = put(&store, message(i)).append.unwrap();
            end = a.wrote_offset + a.wrote_bytes as i64;
        }
    }
    // Where `prop::sample::Index(26561186571216058)` lands in the proptest's span.
    let span = end as u128 + 8;
    let at = ((span * 26_561_186_571_216_058) >> 64) as usize;
    let garbage: [u8; 28] = [
        80, 110, 178, 62, 102, 138, 52, 160, 1, 107, 105, 77, 111, 1, 89, 60, 117, 72, 38, 201,
        174, 57, 115, 249, 145, 247, 70, 137,
    ];
    let path = dir.path().join("commitlog").join(format!("{:020}", 0));
    let mut data = std::fs::read(&path).unwrap();
    data[at..at + garbage.len()].copy_from_slice(&garbage);
    std::fs::write(&path, data).unwrap();
    assert_eq!(at, 20, "the damage starts at QUEUEOFFSET");

    let store = MessageStore::open(config(dir.path())).unwrap();
    assert_eq!(store.min_offset_in_queue("Rec", 1), 1);
    assert_eq!(store.max_offset_in_queue("Rec", 1), count as i64);
    let got = store.get_message("Rec", 1, 0, 1000, 1 << 24);
    assert_eq!(got.status, GetMessageStatus::OffsetTooSmall);
    assert_eq!(got.next_begin_offset, 1);
    let got = store.get_message("Rec", 1, 1, 1000, 1 << 24);
    assert_eq!(got.status, GetMessageStatus::Found);
    let recs = decode_records(&got.body).unwrap();
    assert_eq!(recs.len(), count - 1);
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r.body, message(i + 1).body.to_vec());
        assert_eq!(r.queue_offset, i as i64 + 1);
    }
    let r = put(&store, message(count));
    assert_eq!(r.status, PutMessageStatus::PutOk);
    assert_eq!(r.append.unwrap().queue_offset, count as i64);
}
