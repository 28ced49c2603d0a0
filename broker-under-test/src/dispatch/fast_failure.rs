//! BrokerFastFailure (reference §6): one scheduled thread, initial delay 1000 ms, period 10 ms.
//! Each round drains the send queue while the page cache is busy (`[PCBUSY_CLEAN_QUEUE]`), then
//! expires queue heads that waited too long (`[TIMEOUT_CLEAN_QUEUE]`). Removed tasks never run.

use std::{
    io,
    sync::{mpsc, Arc},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use remoting::ResponseCode;

use super::answer::{answer, response};
use crate::{
    broker::Broker,
    task::{AnswerSource, ExecutorKind, RequestTask},
};

pub const INITIAL_DELAY: Duration = Duration::from_millis(1000);
pub const PERIOD: Duration = Duration::from_millis(10);

/// The running cleaner; dropping it (or [`FastFailure::stop`]) wakes and joins the thread.
pub struct FastFailure {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FastFailure {
    pub fn start(broker: Arc<Broker>) -> io::Result<Self> {
        let (tx, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("BrokerFastFailureScheduledThread".into())
            .spawn(move || {
                // Fixed rate: the next round is scheduled from the previous schedule, not from
                // when the previous round ended.
                let mut next = Instant::now() + INITIAL_DELAY;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    match rx.recv_timeout(wait) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        // A stop message or the owner gone: stop now.
                        _ => return,
                    }
                    if broker.config.broker_fast_failure_enable {
                        clean(&broker);
                    }
                    next += PERIOD;
                    let now = Instant::now();
                    if next < now {
                        // Fell behind (a loaded machine): don't burst to catch up.
                        next = now;
                    }
                }
            })?;
        Ok(FastFailure {
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    pub fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                eprintln!("BrokerFastFailureScheduledThread ended by a panic");
            }
        }
    }
}

impl Drop for FastFailure {
    fn drop(&mut self) {
        self.stop();
    }
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
