//! The read path for PULL_MESSAGE: a consume-queue lookup, then the CommitLog records copied out.

use super::commitlog::CommitLog;
use super::config::OffsetCorrection;
use super::types::{GetMessageResult, GetMessageStatus};

/// `nextOffsetCorrection(old, new)` (4.9.8 DefaultMessageStore l.1255-1261, 5.3.3 l.1729-1736,
/// 4.3.2 l.1110-1116): a SLAVE without `offsetCheckInSlave` keeps the requested offset.
fn corrected(correction: OffsetCorrection, requested: i64, new: i64) -> i64 {
    match correction {
        OffsetCorrection::Correct => new,
        OffsetCorrection::KeepRequested => requested,
    }
}

/// Reads up to `max_msg_nums` messages (and roughly `max_total_bytes`) from a queue, like
/// `DefaultMessageStore.getMessage` without the subscription filter. Every out-of-range answer
/// goes through [`corrected`], as RocketMQ's does.
pub(super) fn get_message(
    log: &CommitLog,
    correction: OffsetCorrection,
    topic: &str,
    queue_id: i32,
    offset: i64,
    max_msg_nums: i32,
    max_total_bytes: usize,
) -> GetMessageResult {
    let mut result = GetMessageResult {
        status: GetMessageStatus::NoMatchedLogicQueue,
        body: Vec::new(),
        msg_count: 0,
        next_begin_offset: offset,
        min_offset: 0,
        max_offset: 0,
    };
    let Some(cq) = log.consume_queues.find(topic, queue_id) else {
        result.next_begin_offset = corrected(correction, offset, 0);
        return result;
    };
    let min = cq.min_offset();
    let max = cq.max_offset();
    result.min_offset = min;
    result.max_offset = max;
    if max == 0 {
        result.status = GetMessageStatus::NoMessageInQueue;
        result.next_begin_offset = corrected(correction, offset, 0);
    } else if offset < min {
        result.status = GetMessageStatus::OffsetTooSmall;
        result.next_begin_offset = corrected(correction, offset, min);
    } else if offset == max {
        result.status = GetMessageStatus::OffsetOverflowOne;
        result.next_begin_offset = offset;
    } else if offset > max {
        result.status = GetMessageStatus::OffsetOverflowBadly;
        // 4.3's rule; the pull path applies 4.9.4+'s (always max) on top.
        let new = if min == 0 { min } else { max };
        result.next_begin_offset = corrected(correction, offset, new);
    } else {
        result.status = GetMessageStatus::OffsetFoundNull;
        let max_nums = max_msg_nums.max(1) as usize;
        let mut next = offset;
        while next < max && result.msg_count < max_nums {
            let Some(entry) = cq.get(next) else { break };
            let size = entry.size.max(0) as usize;
            // The first message is always returned, even if larger than the byte budget.
            if result.msg_count > 0 && result.body.len() + size > max_total_bytes {
                break;
            }
            next += 1;
            if log.read(entry.commit_log_offset, size, &mut result.body) {
                result.msg_count += 1;
                result.status = GetMessageStatus::Found;
            } else if result.msg_count == 0 && entry.commit_log_offset < log.min_offset() {
                // The record's file was deleted before the queue's min caught up.
                result.status = GetMessageStatus::MessageWasRemoving;
            }
        }
        result.next_begin_offset = next;
    }
    result
}
