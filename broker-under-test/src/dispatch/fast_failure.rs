//! BrokerFastFailure (reference §6): one scheduled thread, initial delay 1000 ms, period 10 ms.
//! Each round drains the send queue while the page cache is busy (`[PCBUSY_CLEAN_QUEUE]`), then
//! expires queue heads that waited too long (`[TIMEOUT_CLEAN_QUEUE]`). Removed tasks never run.

use std::{
    io,
    sync::Arc,
    time::{Duration, Instant},
};

use remoting::ResponseCode;

use super::answer::{answer, response};
use crate::{
    broker::Broker,
    periodic::Periodic,
    task::{AnswerSource, ExecutorKind, RequestTask},
};

pub const INITIAL_DELAY: Duration = Duration::from_millis(1000);
pub const PERIOD: Duration = Duration::from_millis(10);

/// Starts the BrokerFastFailure thread; dropping the handle (or `stop`) wakes and joins it.
/// Fixed rate: a round is scheduled from the previous schedule, not from when it ended, and a
/// late round (a loaded machine) does not burst to catch up.
pub fn start(broker: Arc<Broker>) -> io::Result<Periodic> {
    Periodic::start(
        "BrokerFastFailureScheduledThread",
        INITIAL_DELAY,
        PERIOD,
        move || {
            if broker.config.broker_fast_failure_enable {
                clean(&broker);
            }
            broker.counters.fast_failure_round();
        },
    )
}

fn reply_busy(broker: &Broker, task: &RequestTask, remark: String) {
    let profile = broker.config.profile;
    let r = response(
        profile,
        &task.request,
        ResponseCode::SYSTEM_BUSY,
        Some(remark),
    );
    answer(
        profile,
        &task.request,
        &task.responder,
        r,
        AnswerSource::FastFailure,
    );
}

/// One round of BrokerFastFailure.cleanExpiredRequest.
pub fn clean(broker: &Broker) {
    while broker.store.is_os_page_cache_busy() {
        let Some((task, size)) = broker.queue(ExecutorKind::Send).poll_head() else {
            break;
        };
        let period = task.created.elapsed().as_millis();
        broker.counters.pc_busy_clean_queue();
        reply_busy(
            broker,
            &task,
            format!(
                "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, \
                 period in queue: {period}ms, size of queue: {size}"
            ),
        );
    }
    for kind in ExecutorKind::ALL {
        // Queues without a wait limit (admin) are not scanned, as in 4.x.
        let Some(limit) = broker.config.executor(kind).wait_limit else {
            continue;
        };
        let queue = broker.queue(kind);
        while let Some((task, size)) = queue.poll_head_older_than(limit, Instant::now()) {
            let period = task.created.elapsed().as_millis();
            broker.counters.timeout_clean_queue(kind);
            reply_busy(
                broker,
                &task,
                format!(
                    "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, \
                     period in queue: {period}ms, size of queue: {size}"
                ),
            );
        }
    }
}
