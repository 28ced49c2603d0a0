//! DefaultMessageStore.getMessage's per-pull limits and TAG filter, on top of the store's plain
//! read (consumer §2.2, §4): consume-queue entries are scanned from the requested offset; an
//! entry whose tag hash the subscription does not want is skipped but counted; the batch is full
//! at `maxMsgNums`, or at the in-memory / on-disk count and byte limits chosen per entry by the
//! distance test; at most max(800, maxMsgNums) entries are examined, never across a
//! consume-queue file.

use remoting::message::{decode_record, property, RecordAt, PROPERTY_TAGS};

use crate::{
    broker::Broker,
    consumer::{
        filter::{java_string_hash, TagFilter},
        memory,
    },
    keys::VersionProfile,
    store::{GetMessageStatus, OffsetCorrection},
};

/// Consume-queue entries per file (`mappedFileSizeConsumeQueue` / 20).
const CQ_ENTRIES_PER_FILE: i64 = 300_000;
/// 16000 bytes of consume queue: the least number of entries one pull examines.
const MIN_FILTER_SCAN: usize = 800;
/// Entries fetched from the store per round of the scan.
const CHUNK: i32 = 64;

/// What a pull read: the store's status, or NO_MATCHED_MESSAGE when every entry scanned was
/// filtered out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadStatus {
    Store(GetMessageStatus),
    NoMatchedMessage,
}

#[derive(Debug)]
pub struct PullRead {
    pub status: ReadStatus,
    pub body: Vec<u8>,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
}

/// The limits that apply to one entry.
struct Limits {
    max_msg_nums: usize,
    in_memory: (usize, usize),
    on_disk: (usize, usize),
}

impl Limits {
    /// isTheBatchFull: never before the first message.
    fn full(&self, size: usize, bytes: usize, count: usize, in_disk: bool) -> bool {
        if bytes == 0 || count == 0 {
            return false;
        }
        if count >= self.max_msg_nums {
            return true;
        }
        let (max_count, max_bytes) = if in_disk {
            self.on_disk
        } else {
            self.in_memory
        };
        bytes + size > max_bytes || count > max_count - 1
    }
}

pub fn read(
    broker: &Broker,
    topic: &str,
    queue_id: i32,
    offset: i64,
    max_msg_nums: i32,
    filter: &TagFilter,
) -> PullRead {
    let store = &broker.store;
    let cfg = &broker.config;
    let limits = Limits {
        max_msg_nums: max_msg_nums.max(1) as usize,
        in_memory: cfg.max_transfer_in_memory,
        on_disk: cfg.max_transfer_on_disk,
    };
    let chunk_bytes = limits.in_memory.1.max(limits.on_disk.1);
    let mut first = store.get_message(topic, queue_id, offset, CHUNK, chunk_bytes);
    if first.status == GetMessageStatus::NoMatchedLogicQueue {
        // RocketMQ's lookup creates the consume queue, so a known topic's unwritten queue
        // reads as an empty one.
        first.status = GetMessageStatus::NoMessageInQueue;
    }
    let mut out = PullRead {
        status: ReadStatus::Store(first.status),
        body: Vec::new(),
        next_begin_offset: first.next_begin_offset,
        min_offset: first.min_offset,
        max_offset: first.max_offset,
    };
    if first.status == GetMessageStatus::OffsetOverflowBadly
        && cfg.profile != VersionProfile::V4_3
        && cfg.store.offset_correction == OffsetCorrection::Correct
    {
        // 4.9.4 (issue #4215): the next offset is the max, no longer 0 for a queue starting at 0
        // (still through nextOffsetCorrection: a SLAVE keeps the requested offset).
        out.next_begin_offset = first.max_offset;
    }
    if first.status != GetMessageStatus::Found {
        return out;
    }
    let budget = memory::total_physical_memory() / 100 * cfg.access_message_in_memory_max_ratio;
    let commit_max = store.commit_log_max_offset();
    let file_end = (offset / CQ_ENTRIES_PER_FILE + 1) * CQ_ENTRIES_PER_FILE;
    let max_scan = MIN_FILTER_SCAN
        .max(limits.max_msg_nums)
        .min((file_end - offset) as usize);
    let (mut scanned, mut count) = (0usize, 0usize);
    let mut chunk = first;
    'scan: loop {
        let mut pos = 0;
        while pos < chunk.body.len() {
            let Ok(RecordAt::Message { record, len }) = decode_record(&chunk.body[pos..], false)
            else {
                break 'scan;
            };
            if scanned >= max_scan {
                break 'scan;
            }
            let in_disk = (commit_max - record.physical_offset).max(0) as u64 > budget;
            if limits.full(len, out.body.len(), count, in_disk) {
                break 'scan;
            }
            scanned += 1;
            let code = property(&record.properties, PROPERTY_TAGS).map_or(0, java_string_hash);
            if filter.matches_code(Some(code as i64)) {
                out.body.extend_from_slice(&chunk.body[pos..pos + len]);
                count += 1;
            }
            pos += len;
        }
        let next = offset + scanned as i64;
        if scanned >= max_scan || next >= out.max_offset {
            break;
        }
        chunk = store.get_message(topic, queue_id, next, CHUNK, chunk_bytes);
        if chunk.status != GetMessageStatus::Found {
            break;
        }
    }
    out.next_begin_offset = offset + scanned as i64;
    out.status = if count > 0 {
        ReadStatus::Store(GetMessageStatus::Found)
    } else {
        ReadStatus::NoMatchedMessage
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_full_follows_is_the_batch_full() {
        let l = Limits {
            max_msg_nums: 32,
            in_memory: (32, 256 * 1024),
            on_disk: (8, 64 * 1024),
        };
        assert!(
            !l.full(10 << 20, 0, 0, true),
            "the first message always fits"
        );
        assert!(l.full(1, 100, 8, true));
        assert!(!l.full(1, 100, 8, false));
        assert!(l.full(1, 100, 32, false));
        assert!(l.full(200 * 1024, 100 * 1024, 1, false));
        assert!(l.full(1, 64 * 1024, 1, true));
    }
}
