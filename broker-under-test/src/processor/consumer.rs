//! QUERY_CONSUMER_OFFSET (14) and UPDATE_CONSUMER_OFFSET (15) over an in-memory offset table
//! (ConsumerManageProcessor).

use remoting::{
    headers::{
        QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader,
        UpdateConsumerOffsetRequestHeader,
    },
    RemotingCommand, RequestCode, ResponseCode,
};

use crate::{broker::Broker, dispatch::response, processor::header::header_error};

pub fn process(broker: &Broker, request: &RemotingCommand) -> RemotingCommand {
    let profile = broker.config.profile;
    if request.code == RequestCode::UPDATE_CONSUMER_OFFSET.as_i32() {
        let h = match request.header::<UpdateConsumerOffsetRequestHeader>() {
            Ok(h) => h,
            Err(e) => return header_error(broker, request, &e),
        };
        broker
            .offsets
            .commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
        return response(profile, request, ResponseCode::SUCCESS, None);
    }
    let h = match request.header::<QueryConsumerOffsetRequestHeader>() {
        Ok(h) => h,
        Err(e) => return header_error(broker, request, &e),
    };
    let stored = broker
        .offsets
        .query(&h.consumer_group, &h.topic, h.queue_id);
    let offset = match stored {
        Some(o) => Some(o),
        // A group that never committed reads from 0 while the queue still starts at 0.
        None if broker.store.min_offset_in_queue(&h.topic, h.queue_id) <= 0 => Some(0),
        None => None,
    };
    match offset {
        Some(offset) => response(profile, request, ResponseCode::SUCCESS, None)
            .with_header(&QueryConsumerOffsetResponseHeader { offset }),
        None => response(
            profile,
            request,
            ResponseCode::QUERY_NOT_FOUND,
            Some("Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first".into()),
        ),
    }
}
