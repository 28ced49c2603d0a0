//! Flow-control counters: one per answer class (and per executor where RocketMQ's remark is the
//! same for several queues). Every answer is counted when it is produced, whether or not it is
//! written (oneway requests), so the harness can compare its own counts with ours.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::dispatch::ExecutorKind;

/// Counters exposed in GET_BROKER_RUNTIME_INFO under the keys of [`FlowControlCounters::KEYS`].
#[derive(Debug, Default)]
pub struct FlowControlCounters {
    pc_busy_clean_queue: AtomicU64,
    timeout_clean_queue: [AtomicU64; 5],
    reject_request_page_cache: AtomicU64,
    reject_request_pool: AtomicU64,
    reject_request_slave: AtomicU64,
    overload: [AtomicU64; 5],
    pc_synchronized: AtomicU64,
}

/// Why `[REJECTREQUEST]` was answered (reference §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    PageCacheBusy,
    TransientStorePoolDeficient,
    /// 5.x only: the broker is a SLAVE.
    Slave,
}

fn slot(kind: ExecutorKind) -> usize {
    match kind {
        ExecutorKind::Send => 0,
        ExecutorKind::Pull => 1,
        ExecutorKind::Heartbeat => 2,
        ExecutorKind::EndTransaction => 3,
        ExecutorKind::Admin => 4,
    }
}

impl FlowControlCounters {
    pub fn pc_busy_clean_queue(&self) {
        self.pc_busy_clean_queue.fetch_add(1, Ordering::Relaxed);
    }

    pub fn timeout_clean_queue(&self, kind: ExecutorKind) {
        self.timeout_clean_queue[slot(kind)].fetch_add(1, Ordering::Relaxed);
    }

    pub fn reject_request(&self, reason: RejectReason) {
        let c = match reason {
            RejectReason::PageCacheBusy => &self.reject_request_page_cache,
            RejectReason::TransientStorePoolDeficient => &self.reject_request_pool,
            RejectReason::Slave => &self.reject_request_slave,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub fn overload(&self, kind: ExecutorKind) {
        self.overload[slot(kind)].fetch_add(1, Ordering::Relaxed);
    }

    pub fn pc_synchronized(&self) {
        self.pc_synchronized.fetch_add(1, Ordering::Relaxed);
    }

    /// Every counter under its runtime-info key, `flowControlTotal` last.
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut out = vec![
            (
                "flowControlPcBusyCleanQueue",
                get(&self.pc_busy_clean_queue),
            ),
            (
                "flowControlTimeoutCleanQueueSend",
                get(&self.timeout_clean_queue[0]),
            ),
            (
                "flowControlTimeoutCleanQueuePull",
                get(&self.timeout_clean_queue[1]),
            ),
            (
                "flowControlTimeoutCleanQueueHeartbeat",
                get(&self.timeout_clean_queue[2]),
            ),
            (
                "flowControlTimeoutCleanQueueTransaction",
                get(&self.timeout_clean_queue[3]),
            ),
            (
                "flowControlRejectRequestPageCache",
                get(&self.reject_request_page_cache),
            ),
            (
                "flowControlRejectRequestPool",
                get(&self.reject_request_pool),
            ),
            (
                "flowControlRejectRequestSlave",
                get(&self.reject_request_slave),
            ),
            ("flowControlOverloadSend", get(&self.overload[0])),
            ("flowControlOverloadPull", get(&self.overload[1])),
            ("flowControlOverloadHeartbeat", get(&self.overload[2])),
            ("flowControlOverloadTransaction", get(&self.overload[3])),
            ("flowControlOverloadAdmin", get(&self.overload[4])),
            ("flowControlPcSynchronized", get(&self.pc_synchronized)),
        ];
        // The admin slot of `timeout_clean_queue` stays 0: this broker, like 4.x, scans only the
        // send, pull, heartbeat and end-transaction queues.
        let total = out.iter().map(|(_, v)| v).sum();
        out.push(("flowControlTotal", total));
        out
    }

    /// The one-line summary logged every minute and at shutdown.
    pub fn summary_line(&self) -> String {
        let s: std::collections::BTreeMap<_, _> = self.snapshot().into_iter().collect();
        format!(
            "flow-control: PCBUSY_CLEAN_QUEUE={} TIMEOUT_CLEAN_QUEUE=send:{} pull:{} heartbeat:{} \
             transaction:{} REJECTREQUEST=pagecache:{} pool:{} slave:{} OVERLOAD=send:{} pull:{} \
             heartbeat:{} transaction:{} admin:{} PC_SYNCHRONIZED={} total={}",
            s["flowControlPcBusyCleanQueue"],
            s["flowControlTimeoutCleanQueueSend"],
            s["flowControlTimeoutCleanQueuePull"],
            s["flowControlTimeoutCleanQueueHeartbeat"],
            s["flowControlTimeoutCleanQueueTransaction"],
            s["flowControlRejectRequestPageCache"],
            s["flowControlRejectRequestPool"],
            s["flowControlRejectRequestSlave"],
            s["flowControlOverloadSend"],
            s["flowControlOverloadPull"],
            s["flowControlOverloadHeartbeat"],
            s["flowControlOverloadTransaction"],
            s["flowControlOverloadAdmin"],
            s["flowControlPcSynchronized"],
            s["flowControlTotal"],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_is_the_sum_of_every_class() {
        let c = FlowControlCounters::default();
        c.pc_busy_clean_queue();
        c.timeout_clean_queue(ExecutorKind::Pull);
        c.reject_request(RejectReason::TransientStorePoolDeficient);
        c.overload(ExecutorKind::Send);
        c.overload(ExecutorKind::Send);
        c.pc_synchronized();
        let s: std::collections::BTreeMap<_, _> = c.snapshot().into_iter().collect();
        assert_eq!(s["flowControlTotal"], 6);
        assert_eq!(s["flowControlOverloadSend"], 2);
        assert_eq!(s["flowControlTimeoutCleanQueuePull"], 1);
        assert!(c.summary_line().contains("OVERLOAD=send:2"));
    }
}
