//! QUERY_CONSUMER_OFFSET (14) and UPDATE_CONSUMER_OFFSET (15) (ConsumerManageProcessor,
//! consumer §6.3), each as the version profile's RocketMQ answers; GET_CONSUMER_LIST_BY_GROUP
//! (38, §5.5); GET_MAX_OFFSET / GET_MIN_OFFSET (30/31, the admin processor's in RocketMQ).

use remoting::{
    headers::{
        ConsumerGroupHeader, GetQueueOffsetRequestHeader, GetQueueOffsetResponseHeader,
        QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader,
        UpdateConsumerOffsetRequestHeader,
    },
    message::decode_records,
    HeaderError, RemotingCommand, RequestCode, ResponseCode,
};

use crate::{
    broker::Broker, consumer::memory, dispatch::response, processor::header::header_error,
};

const NOT_FOUND: &str = "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first";
const NOT_FOUND_NO_ZERO: &str = "Not found, do not set to zero, maybe this group boot first";

pub fn process(broker: &Broker, request: &RemotingCommand) -> RemotingCommand {
    match RequestCode::from_i32(request.code) {
        Some(RequestCode::UPDATE_CONSUMER_OFFSET) => update(broker, request),
        Some(RequestCode::GET_CONSUMER_LIST_BY_GROUP) => consumer_list(broker, request),
        Some(RequestCode::GET_MAX_OFFSET | RequestCode::GET_MIN_OFFSET) => {
            queue_offset(broker, request)
        }
        _ => query(broker, request),
    }
}

fn consumer_list(broker: &Broker, request: &RemotingCommand) -> RemotingCommand {
    let profile = broker.config.profile;
    let h = match request.header::<ConsumerGroupHeader>() {
        Ok(h) => h,
        Err(e) => return header_error(broker, request, &e),
    };
    match broker.consumers.client_ids(&h.consumer_group) {
        Some(ids) => {
            let body = serde_json::json!({ "consumerIdList": ids }).to_string();
            response(profile, request, ResponseCode::SUCCESS, None).with_body(body.into_bytes())
        }
        None => response(
            profile,
            request,
            ResponseCode::SYSTEM_ERROR,
            Some(format!("no consumer for this group, {}", h.consumer_group)),
        ),
    }
}

/// The consume queue's max (next to write) or min offset; 0 for an unknown queue.
fn queue_offset(broker: &Broker, request: &RemotingCommand) -> RemotingCommand {
    let h = match request.header::<GetQueueOffsetRequestHeader>() {
        Ok(h) => h,
        Err(e) => return header_error(broker, request, &e),
    };
    let offset = if request.code == RequestCode::GET_MAX_OFFSET.as_i32() {
        broker.store.max_offset_in_queue(&h.topic, h.queue_id)
    } else {
        broker.store.min_offset_in_queue(&h.topic, h.queue_id)
    };
    response(broker.config.profile, request, ResponseCode::SUCCESS, None)
        .with_header(&GetQueueOffsetResponseHeader { offset })
}

fn update(broker: &Broker, request: &RemotingCommand) -> RemotingCommand {
    let profile = broker.config.profile;
    let h = match request.header::<UpdateConsumerOffsetRequestHeader>() {
        Ok(h) => h,
        // 5.3.3 checks the two numbers itself and answers INVALID_PARAMETER.
        Err(HeaderError::Missing(field @ ("queueId" | "commitOffset"))) if !profile.is_4x() => {
            let topic = request.ext("topic").unwrap_or("null");
            let what = if field == "queueId" {
                "QueueId"
            } else {
                "Offset"
            };
            return response(
                profile,
                request,
                ResponseCode::INVALID_PARAMETER,
                Some(format!("{what} is null, topic is {topic}")),
            );
        }
        Err(e) => return header_error(broker, request, &e),
    };
    if !profile.is_4x() {
        // 5.3.3: no auto-creation here; the group and the topic must exist.
        if broker.groups.get(&h.consumer_group).is_none() {
            return response(
                profile,
                request,
                ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
                Some(format!("Group {} not exist!", h.consumer_group)),
            );
        }
        if broker.topics.get(&h.topic).is_none() {
            return response(
                profile,
                request,
                ResponseCode::TOPIC_NOT_EXIST,
                Some(format!("Topic {} not exist!", h.topic)),
            );
        }
    }
    broker
        .offsets
        .commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
    response(profile, request, ResponseCode::SUCCESS, None)
}

fn query(broker: &Broker, request: &RemotingCommand) -> RemotingCommand {
    let profile = broker.config.profile;
    let h = match request.header::<QueryConsumerOffsetRequestHeader>() {
        Ok(h) => h,
        Err(e) => return header_error(broker, request, &e),
    };
    let found = |offset| {
        response(profile, request, ResponseCode::SUCCESS, None)
            .with_header(&QueryConsumerOffsetResponseHeader { offset })
    };
    let not_found = |remark: &str| {
        response(
            profile,
            request,
            ResponseCode::QUERY_NOT_FOUND,
            Some(remark.to_owned()),
        )
    };
    // queryOffset answers −1 for "none"; a stored negative value reads the same.
    match broker
        .offsets
        .query(&h.consumer_group, &h.topic, h.queue_id)
    {
        Some(o) if o >= 0 => return found(o),
        _ => {}
    }
    if !profile.is_4x() && h.set_zero_if_not_found == Some(false) {
        return not_found(NOT_FOUND_NO_ZERO);
    }
    if broker.store.min_offset_in_queue(&h.topic, h.queue_id) > 0 {
        return not_found(NOT_FOUND);
    }
    if zero_is_in_memory(broker, &h.topic, h.queue_id) {
        found(0)
    } else {
        not_found(NOT_FOUND)
    }
}

/// Whether a group without an offset starts this queue at 0 (consumer §6.3, §8.6): 4.x when the
/// entry at offset 0 is not "on disk" by the distance test (an empty queue included); 5.3.3 only
/// when that entry exists and its CommitLog pages are in the page cache.
fn zero_is_in_memory(broker: &Broker, topic: &str, queue_id: i32) -> bool {
    let got = broker.store.get_message(topic, queue_id, 0, 1, usize::MAX);
    let first = decode_records(&got.body)
        .ok()
        .and_then(|r| r.into_iter().next());
    let Some(first) = first else {
        return broker.config.profile.is_4x();
    };
    if broker.config.profile.is_4x() {
        memory::in_memory_by_distance(
            broker.store.commit_log_max_offset(),
            first.physical_offset,
            broker.config.access_message_in_memory_max_ratio,
        )
    } else {
        let store = broker.store.config();
        memory::resident(
            &store.store_path_root_dir.join("commitlog"),
            store.mapped_file_size_commit_log as i64,
            first.physical_offset,
            got.body.len(),
        )
        .unwrap_or(false)
    }
}
