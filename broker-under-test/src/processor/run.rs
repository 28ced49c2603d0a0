//! Which processor runs a task, and writing its answer.

use std::sync::Arc;

use super::{admin, consumer, end_transaction, heartbeat, lock, pull, send};
use crate::{
    broker::Broker,
    dispatch::{access, answer},
    task::{AnswerSource, ProcessorKind, RequestTask},
};

/// Runs `task` on the current executor thread, after the ACL check (where RocketMQ runs its
/// server RPC hooks: after admission, before the processor).
pub fn process(broker: &Arc<Broker>, task: RequestTask) {
    if let Some(refusal) = access::refusal(broker, &task) {
        return answer(
            broker.config.profile,
            &task.request,
            &task.responder,
            refusal,
            AnswerSource::Processor,
        );
    }
    let reply = match task.processor {
        // The send processor answers from the store's completion callback.
        ProcessorKind::Send => return send::process(broker, task),
        // A pull may be held (long polling) and answered later.
        ProcessorKind::Pull => return pull::process(broker, task, true),
        ProcessorKind::PullResumed => return pull::process(broker, task, false),
        ProcessorKind::Heartbeat => heartbeat::process(broker, &task),
        ProcessorKind::EndTransaction => end_transaction::process(broker, &task.request),
        ProcessorKind::ConsumerManage => consumer::process(broker, &task.request),
        ProcessorKind::Lock => lock::process(broker, &task.request),
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
