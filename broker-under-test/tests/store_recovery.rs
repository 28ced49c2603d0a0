//! Recovery against arbitrary damage: whatever bytes are written over the end of the CommitLog,
//! reopening never fails or panics, keeps every record that lies wholly before the damage, and
//! appends after the surviving prefix.

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
        prop_assert!(kept <= count);
        if !changed {
            prop_assert_eq!(kept, count);
        }
        let got = store.get_message("Rec", 1, 0, 1000, 1 << 24);
        if kept > 0 {
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
