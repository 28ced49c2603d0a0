//! Request code → (processor, executor), admission, and the rules for writing answers
//! (reference §1.5, §4.2).

pub mod executor;
pub mod fast_failure;

use std::{
    net::SocketAddr,
    sync::Arc,
    time::{Instant, SystemTime, UNIX_EPOCH},
};

use bytes::Bytes;
use remoting::{LanguageCode, RemotingCommand, RequestCode, ResponseCode, SerializeType};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::{
    broker::Broker,
    config::{BrokerRole, VersionProfile},
    counters::RejectReason,
};

/// The broker's executors (reference §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecutorKind {
    Send,
    Pull,
    Heartbeat,
    EndTransaction,
    Admin,
}

impl ExecutorKind {
    /// RocketMQ's thread-name prefix; threads are numbered from 1.
    pub fn thread_prefix(self) -> &'static str {
        match self {
            ExecutorKind::Send => "SendMessageThread_",
            ExecutorKind::Pull => "PullMessageThread_",
            ExecutorKind::Heartbeat => "HeartbeatThread_",
            ExecutorKind::EndTransaction => "EndTransactionThread_",
            ExecutorKind::Admin => "AdminBrokerThread_",
        }
    }
}

/// Which processor runs a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessorKind {
    Send,
    Pull,
    Heartbeat,
    EndTransaction,
    /// QUERY/UPDATE_CONSUMER_OFFSET (ConsumerManageProcessor).
    ConsumerManage,
    /// UPDATE_AND_CREATE_TOPIC, GET_BROKER_RUNTIME_INFO, UNREGISTER_CLIENT (default processor).
    Admin,
}

/// Routes a request code; `None` means REQUEST_CODE_NOT_SUPPORTED.
pub fn route(code: i32, profile: VersionProfile) -> Option<(ProcessorKind, ExecutorKind)> {
    use RequestCode as R;
    let r = match RequestCode::from_i32(code)? {
        R::SEND_MESSAGE | R::SEND_MESSAGE_V2 | R::SEND_BATCH_MESSAGE => {
            (ProcessorKind::Send, ExecutorKind::Send)
        }
        R::PULL_MESSAGE => (ProcessorKind::Pull, ExecutorKind::Pull),
        R::HEART_BEAT => (ProcessorKind::Heartbeat, ExecutorKind::Heartbeat),
        // 4.3.0 registered END_TRANSACTION on the send pool; 4.4.0 gave it its own.
        R::END_TRANSACTION if profile == VersionProfile::V4_3 => {
            (ProcessorKind::EndTransaction, ExecutorKind::Send)
        }
        R::END_TRANSACTION => (ProcessorKind::EndTransaction, ExecutorKind::EndTransaction),
        // RocketMQ runs these on the consumer-manage / client-manage pools, which have no
        // fast-failure limit; the admin pool stands in for both.
        R::QUERY_CONSUMER_OFFSET | R::UPDATE_CONSUMER_OFFSET => {
            (ProcessorKind::ConsumerManage, ExecutorKind::Admin)
        }
        R::UPDATE_AND_CREATE_TOPIC | R::GET_BROKER_RUNTIME_INFO | R::UNREGISTER_CLIENT => {
            (ProcessorKind::Admin, ExecutorKind::Admin)
        }
        _ => return None,
    };
    Some(r)
}

/// Where a connection's answers go. Answers are produced on executor threads, the store's
/// group-commit thread and the fast-failure thread; they all push encoded frames into the
/// connection's bounded outbound queue, which its writer task drains.
#[derive(Clone)]
pub struct Responder {
    tx: mpsc::Sender<Bytes>,
    /// Cancelled to close the connection (outbound queue overflow).
    close: CancellationToken,
    peer: SocketAddr,
}

impl Responder {
    pub fn new(tx: mpsc::Sender<Bytes>, close: CancellationToken, peer: SocketAddr) -> Self {
        Responder { tx, close, peer }
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Queues one encoded frame. A peer that does not read its answers fills the queue; we then
    /// close its connection instead of buffering without bound.
    pub fn write(&self, frame: Bytes) {
        match self.tx.try_send(frame) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                if !self.close.is_cancelled() {
                    eprintln!(
                        "{}: outbound queue full (the client does not read its answers), \
                         closing the connection",
                        self.peer
                    );
                }
                self.close.cancel();
            }
            // The connection is gone; RocketMQ logs and drops such answers too.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

/// One decoded request waiting in (or taken from) an executor queue.
pub struct RequestTask {
    pub request: RemotingCommand,
    pub responder: Responder,
    pub processor: ProcessorKind,
    /// When the request was decoded (RequestTask `createTimestamp`).
    pub created: Instant,
    pub created_epoch_ms: i64,
}

pub fn epoch_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Who produced an answer; decides its serialization and whether a oneway request gets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerSource {
    /// A processor's result: never written for oneway; 4.x echoes the request's serialize type.
    Processor,
    /// The remoting layer's `[REJECTREQUEST]` and "not supported": written for oneway in 4.x only.
    RemotingReject,
    /// The remoting layer's `[OVERLOAD]`: never written for oneway.
    Overload,
    /// BrokerFastFailure: always written, even for oneway.
    FastFailure,
}

/// A response to `request` with RocketMQ's response fields: same opaque, RESPONSE bit, the
/// broker's own version ordinal, language JAVA, JSON unless `answer` re-tags it.
pub fn response(
    profile: VersionProfile,
    request: &RemotingCommand,
    code: impl Into<i32>,
    remark: Option<String>,
) -> RemotingCommand {
    let mut r = RemotingCommand::response_to(request, code, remark);
    r.version = profile.ordinal();
    r.language = LanguageCode::JAVA;
    r
}

/// Writes `response` to `request`'s connection following the rules of `source`.
pub fn answer(
    profile: VersionProfile,
    request: &RemotingCommand,
    responder: &Responder,
    mut response: RemotingCommand,
    source: AnswerSource,
) {
    let write = match source {
        AnswerSource::Processor | AnswerSource::Overload => !request.is_oneway(),
        AnswerSource::RemotingReject => !request.is_oneway() || profile.is_4x(),
        AnswerSource::FastFailure => true,
    };
    if !write {
        return;
    }
    response.serialize_type = match source {
        AnswerSource::Processor if profile.is_4x() => request.serialize_type,
        _ => SerializeType::Json,
    };
    responder.write(response.to_bytes());
}

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

/// Admits one request decoded on a connection (NettyRemotingAbstract.processRequestCommand):
/// route, reject, queue or overload. Runs on the connection's task and never blocks.
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
    if processor == ProcessorKind::Send {
        if let Some(reason) = send_reject_reason(broker) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_codes_go_to_the_send_executor_and_unknown_codes_nowhere() {
        for code in [10, 310, 320] {
            assert_eq!(
                route(code, VersionProfile::V5_3),
                Some((ProcessorKind::Send, ExecutorKind::Send))
            );
        }
        assert_eq!(route(9999, VersionProfile::V5_3), None);
        assert_eq!(
            route(37, VersionProfile::V4_3).map(|r| r.1),
            Some(ExecutorKind::Send)
        );
        assert_eq!(
            route(37, VersionProfile::V4_9).map(|r| r.1),
            Some(ExecutorKind::EndTransaction)
        );
    }
}
