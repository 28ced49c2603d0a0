//! PULL_MESSAGE (11): PullMessageProcessor without long polling. The body is the concatenated
//! CommitLog records (reference §7.6), so tests and tools can read back exactly what was stored.

use std::net::SocketAddr;

use remoting::{
    headers::{PullMessageRequestHeader, PullMessageResponseHeader},
    RemotingCommand, ResponseCode,
};

use crate::{
    broker::{Broker, PERM_READ},
    dispatch::response,
    processor::{header::header_error, send::FAQ_SUFFIX},
    store::GetMessageStatus,
};

/// MessageStoreConfig.maxTransferBytesOnMessageInMemory: the default byte limit of one pull.
pub const MAX_TRANSFER_BYTES: i32 = 256 * 1024;

pub fn process(broker: &Broker, request: &RemotingCommand, peer: SocketAddr) -> RemotingCommand {
    let profile = broker.config.profile;
    let h = match request.header::<PullMessageRequestHeader>() {
        Ok(h) => h,
        Err(e) => return header_error(broker, request, &e),
    };
    let Some(topic) = broker.topics.get(&h.topic) else {
        return response(
            profile,
            request,
            ResponseCode::TOPIC_NOT_EXIST,
            Some(format!(
                "topic[{}] not exist, apply first please! {FAQ_SUFFIX}",
                h.topic
            )),
        );
    };
    if topic.perm & PERM_READ == 0 {
        return response(
            profile,
            request,
            ResponseCode::NO_PERMISSION,
            Some(format!(
                "the topic[{}] pulling message is forbidden",
                h.topic
            )),
        );
    }
    if h.queue_id < 0 || h.queue_id >= topic.read_queue_nums {
        return response(
            profile,
            request,
            ResponseCode::SYSTEM_ERROR,
            Some(format!(
                "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}] consumer:[/{}]",
                h.queue_id,
                h.topic,
                topic.read_queue_nums,
                // Java prints the channel's SocketAddress, which starts with a slash.
                peer
            )),
        );
    }
    // The store applies its own per-pull limits on top of the client's.
    let max_nums = h.max_msg_nums.max(1);
    let max_bytes = h.max_msg_bytes.unwrap_or(MAX_TRANSFER_BYTES).max(1) as usize;
    let got = broker
        .store
        .get_message(&h.topic, h.queue_id, h.queue_offset, max_nums, max_bytes);
    use GetMessageStatus as S;
    let code = match got.status {
        S::Found => ResponseCode::SUCCESS,
        S::NoMessageInQueue | S::NoMatchedLogicQueue if h.queue_offset != 0 => {
            ResponseCode::PULL_OFFSET_MOVED
        }
        S::NoMessageInQueue | S::NoMatchedLogicQueue => ResponseCode::PULL_NOT_FOUND,
        S::OffsetFoundNull | S::OffsetOverflowOne => ResponseCode::PULL_NOT_FOUND,
        S::OffsetOverflowBadly | S::OffsetTooSmall => ResponseCode::PULL_OFFSET_MOVED,
    };
    let header = PullMessageResponseHeader {
        suggest_which_broker_id: 0,
        next_begin_offset: got.next_begin_offset,
        min_offset: got.min_offset,
        max_offset: got.max_offset,
    };
    let remark = status_name(got.status);
    let r = response(profile, request, code, Some(remark.into())).with_header(&header);
    if code == ResponseCode::SUCCESS {
        r.with_body(got.body)
    } else {
        r
    }
}

/// GetMessageStatus.name(), which RocketMQ puts in the remark.
fn status_name(s: GetMessageStatus) -> &'static str {
    use GetMessageStatus as S;
    match s {
        S::Found => "FOUND",
        S::NoMessageInQueue => "NO_MESSAGE_IN_QUEUE",
        S::OffsetFoundNull => "OFFSET_FOUND_NULL",
        S::OffsetOverflowOne => "OFFSET_OVERFLOW_ONE",
        S::OffsetOverflowBadly => "OFFSET_OVERFLOW_BADLY",
        S::OffsetTooSmall => "OFFSET_TOO_SMALL",
        S::NoMatchedLogicQueue => "NO_MATCHED_LOGIC_QUEUE",
    }
}
