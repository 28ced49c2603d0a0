//! Admission (NettyRemotingAbstract.processRequestCommand): route, reject, queue or overload.

use std::{sync::Arc, time::Instant};

use remoting::{RemotingCommand, ResponseCode};

use super::{
    answer::{answer, response},
    route::route,
};
use crate::{
    broker::Broker,
    clock::epoch_millis,
    config::BrokerRole,
    keys::VersionProfile,
    task::{AnswerSource, ProcessorKind, RejectReason, RequestTask, Responder},
};

const REJECT_REQUEST: &str = "[REJECTREQUEST]system busy, start flow control for a while";
const OVERLOAD: &str = "[OVERLOAD]system busy, start flow control for a while";

/// SendMessageProcessor.rejectRequest() (reference §5).
fn send_reject_reason(broker: &Broker) -> Option<RejectReason> {
    if broker.config.profile == VersionProfile::V5_3
        && broker.config.broker_role == BrokerRole::Slave
    {
        return Some(RejectReason::Slave);
    }
    if broker.store.is_os_page_cache_busy() {
        return Some(RejectReason::PageCacheBusy);
    }
    if broker.store.is_transient_store_pool_deficient() {
        return Some(RejectReason::TransientStorePoolDeficient);
    }
    None
}

/// PullMessageProcessor.rejectRequest() (5.0.0+, HA reference §4.2): a SLAVE without
/// `slaveReadEnable` refuses pulls before queueing them; 4.x slaves serve them.
fn pull_reject_reason(broker: &Broker) -> Option<RejectReason> {
    (broker.config.profile == VersionProfile::V5_3
        && broker.config.broker_role == BrokerRole::Slave
        && !broker.config.ha.slave_read_enable)
        .then_some(RejectReason::Slave)
}

/// Admits one request decoded on a connection: route, reject, queue or overload. Runs on the
/// connection's task and never blocks.
pub fn admit(broker: &Arc<Broker>, request: RemotingCommand, responder: &Responder) {
    let profile = broker.config.profile;
    let created = Instant::now();
    let Some((processor, executor)) = route(request.code, profile) else {
        let remark = format!(" request type {} not supported", request.code);
        let r = response(
            profile,
            &request,
            ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
            Some(remark),
        );
        answer(
            profile,
            &request,
            responder,
            r,
            AnswerSource::RemotingReject,
        );
        return;
    };
    let reject = match processor {
        ProcessorKind::Send => send_reject_reason(broker),
        ProcessorKind::Pull => pull_reject_reason(broker),
        _ => None,
    };
    if let Some(reason) = reject {
        broker.counters.reject_request(reason);
        let r = response(
            profile,
            &request,
            ResponseCode::SYSTEM_BUSY,
            Some(REJECT_REQUEST.into()),
        );
        answer(
            profile,
            &request,
            responder,
            r,
            AnswerSource::RemotingReject,
        );
        return;
    }
    let task = RequestTask {
        request,
        responder: responder.clone(),
        processor,
        created,
        created_epoch_ms: epoch_millis(),
    };
    if let Err(task) = broker.queue(executor).try_push(task) {
        broker.counters.overload(executor);
        let r = response(
            profile,
            &task.request,
            ResponseCode::SYSTEM_BUSY,
            Some(OVERLOAD.into()),
        );
        answer(profile, &task.request, responder, r, AnswerSource::Overload);
    }
}
