//! Flow-control counters: one per answer class (and per executor where RocketMQ's remark is the
//! same for several queues). Every answer is counted when it is produced, whether or not it is
//! written (oneway requests), so the harness can compare its own counts with ours.

use std::{
    fmt::Write,
    sync::atomic::{AtomicU64, Ordering},
};

use crate::task::{ExecutorKind, RejectReason};

/// Counters exposed in GET_BROKER_RUNTIME_INFO under the keys [`FlowControlCounters::snapshot`]
/// lists.
#[derive(Debug, Default)]
pub struct FlowControlCounters {
    pc_busy_clean_queue: AtomicU64,
    /// Indexed by [`ExecutorKind::index`].
    timeout_clean_queue: [AtomicU64; ExecutorKind::COUNT],
    reject_request_page_cache: AtomicU64,
    reject_request_pool: AtomicU64,
    reject_request_slave: AtomicU64,
    /// Indexed by [`ExecutorKind::index`].
    overload: [AtomicU64; ExecutorKind::COUNT],
    pc_synchronized: AtomicU64,
    /// Rounds BrokerFastFailure has run (not an answer class: not in [`Self::snapshot`]'s
    /// total). Its first round comes 1000 ms after start; tests wait for it on this.
    fast_failure_rounds: AtomicU64,
}

/// The executors BrokerFastFailure scans: only they have a `[TIMEOUT_CLEAN_QUEUE]` counter.
fn scanned() -> impl Iterator<Item = ExecutorKind> {
    ExecutorKind::ALL
        .into_iter()
        .filter(|k| k.names().wait_key.is_some())
}

impl FlowControlCounters {
    pub fn pc_busy_clean_queue(&self) {
        self.pc_busy_clean_queue.fetch_add(1, Ordering::Relaxed);
    }

    pub fn timeout_clean_queue(&self, kind: ExecutorKind) {
        self.timeout_clean_queue[kind.index()].fetch_add(1, Ordering::Relaxed);
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
        self.overload[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    pub fn fast_failure_round(&self) {
        self.fast_failure_rounds.fetch_add(1, Ordering::Relaxed);
    }

    pub fn fast_failure_rounds(&self) -> u64 {
        self.fast_failure_rounds.load(Ordering::Relaxed)
    }

    pub fn pc_synchronized(&self) {
        self.pc_synchronized.fetch_add(1, Ordering::Relaxed);
    }

    /// Every counter under its runtime-info key, `flowControlTotal` last.
    pub fn snapshot(&self) -> Vec<(String, u64)> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut out = vec![(
            "flowControlPcBusyCleanQueue".to_owned(),
            get(&self.pc_busy_clean_queue),
        )];
        // The admin slot of `timeout_clean_queue` stays 0 and is not listed: this broker, like
        // 4.x, scans only the queues that have a wait limit.
        for kind in scanned() {
            out.push((
                format!(
                    "flowControlTimeoutCleanQueue{}",
                    kind.names().counter_suffix
                ),
                get(&self.timeout_clean_queue[kind.index()]),
            ));
        }
        out.extend([
            (
                "flowControlRejectRequestPageCache".to_owned(),
                get(&self.reject_request_page_cache),
            ),
            (
                "flowControlRejectRequestPool".to_owned(),
                get(&self.reject_request_pool),
            ),
            (
                "flowControlRejectRequestSlave".to_owned(),
                get(&self.reject_request_slave),
            ),
        ]);
        for kind in ExecutorKind::ALL {
            out.push((
                format!("flowControlOverload{}", kind.names().counter_suffix),
                get(&self.overload[kind.index()]),
            ));
        }
        out.push((
            "flowControlPcSynchronized".to_owned(),
            get(&self.pc_synchronized),
        ));
        let total = out.iter().map(|(_, v)| v).sum();
        out.push(("flowControlTotal".to_owned(), total));
        out
    }

    /// The one-line summary logged every minute and at shutdown.
    pub fn summary_line(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let per_kind = |counters: &[AtomicU64; ExecutorKind::COUNT],
                        kinds: &mut dyn Iterator<Item = ExecutorKind>| {
            let mut s = String::new();
            for (i, kind) in kinds.enumerate() {
                let sep = if i == 0 { "" } else { " " };
                let _ = write!(
                    s,
                    "{sep}{}:{}",
                    kind.names().summary_name,
                    get(&counters[kind.index()])
                );
            }
            s
        };
        let total = self.snapshot().last().map(|(_, v)| *v).unwrap_or_default();
        format!(
            "flow-control: PCBUSY_CLEAN_QUEUE={} TIMEOUT_CLEAN_QUEUE={} \
             REJECTREQUEST=pagecache:{} pool:{} slave:{} OVERLOAD={} PC_SYNCHRONIZED={} total={}",
            get(&self.pc_busy_clean_queue),
            per_kind(&self.timeout_clean_queue, &mut scanned()),
            get(&self.reject_request_page_cache),
            get(&self.reject_request_pool),
            get(&self.reject_request_slave),
            per_kind(&self.overload, &mut ExecutorKind::ALL.into_iter()),
            get(&self.pc_synchronized),
            total,
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
        assert_eq!(
            c.summary_line(),
            "flow-control: PCBUSY_CLEAN_QUEUE=1 TIMEOUT_CLEAN_QUEUE=send:0 pull:1 heartbeat:0 \
             transaction:0 REJECTREQUEST=pagecache:0 pool:1 slave:0 OVERLOAD=send:2 pull:0 \
             heartbeat:0 transaction:0 admin:0 PC_SYNCHRONIZED=1 total=6"
        );
        let keys: Vec<String> = c.snapshot().into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            [
                "flowControlPcBusyCleanQueue",
                "flowControlTimeoutCleanQueueSend",
                "flowControlTimeoutCleanQueuePull",
                "flowControlTimeoutCleanQueueHeartbeat",
                "flowControlTimeoutCleanQueueTransaction",
                "flowControlRejectRequestPageCache",
                "flowControlRejectRequestPool",
                "flowControlRejectRequestSlave",
                "flowControlOverloadSend",
                "flowControlOverloadPull",
                "flowControlOverloadHeartbeat",
                "flowControlOverloadTransaction",
                "flowControlOverloadAdmin",
                "flowControlPcSynchronized",
                "flowControlTotal",
            ]
        );
        assert_eq!(s["flowControlOverloadSend"], 2);
        assert_eq!(s["flowControlTimeoutCleanQueuePull"], 1);
        assert!(c.summary_line().contains("OVERLOAD=send:2"));
    }
}
