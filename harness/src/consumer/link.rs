//! A consumer's link to the broker that reconnects, as the Java client's
//! `NettyRemotingClient.getAndCreateChannel` does: a call finds its connection closed (the
//! broker was killed or restarted), opens a new one and goes on. While the broker is down the
//! connect fails at once and the call fails as a transport error: pulls wait their exception
//! delay, heartbeats and rebalances their period, and the next call tries again.
//!
//! Each new connection after the first is counted, so the instance can do what 5.3 does on
//! `onChannelActive` (a heartbeat, then a rebalance at once).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use remoting::headers::{QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader};
use remoting::{RemotingCommand, RequestCode};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::consumer::outbox::Owed;
use crate::consumer::pull_answer::PullAnswer;
use crate::consumer::wire::{Wire, WireError};

/// `connectTimeoutMillis`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

pub struct Link {
    addr: SocketAddr,
    /// Woken by the broker's NOTIFY_CONSUMER_IDS_CHANGED on any connection.
    notify: Arc<Notify>,
    tracker: TaskTracker,
    /// Closed for good: no new connection.
    closed: CancellationToken,
    /// Held across a connect so that concurrent callers open one connection, not several.
    current: tokio::sync::Mutex<Option<Arc<Wire>>>,
    /// When the newest connection was opened.
    opened: parking_lot::Mutex<Option<Instant>>,
    /// Connections opened after the first.
    reconnects: AtomicU64,
    /// Woken after each reconnect (shared by an instance's links, one per broker).
    reconnected: Arc<Notify>,
}

impl Link {
    /// A link that opens its first connection at its first call (a broker of the route that
    /// may be down now). `reconnected` is woken after each connection but the first.
    pub fn new(
        addr: SocketAddr,
        notify: Arc<Notify>,
        reconnected: Arc<Notify>,
        tracker: &TaskTracker,
        stop: &CancellationToken,
    ) -> Link {
        Link {
            addr,
            notify,
            tracker: tracker.clone(),
            closed: stop.child_token(),
            current: tokio::sync::Mutex::new(None),
            opened: parking_lot::Mutex::new(None),
            reconnects: AtomicU64::new(0),
            reconnected,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The open connection, or a new one if it closed.
    async fn wire(&self) -> Result<Arc<Wire>, WireError> {
        if self.closed.is_cancelled() {
            return Err(WireError::Closed);
        }
        let mut current = self.current.lock().await;
        if let Some(w) = current.as_ref().filter(|w| !w.is_closed()) {
            return Ok(w.clone());
        }
        // The first connection that worked; a link created before its broker answered
        // counts its first success as the first connection.
        let first = self.opened.lock().is_none();
        let connect = Wire::connect(
            self.addr,
            self.notify.clone(),
            &self.tracker,
            self.closed.clone(),
        );
        let wire = match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
            Ok(w) => Arc::new(w?),
            Err(_) => return Err(WireError::Timeout(CONNECT_TIMEOUT)),
        };
        *current = Some(wire.clone());
        *self.opened.lock() = Some(Instant::now());
        drop(current);
        if !first {
            self.reconnects.fetch_add(1, Ordering::Relaxed);
            self.reconnected.notify_one();
        }
        Ok(wire)
    }

    /// Sends `cmd` on the current (or a new) connection and waits up to `timeout`.
    pub async fn call(
        &self,
        cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, WireError> {
        self.wire().await?.call(cmd, timeout).await
    }

    /// A pull of a round on the current (or a new) connection ([`Wire::call_round`]).
    /// `queued` runs once the pull is queued, or before a new connection is opened for it,
    /// so that nothing it hands on waits for a connect.
    pub async fn call_round(
        &self,
        encode: impl FnOnce(i32, &mut BytesMut),
        frame: &mut BytesMut,
        owed: Option<Owed>,
        queued: impl Future<Output = ()>,
        timeout: Duration,
    ) -> Result<(PullAnswer, Owed), WireError> {
        if let Some(w) = self.live() {
            return w.call_round(encode, frame, owed, queued, timeout).await;
        }
        drop(owed);
        queued.await;
        self.wire()
            .await?
            .call_round(encode, frame, None, async {}, timeout)
            .await
    }

    /// The open connection, if there is one and no connect holds the link.
    fn live(&self) -> Option<Arc<Wire>> {
        let current = self.current.try_lock().ok()?;
        current.as_ref().filter(|w| !w.is_closed()).cloned()
    }

    /// QUERY_CONSUMER_OFFSET (14) of one queue: the answer's code and, on 0, the stored offset;
    /// None when no answer came. What a code other than 0 means is the caller's (4.x and 5.3
    /// differ, and a retry queue starts at 0).
    pub async fn query_consumer_offset(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        timeout: Duration,
    ) -> Option<(i32, Option<i64>)> {
        let header = QueryConsumerOffsetRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id,
            set_zero_if_not_found: None,
        };
        let cmd =
            RemotingCommand::request(RequestCode::QUERY_CONSUMER_OFFSET, 0).with_header(&header);
        let r = self.call(cmd, timeout).await.ok()?;
        let offset = (r.code == 0)
            .then(|| r.header::<QueryConsumerOffsetResponseHeader>().ok())
            .flatten()
            .map(|h| h.offset);
        Some((r.code, offset))
    }

    /// Sends `cmd` as oneway on the current (or a new) connection.
    pub async fn oneway(&self, cmd: RemotingCommand) -> Result<(), WireError> {
        self.wire().await?.oneway(cmd).await
    }

    /// When the newest connection was opened.
    pub fn opened_at(&self) -> Option<Instant> {
        *self.opened.lock()
    }

    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }

    /// Closes the link for good: calls in flight fail as closed, no connection is opened again.
    pub fn close(&self) {
        self.closed.cancel();
    }
}
