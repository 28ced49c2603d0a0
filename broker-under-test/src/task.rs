//! The types every stage of a request shares: which executor runs it, the queued task, where its
//! answer goes, and why a send was rejected. A leaf: it imports nothing from the broker, the
//! dispatcher or the counters, which all import it.

use std::{net::SocketAddr, time::Instant};

use bytes::Bytes;
use remoting::RemotingCommand;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The broker's executors (reference §4.1). Everything per executor (thread name, keys, counter
/// names) hangs off this one list, so adding an executor means adding a variant here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecutorKind {
    Send,
    Pull,
    Heartbeat,
    EndTransaction,
    Admin,
}

/// The RocketMQ names that belong to one executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutorNames {
    /// Thread-name prefix; threads are numbered from 1.
    pub thread_prefix: &'static str,
    /// The thread count key.
    pub threads_key: &'static str,
    /// The queue capacity key.
    pub queue_key: &'static str,
    /// The BrokerFastFailure wait-limit key; `None` for queues it does not scan.
    pub wait_key: Option<&'static str>,
    /// Suffix of the `flowControl…` runtime-info counters.
    pub counter_suffix: &'static str,
    /// Name in the flow-control summary line.
    pub summary_name: &'static str,
}

impl ExecutorKind {
    /// Every executor, in start-up, counter and summary order.
    pub const ALL: [ExecutorKind; 5] = [
        ExecutorKind::Send,
        ExecutorKind::Pull,
        ExecutorKind::Heartbeat,
        ExecutorKind::EndTransaction,
        ExecutorKind::Admin,
    ];
    pub const COUNT: usize = Self::ALL.len();

    /// Position in [`ExecutorKind::ALL`], for per-kind arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    pub const fn names(self) -> ExecutorNames {
        match self {
            ExecutorKind::Send => ExecutorNames {
                thread_prefix: "SendMessageThread_",
                threads_key: "sendMessageThreadPoolNums",
                queue_key: "sendThreadPoolQueueCapacity",
                wait_key: Some("waitTimeMillsInSendQueue"),
                counter_suffix: "Send",
                summary_name: "send",
            },
            ExecutorKind::Pull => ExecutorNames {
                thread_prefix: "PullMessageThread_",
                threads_key: "pullMessageThreadPoolNums",
                queue_key: "pullThreadPoolQueueCapacity",
                wait_key: Some("waitTimeMillsInPullQueue"),
                counter_suffix: "Pull",
                summary_name: "pull",
            },
            ExecutorKind::Heartbeat => ExecutorNames {
                thread_prefix: "HeartbeatThread_",
                threads_key: "heartbeatThreadPoolNums",
                queue_key: "heartbeatThreadPoolQueueCapacity",
                wait_key: Some("waitTimeMillsInHeartbeatQueue"),
                counter_suffix: "Heartbeat",
                summary_name: "heartbeat",
            },
            ExecutorKind::EndTransaction => ExecutorNames {
                thread_prefix: "EndTransactionThread_",
                threads_key: "endTransactionThreadPoolNums",
                queue_key: "endTransactionPoolQueueSize",
                wait_key: Some("waitTimeMillsInTransactionQueue"),
                counter_suffix: "Transaction",
                summary_name: "transaction",
            },
            // 4.x's admin pool is not scanned by BrokerFastFailure; neither is ours.
            ExecutorKind::Admin => ExecutorNames {
                thread_prefix: "AdminBrokerThread_",
                threads_key: "adminBrokerThreadPoolNums",
                queue_key: "adminBrokerThreadPoolQueueCapacity",
                wait_key: None,
                counter_suffix: "Admin",
                summary_name: "admin",
            },
        }
    }

    /// RocketMQ's thread-name prefix; threads are numbered from 1.
    pub fn thread_prefix(self) -> &'static str {
        self.names().thread_prefix
    }
}

/// Which processor runs a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessorKind {
    Send,
    Pull,
    /// A held pull re-run by long polling (`brokerAllowSuspend = false`): never held again,
    /// commits no offset.
    PullResumed,
    /// HEART_BEAT and UNREGISTER_CLIENT (ClientManageProcessor).
    Heartbeat,
    EndTransaction,
    /// QUERY/UPDATE_CONSUMER_OFFSET, GET_CONSUMER_LIST_BY_GROUP (ConsumerManageProcessor), and
    /// GET_MAX/MIN_OFFSET.
    ConsumerManage,
    /// LOCK_BATCH_MQ / UNLOCK_BATCH_MQ (AdminBrokerProcessor's lock calls).
    Lock,
    /// UPDATE_AND_CREATE_TOPIC, GET_BROKER_RUNTIME_INFO (default processor).
    Admin,
}

/// Why `[REJECTREQUEST]` was answered (reference §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    PageCacheBusy,
    TransientStorePoolDeficient,
    /// 5.x only: the broker is a SLAVE.
    Slave,
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

/// Where a connection's answers go. Answers are produced on executor threads, the store's
/// group-commit thread and the fast-failure thread; they all push encoded frames into the
/// connection's bounded outbound queue, which its writer task drains.
#[derive(Clone)]
pub struct Responder {
    tx: mpsc::Sender<Bytes>,
    /// Cancelled to close the connection (outbound queue overflow).
    close: CancellationToken,
    /// Cancelled once the connection's read loop has ended (the peer closed, or we did).
    ended: CancellationToken,
    peer: SocketAddr,
}

impl Responder {
    pub fn new(tx: mpsc::Sender<Bytes>, close: CancellationToken, peer: SocketAddr) -> Self {
        Responder {
            tx,
            close,
            ended: CancellationToken::new(),
            peer,
        }
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Marks the connection ended: from here on a request still queued for it must not
    /// register the connection anywhere (its close event has been, or is being, handled).
    pub fn end(&self) {
        self.ended.cancel();
    }

    /// Whether the connection's read loop has ended. A heartbeat that was read before the
    /// peer's FIN and processed after the close would otherwise register a dead connection
    /// that only the 120-s expiry scan removes: a client listed twice in
    /// GET_CONSUMER_LIST_BY_GROUP, and half the queues allocated to nobody.
    pub fn ended(&self) -> bool {
        self.ended.is_cancelled()
    }

    /// Closes the connection (the client-expiry scan).
    pub fn close(&self) {
        self.close.cancel();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_in_index_order() {
        for (i, kind) in ExecutorKind::ALL.iter().enumerate() {
            assert_eq!(kind.index(), i);
        }
    }
}
