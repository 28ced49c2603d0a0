//! One client connection: a read loop that decodes frames and admits requests, and a writer
//! task draining the connection's bounded outbound queue.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use bytes::{Bytes, BytesMut};
use remoting::{decode_frame, MAX_FRAME_LEN};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt, BufWriter},
    net::{tcp::OwnedWriteHalf, TcpStream},
    sync::mpsc,
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use crate::{
    broker::Broker,
    dispatch::{admit, Responder},
};

/// Answers that may wait for the socket per connection. A client that stops reading while
/// sending keeps filling it; when it is full the connection is closed.
pub const OUTBOUND_QUEUE_CAPACITY: usize = 32 * 1024;

/// How long a closing connection may take to write the answers still queued.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

pub async fn serve(
    socket: TcpStream,
    peer: SocketAddr,
    broker: Arc<Broker>,
    shutdown: CancellationToken,
) {
    // NettyRemotingServer sets TCP_NODELAY on every accepted channel. Without it an answer
    // smaller than a segment (a pull's 32 messages) waits, by Nagle's rule, for the ACK of the
    // answer before it, and a client with nothing to send delays that ACK: pulls in flight on
    // one connection were answered milliseconds late, and a backlog drained at a fraction of
    // what either side could do.
    let _ = socket.set_nodelay(true);
    let (mut reader, writer) = socket.into_split();
    let (tx, rx) = mpsc::channel::<Bytes>(OUTBOUND_QUEUE_CAPACITY);
    // Cancelled to drop the connection at once: outbound overflow or a write error.
    let abort = CancellationToken::new();
    let responder = Responder::new(tx, abort.clone(), peer);
    let idle = broker.config.server_channel_max_idle;
    let last_write = Arc::new(parking_lot::Mutex::new(Instant::now()));
    let writer_task = tokio::spawn(write_loop(writer, rx, abort.clone(), last_write.clone()));

    let mut buf = BytesMut::with_capacity(8 * 1024);
    let mut last_read = Instant::now();
    loop {
        match decode_frame(&mut buf, MAX_FRAME_LEN) {
            Ok(Some(cmd)) => {
                // Clients answer the broker's own requests; we send none, so ignore them.
                if !cmd.is_response() {
                    admit(&broker, cmd, &responder);
                }
                continue;
            }
            Ok(None) => {}
            Err(e) => {
                // RocketMQ's decoder logs and closes the channel; no answer is sent (§1.1).
                eprintln!("{peer}: malformed frame, closing the connection: {e}");
                break;
            }
        }
        let last_activity = {
            let w = *last_write.lock();
            w.max(last_read)
        };
        let deadline = last_activity + idle;
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = abort.cancelled() => break,
            _ = tokio::time::sleep_until(deadline) => {
                let w = *last_write.lock();
                if w.max(last_read) + idle <= Instant::now() {
                    eprintln!("{peer}: idle for {}s, closing the connection", idle.as_secs());
                    break;
                }
            }
            n = reader.read_buf(&mut buf) => match n {
                Ok(0) => break,
                Ok(_) => last_read = Instant::now(),
                Err(e) => {
                    eprintln!("{peer}: read failed: {e}");
                    break;
                }
            },
        }
    }
    // The client leaves its consumer groups; the other members are told. Marked ended first,
    // so that a heartbeat still queued for this connection undoes its own registration
    // (processor/heartbeat.rs) instead of outliving this close.
    responder.end();
    broker.channel_closed(peer);
    // Stop reading; answers still being produced for this connection (queued tasks, store
    // callbacks, held pulls) hold their own senders, and the writer flushes them until all are
    // dropped.
    drop(responder);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, writer_task).await;
    if drained.is_err() {
        abort.cancel();
    }
}

async fn write_loop(
    writer: OwnedWriteHalf,
    mut rx: mpsc::Receiver<Bytes>,
    abort: CancellationToken,
    last_write: Arc<parking_lot::Mutex<Instant>>,
) {
    let mut out = BufWriter::new(writer);
    loop {
        let frame = tokio::select! {
            // Dropped, not flushed: a peer that does not read would block the flush forever.
            _ = abort.cancelled() => return,
            f = rx.recv() => match f {
                Some(f) => f,
                None => break,
            },
        };
        let written = async {
            out.write_all(&frame).await?;
            // Batch whatever else is ready into the same flush.
            while let Ok(more) = rx.try_recv() {
                out.write_all(&more).await?;
            }
            out.flush().await
        };
        let ok = tokio::select! {
            _ = abort.cancelled() => return,
            r = written => r.is_ok(),
        };
        if !ok {
            abort.cancel();
            return;
        }
        *last_write.lock() = Instant::now();
    }
    // Every answer producer is gone and everything was flushed: close our side politely.
    let _ = out.shutdown().await;
}
