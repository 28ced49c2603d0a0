//! One processor per file; each turns a [`RequestTask`] into an answer on the task's connection.

pub mod admin;
pub mod consumer;
pub mod end_transaction;
pub mod heartbeat;
pub mod pull;
pub mod send;

use std::sync::Arc;

use remoting::{HeaderError, RemotingCommand, ResponseCode};

use crate::{
    broker::Broker,
    dispatch::{answer, response, AnswerSource, ProcessorKind, RequestTask},
};

/// Runs `task` on the current executor thread.
pub fn process(broker: &Arc<Broker>, task: RequestTask) {
    let reply = match task.processor {
        // The send processor answers from the store's completion callback.
        ProcessorKind::Send => return send::process(broker, task),
        ProcessorKind::Pull => pull::process(broker, &task.request, task.responder.peer()),
        ProcessorKind::Heartbeat => heartbeat::process(broker, &task.request),
        ProcessorKind::EndTransaction => end_transaction::process(broker, &task.request),
        ProcessorKind::ConsumerManage => consumer::process(broker, &task.request),
        ProcessorKind::Admin => admin::process(broker, &task.request),
    };
    answer(
        broker.config.profile,
        &task.request,
        &task.responder,
        reply,
        AnswerSource::Processor,
    );
}

/// The SYSTEM_ERROR answer for a request header that cannot be decoded, with the text of
/// RocketMQ's `RemotingCommandException`.
pub fn header_error(
    broker: &Broker,
    request: &RemotingCommand,
    e: &HeaderError,
) -> RemotingCommand {
    let remark = match e {
        HeaderError::Missing(field) => format!("the custom field <{field}> is null"),
        HeaderError::Invalid { field, value } => {
            format!("the custom field <{field}> has an invalid value: {value:?}")
        }
    };
    response(
        broker.config.profile,
        request,
        ResponseCode::SYSTEM_ERROR,
        Some(remark),
    )
}
