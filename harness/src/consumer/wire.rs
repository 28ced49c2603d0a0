//! One consumer connection: requests matched to responses by opaque, oneway requests, and the
//! broker's NOTIFY_CONSUMER_IDS_CHANGED (40) turned into a wake-up of the rebalance.
//!
//! A reader task and a writer task per connection (tracked by the run's `TaskTracker`, stopped
//! by its token). The writer writes the connection's [`Outbox`], bounded, in rounds of pulls;
//! the pending map holds at most one pull per assigned queue plus the few admin calls in
//! flight.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use remoting::plain_json::{self, PlainFrame};
use remoting::{take_frame, DecodeError, RemotingCommand, RequestCode, MAX_FRAME_LEN};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, Notify};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::consumer::outbox::{Outbox, Owed, Send};
use crate::consumer::pull_answer::PullAnswer;

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

/// A call waiting for its answer.
enum Waiter {
    Call(oneshot::Sender<RemotingCommand>),
    /// A pull of a round ([`Wire::call_round`]): its answer comes with the round's token.
    Pull(oneshot::Sender<(PullAnswer, Owed)>),
}

/// Calls waiting for their answer, by opaque.
type Pending = Arc<Mutex<HashMap<i32, Waiter>>>;

/// A response as the reader has it: read in place when its header is plain, else decoded.
/// Lives on the reader's stack for one frame; boxing the plain one would allocate per answer,
/// which reading in place is for avoiding.
#[allow(clippy::large_enum_variant)]
enum Read<'a> {
    Plain(PlainFrame<'a>, &'a Bytes),
    Full(RemotingCommand),
}

impl Read<'_> {
    fn opaque(&self) -> i32 {
        match self {
            Read::Plain(v, _) => v.opaque,
            Read::Full(cmd) => cmd.opaque,
        }
    }

    fn into_pull(self) -> PullAnswer {
        match self {
            Read::Plain(v, frame) => PullAnswer::from_plain(&v, frame),
            Read::Full(cmd) => PullAnswer::from_command(cmd),
        }
    }

    /// A call other than a pull wants the whole command (rare: heartbeats, offsets, locks).
    fn into_command(self) -> Result<RemotingCommand, DecodeError> {
        match self {
            Read::Plain(_, frame) => RemotingCommand::decode(frame.clone()),
            Read::Full(cmd) => Ok(cmd),
        }
    }
}

/// Hands one frame (its length field stripped) to the call waiting for it. A pull's answer is
/// read in place when its header is plain ([`PullAnswer`]); everything else is decoded.
fn deliver(
    frame: Bytes,
    pending: &Pending,
    out: &Arc<Outbox>,
    notify: &Notify,
) -> Result<(), DecodeError> {
    let read = match plain_json::read_frame(&frame).filter(PlainFrame::is_response) {
        Some(v) => Read::Plain(v, &frame),
        None => {
            let cmd = RemotingCommand::decode(frame.clone())?;
            if !cmd.is_response() {
                if cmd.code == RequestCode::NOTIFY_CONSUMER_IDS_CHANGED.as_i32() {
                    notify.notify_one();
                }
                return Ok(());
            }
            Read::Full(cmd)
        }
    };
    let waiter = pending.lock().remove(&read.opaque());
    match waiter {
        // A pull answer owes its next pull to this read's round.
        Some(Waiter::Pull(tx)) => {
            let _ = tx.send((read.into_pull(), out.owe()));
        }
        Some(Waiter::Call(tx)) => {
            let _ = tx.send(read.into_command()?);
        }
        None => {}
    }
    Ok(())
}

/// A connection to the broker.
pub struct Wire {
    out: Arc<Outbox>,
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
        let out = Arc::new(Outbox::default());
        let pending: Pending = Arc::default();
        let closed = stop.child_token();
        {
            let (closed, out) = (closed.clone(), out.clone());
            tracker.spawn(async move {
                let mut batch = BytesMut::new();
                while out.take(&mut batch, &closed).await {
                    if wr.write_all(&batch).await.is_err() {
                        break;
                    }
                }
                closed.cancel();
                let _ = wr.shutdown().await;
            });
        }
        {
            let (closed, pending, out) = (closed.clone(), pending.clone(), out.clone());
            tracker.spawn(async move {
                let mut buf = BytesMut::with_capacity(256 * 1024);
                'read: loop {
                    loop {
                        // A malformed frame ends the connection; its calls fail as closed.
                        match take_frame(&mut buf, MAX_FRAME_LEN) {
                            Ok(Some(frame)) => {
                                if deliver(frame, &pending, &out, &notify).is_err() {
                                    break 'read;
                                }
                            }
                            Ok(None) => break,
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

    /// A pull of a round (`outbox.rs`): `encode` writes the frame with the opaque it is given
    /// into `frame` (cleared first, the caller's to reuse), which is written with the round of
    /// the answer whose token is `owed`, let go once the pull is queued. `queued` runs then,
    /// before the wait for the answer (the previous answer's messages handed to the consume
    /// workers: after the pull, so that the round does not wait behind them). The answer
    /// comes with its own token, for the next pull.
    pub async fn call_round(
        &self,
        encode: impl FnOnce(i32, &mut BytesMut),
        frame: &mut BytesMut,
        owed: Option<Owed>,
        queued: impl Future<Output = ()>,
        timeout: Duration,
    ) -> Result<(PullAnswer, Owed), WireError> {
        let opaque = self.next_opaque();
        frame.clear();
        encode(opaque, frame);
        let (tx, rx) = oneshot::channel();
        self.exchange(opaque, frame, (Waiter::Pull(tx), rx), owed, queued, timeout)
            .await
    }

    /// Sends a frame already encoded with `opaque` and waits for its answer.
    pub async fn call_encoded(
        &self,
        opaque: i32,
        frame: Bytes,
        timeout: Duration,
    ) -> Result<RemotingCommand, WireError> {
        let (tx, rx) = oneshot::channel();
        self.exchange(
            opaque,
            &frame,
            (Waiter::Call(tx), rx),
            None,
            async {},
            timeout,
        )
        .await
    }

    /// Sends `frame` and waits for what its waiter is answered with, on the receiver.
    async fn exchange<T>(
        &self,
        opaque: i32,
        frame: &[u8],
        (waiter, rx): (Waiter, oneshot::Receiver<T>),
        owed: Option<Owed>,
        queued: impl Future<Output = ()>,
        timeout: Duration,
    ) -> Result<T, WireError> {
        if self.closed.is_cancelled() {
            drop(owed);
            queued.await;
            return Err(WireError::Closed);
        }
        let send = match waiter {
            Waiter::Call(_) => Send::Now,
            Waiter::Pull(_) => Send::WithRound,
        };
        self.pending.lock().insert(opaque, waiter);
        let pushed = self.out.push(frame, send, &self.closed).await;
        // The answer's time starts with the request, not after what `queued` does.
        let deadline = tokio::time::Instant::now() + timeout;
        // The pull is queued (or never will be): the round may go without this task.
        drop(owed);
        queued.await;
        if !pushed {
            self.pending.lock().remove(&opaque);
            return Err(WireError::Closed);
        }
        match tokio::time::timeout_at(deadline, rx).await {
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
        if self
            .out
            .push(&cmd.to_bytes(), Send::Now, &self.closed)
            .await
        {
            Ok(())
        } else {
            Err(WireError::Closed)
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Closes the connection; calls in flight fail as closed.
    pub fn close(&self) {
        self.closed.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// What `queued` hands on (a pull's messages to the workers) runs after the next pull is
    /// queued: here it can read that pull off the socket, and answer it.
    #[tokio::test]
    async fn a_round_pull_is_queued_before_what_follows_it() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tracker, stop) = (TaskTracker::new(), CancellationToken::new());
        let wire = Wire::connect(addr, Arc::new(Notify::new()), &tracker, stop.clone())
            .await
            .unwrap();
        let (mut peer, _) = listener.accept().await.unwrap();
        let mut frame = BytesMut::new();
        let encode = |opaque, dst: &mut BytesMut| {
            RemotingCommand::request(RequestCode::PULL_MESSAGE, opaque).encode(dst)
        };
        let queued = async {
            let mut inbox = BytesMut::new();
            let pull = loop {
                if let Some(cmd) = remoting::decode_frame(&mut inbox, MAX_FRAME_LEN).unwrap() {
                    break cmd;
                }
                assert!(peer.read_buf(&mut inbox).await.unwrap() > 0, "closed");
            };
            let answer = RemotingCommand::response_to(&pull, 0, None);
            peer.write_all(&answer.to_bytes()).await.unwrap();
        };
        let call = wire.call_round(encode, &mut frame, None, queued, Duration::from_secs(5));
        let (answer, owed) = tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .expect("the pull was not on the wire while `queued` ran")
            .unwrap();
        assert_eq!((answer.code, answer.header), (0, None));
        // The answer's round token, let go with the next pull.
        drop(owed);
        stop.cancel();
        tracker.close();
        tracker.wait().await;
    }
}
