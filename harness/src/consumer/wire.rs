//! One consumer connection: requests matched to responses by opaque, oneway requests, and the
//! broker's NOTIFY_CONSUMER_IDS_CHANGED (40) turned into a wake-up of the rebalance.
//!
//! A reader task and a writer task per connection (tracked by the run's `TaskTracker`, stopped
//! by its token). The writer's queue is bounded; the pending map holds at most one pull per
//! assigned queue plus the few admin calls in flight.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use remoting::{decode_frame, RemotingCommand, RequestCode, MAX_FRAME_LEN};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Writes queued per connection before a writer blocks.
const OUT_QUEUE: usize = 1024;

/// Why a call got no answer.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("connect to {addr}: {source}")]
    Connect {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("connection closed")]
    Closed,
    #[error("no response within {0:?}")]
    Timeout(Duration),
    /// The route lists no address for the broker (it left the route before any call to it).
    #[error("no address for broker {0} in the topic route")]
    NoRoute(String),
}

/// Bytes gathered into one write at most.
const WRITE_BATCH: usize = 256 * 1024;

/// Writes `first` and every frame already queued behind it, up to [`WRITE_BATCH`] bytes, in one
/// write: each write is a system call and a wake-up of the broker's reader (a fifth of the
/// consumers' CPU in `make floor` goes to waking the peer, one pull at a time). It does not wait
/// for more: yielding first to let the other pull tasks queue theirs cut the consumers' CPU per
/// message by a fifth against the null responder, but a pull that waits behind the consumption
/// of the last batch leaves the broker idle, and draining a backlog from broker-under-test slowed
/// from 610k-692k to 496k-570k messages/s (128 B, 32 a pull, 3 alternating runs).
async fn write_queued(
    wr: &mut tokio::net::tcp::OwnedWriteHalf,
    first: Bytes,
    rx: &mut mpsc::Receiver<Bytes>,
    batch: &mut BytesMut,
) -> std::io::Result<()> {
    let Ok(second) = rx.try_recv() else {
        return wr.write_all(&first).await;
    };
    batch.clear();
    batch.extend_from_slice(&first);
    batch.extend_from_slice(&second);
    while batch.len() < WRITE_BATCH {
        match rx.try_recv() {
            Ok(next) => batch.extend_from_slice(&next),
            Err(_) => break,
        }
    }
    wr.write_all(batch).await
}

type Pending = Arc<Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>>;

/// A connection to the broker.
pub struct Wire {
    out: mpsc::Sender<Bytes>,
    pending: Pending,
    opaque: AtomicI32,
    closed: CancellationToken,
}

impl Wire {
    /// Connects; broker-initiated NOTIFY_CONSUMER_IDS_CHANGED wakes `notify`.
    pub async fn connect(
        addr: SocketAddr,
        notify: Arc<Notify>,
        tracker: &TaskTracker,
        stop: CancellationToken,
    ) -> Result<Wire, WireError> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|source| WireError::Connect { addr, source })?;
        let _ = stream.set_nodelay(true);
        let (mut rd, mut wr) = stream.into_split();
        let (out, mut rx) = mpsc::channel::<Bytes>(OUT_QUEUE);
        let pending: Pending = Arc::default();
        let closed = stop.child_token();
        {
            let closed = closed.clone();
            tracker.spawn(async move {
                let mut batch = BytesMut::new();
                loop {
                    tokio::select! {
                        _ = closed.cancelled() => break,
                        b = rx.recv() => match b {
                            Some(b) => if write_queued(&mut wr, b, &mut rx, &mut batch).await.is_err() { break },
                            None => break,
                        },
                    }
                }
                closed.cancel();
                let _ = wr.shutdown().await;
            });
        }
        {
            let (closed, pending) = (closed.clone(), pending.clone());
            tracker.spawn(async move {
                let mut buf = BytesMut::with_capacity(256 * 1024);
                'read: loop {
                    loop {
                        match decode_frame(&mut buf, MAX_FRAME_LEN) {
                            Ok(Some(cmd)) if cmd.is_response() => {
                                if let Some(tx) = pending.lock().remove(&cmd.opaque) {
                                    let _ = tx.send(cmd);
                                }
                            }
                            Ok(Some(cmd)) => {
                                if cmd.code == RequestCode::NOTIFY_CONSUMER_IDS_CHANGED.as_i32() {
                                    notify.notify_one();
                                }
                            }
                            Ok(None) => break,
                            // A malformed frame ends the connection; its calls fail as closed.
                            Err(_) => break 'read,
                        }
                    }
                    tokio::select! {
                        _ = closed.cancelled() => break,
                        n = rd.read_buf(&mut buf) => match n {
                            Ok(0) | Err(_) => break,
                            Ok(_) => {}
                        },
                    }
                }
                closed.cancel();
                pending.lock().clear();
            });
        }
        Ok(Wire {
            out,
            pending,
            opaque: AtomicI32::new(1),
            closed,
        })
    }

    fn next_opaque(&self) -> i32 {
        self.opaque.fetch_add(1, Ordering::Relaxed) & 0x3fff_ffff
    }

    /// Sends `cmd` (its opaque replaced) and waits up to `timeout` for the answer.
    pub async fn call(
        &self,
        mut cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, WireError> {
        let opaque = self.next_opaque();
        cmd.opaque = opaque;
        self.call_encoded(opaque, cmd.to_bytes(), timeout).await
    }

    /// Sends `cmd` (its opaque set) without taking it: a request kept to be sent again.
    pub async fn call_kept(
        &self,
        cmd: &mut RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, WireError> {
        let opaque = self.next_opaque();
        cmd.opaque = opaque;
        let frame = cmd.to_bytes();
        self.call_encoded(opaque, frame, timeout).await
    }

    /// Sends a frame already encoded with `opaque` and waits for its answer.
    pub async fn call_encoded(
        &self,
        opaque: i32,
        frame: Bytes,
        timeout: Duration,
    ) -> Result<RemotingCommand, WireError> {
        if self.closed.is_cancelled() {
            return Err(WireError::Closed);
        }
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(opaque, tx);
        if self.out.send(frame).await.is_err() {
            self.pending.lock().remove(&opaque);
            return Err(WireError::Closed);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_)) => Err(WireError::Closed),
            Err(_) => {
                self.pending.lock().remove(&opaque);
                Err(WireError::Timeout(timeout))
            }
        }
    }

    /// An opaque for [`Wire::call_encoded`].
    pub fn reserve_opaque(&self) -> i32 {
        self.next_opaque()
    }

    /// Sends `cmd` as oneway.
    pub async fn oneway(&self, mut cmd: RemotingCommand) -> Result<(), WireError> {
        cmd.opaque = self.next_opaque();
        let cmd = cmd.with_oneway();
        self.out
            .send(cmd.to_bytes())
            .await
            .map_err(|_| WireError::Closed)
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Closes the connection; calls in flight fail as closed.
    pub fn close(&self) {
        self.closed.cancel();
    }
}
