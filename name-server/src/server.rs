//! Accept loop and connections: a semaphore permit per connection (taken before `accept`), one
//! task per connection that decodes a frame, answers it inline and writes the answer. A
//! malformed frame or an idle connection is closed; the close is reported to the route tables
//! (a broker whose channel closes is removed at once, BrokerHousekeepingService).

use std::{
    net::SocketAddr,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use bytes::BytesMut;
use remoting::{decode_frame, MAX_FRAME_LEN};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    time::Instant,
};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::{
    processor::{process, Channel},
    routes::RouteInfo,
};

/// What every connection shares.
pub struct Shared {
    pub routes: RouteInfo,
    pub idle: Duration,
    pub max_connections: usize,
    next_channel: AtomicU64,
}

impl Shared {
    pub fn new(routes: RouteInfo, idle: Duration, max_connections: usize) -> Self {
        Shared {
            routes,
            idle,
            max_connections,
            next_channel: AtomicU64::new(1),
        }
    }
}

/// Accepts connections until `shutdown` is cancelled, at most `max_connections` at once.
pub async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) {
    let max_connections = shared.max_connections;
    let log = shared.clone();
    let stop = shutdown.clone();
    remoting_server::accept_loop(
        listener,
        max_connections,
        shutdown,
        tracker,
        move |e| log.routes.log.line(format_args!("accept failed: {e}")),
        move |socket, peer| serve(socket, peer, shared.clone(), stop.clone()),
    )
    .await
}

async fn serve(
    mut socket: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
) {
    let channel = Channel {
        id: shared.next_channel.fetch_add(1, Ordering::Relaxed),
        close: CancellationToken::new(),
    };
    let mut buf = BytesMut::with_capacity(4 * 1024);
    let mut out = BytesMut::new();
    let mut last_activity = Instant::now();
    'conn: loop {
        loop {
            match decode_frame(&mut buf, MAX_FRAME_LEN) {
                Ok(Some(cmd)) => {
                    if cmd.is_response() {
                        continue;
                    }
                    if let Some(answer) = process(&shared.routes, &cmd, &channel) {
                        answer.encode(&mut out);
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    shared.routes.log.line(format_args!(
                        "{peer}: malformed frame, closing the connection: {e}"
                    ));
                    break 'conn;
                }
            }
        }
        if !out.is_empty() {
            if let Err(e) = socket.write_all(&out).await {
                shared
                    .routes
                    .log
                    .line(format_args!("{peer}: write failed: {e}"));
                break;
            }
            out.clear();
            last_activity = Instant::now();
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = channel.close.cancelled() => {
                shared.routes.log.line(format_args!("{peer}: closing the channel of an expired broker"));
                break;
            }
            _ = tokio::time::sleep_until(last_activity + shared.idle) => {
                shared.routes.log.line(format_args!("{peer}: idle for {}s, closing the connection", shared.idle.as_secs()));
                break;
            }
            n = socket.read_buf(&mut buf) => match n {
                Ok(0) => break,
                Ok(_) => last_activity = Instant::now(),
                Err(e) => {
                    shared.routes.log.line(format_args!("{peer}: read failed: {e}"));
                    break;
                }
            },
        }
    }
    let _ = socket.shutdown().await;
    for addr in shared.routes.channel_closed(channel.id) {
        shared.routes.log.line(format_args!(
            "{peer}: channel closed, broker {addr} removed"
        ));
    }
}
