//! The master side (AcceptSocketService, HAConnection's ReadSocketService and
//! WriteSocketService; HA reference §2.1–§2.4, §2.7): every broker binds its HA port and
//! serves any client that speaks the protocol. Per connection, one task reads the slave's 8-byte
//! reports and one writes transfer frames; when either ends (EOF, error, the housekeeping
//! timeout, shutdown) both stop and the connection leaves the count.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{
        tcp::{OwnedReadHalf, OwnedWriteHalf},
        TcpListener,
    },
    sync::watch,
    time::Instant,
};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use super::{
    frame::{encode_header, parse_report, REPORT_LEN},
    state::HaState,
};
use crate::{config::HaConfig, keys::VersionProfile, store::MessageStore};

/// WriteSocketService's wait for new data (`allWaitForRunning(100)`) when no put woke it.
const DATA_POLL: Duration = Duration::from_millis(100);

/// What the connection tasks need.
pub struct MasterCtx {
    pub profile: VersionProfile,
    pub state: Arc<HaState>,
    pub store: Arc<MessageStore>,
    pub batch: usize,
    pub heartbeat: Duration,
    pub housekeeping: Duration,
}

impl MasterCtx {
    pub fn new(state: Arc<HaState>, store: Arc<MessageStore>, c: &HaConfig) -> Arc<Self> {
        Arc::new(MasterCtx {
            profile: c.profile,
            state,
            store,
            batch: c.transfer_batch_size,
            heartbeat: c.heartbeat_interval,
            housekeeping: c.housekeeping_interval,
        })
    }
}

/// AcceptSocketService: one connection per accepted socket, until `token` is cancelled.
pub async fn accept_loop(
    listener: TcpListener,
    ctx: Arc<MasterCtx>,
    token: CancellationToken,
    tracker: TaskTracker,
) {
    loop {
        let accepted = tokio::select! {
            _ = token.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => {
                eprintln!("HAService receive new connection, {peer}");
                stream.set_nodelay(true).ok();
                let id = ctx.state.open_connection(peer);
                let conn_token = token.child_token();
                let (r, w) = stream.into_split();
                let (first_tx, first_rx) = watch::channel(None);
                let c = ctx.clone();
                let t = conn_token.clone();
                tracker.spawn(async move {
                    read_reports(r, &c, id, peer, first_tx, &t).await;
                    t.cancel();
                    c.state.close_connection(id);
                });
                let c = ctx.clone();
                tracker.spawn(async move {
                    if let Err(e) = write_frames(w, &c, id, first_rx, &conn_token).await {
                        eprintln!("{peer} service has exception. {e}");
                    }
                    conn_token.cancel();
                });
            }
            Err(e) => {
                eprintln!("AcceptSocketService: accept failed: {e}");
                // EMFILE and the like: do not spin.
                tokio::select! {
                    _ = token.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        }
    }
}

/// ReadSocketService: 8-byte reports; the first one also starts the writer.
async fn read_reports(
    mut r: OwnedReadHalf,
    ctx: &MasterCtx,
    id: u64,
    peer: SocketAddr,
    first_tx: watch::Sender<Option<i64>>,
    token: &CancellationToken,
) {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let mut first = true;
    loop {
        let n = tokio::select! {
            _ = token.cancelled() => return,
            n = tokio::time::timeout(ctx.housekeeping, r.read(&mut chunk)) => n,
        };
        match n {
            Err(_) => {
                eprintln!(
                    "ha housekeeping, found this connection[{peer}] expired, {}",
                    ctx.housekeeping.as_millis()
                );
                return;
            }
            Ok(Ok(0)) => return,
            Ok(Err(e)) => {
                eprintln!("ReadSocketService: {peer}: {e}");
                return;
            }
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
        }
        // Only the last whole report matters (RocketMQ reads the last complete 8 bytes).
        let whole = buf.len() - buf.len() % REPORT_LEN;
        if whole == 0 {
            continue;
        }
        let offset = parse_report(&buf[whole - REPORT_LEN..whole]).expect("8 bytes");
        buf.drain(..whole);
        // 4.9.3+ (PR #3016): a later report beyond the master's end closes the connection;
        // 4.3 and 5.3 take it (and count it as acknowledged, HA reference §2.7).
        let max = ctx.store.commit_log_max_offset();
        if !first && ctx.profile == VersionProfile::V4_9 && offset > max {
            eprintln!(
                "slave[{peer}] request offset={offset} greater than local commitLog offset={max}. "
            );
            return;
        }
        ctx.state.report(id, offset, first);
        if first {
            eprintln!("slave[{peer}] request offset {offset}");
            let _ = first_tx.send(Some(offset));
            first = false;
        }
    }
}

/// WriteSocketService: nothing before the first report; then frames of at most
/// `haTransferBatchSize` from the reported offset (an empty slave gets the last file's start),
/// and an empty frame after `haSendHeartbeatInterval` without a write.
async fn write_frames(
    mut w: OwnedWriteHalf,
    ctx: &MasterCtx,
    id: u64,
    mut first_rx: watch::Receiver<Option<i64>>,
    token: &CancellationToken,
) -> std::io::Result<()> {
    let request = tokio::select! {
        _ = token.cancelled() => return Ok(()),
        r = first_rx.wait_for(|v| v.is_some()) => match r {
            Ok(v) => v.expect("some"),
            Err(_) => return Ok(()),
        },
    };
    let mut next = if request == 0 {
        let max = ctx.store.commit_log_max_offset();
        let size = ctx.store.commit_log_file_size() as i64;
        (max - max % size).max(0)
    } else {
        request
    };
    eprintln!("master transfer data from {next} to slave, and slave request {request}");
    ctx.state.transferring(id, next);
    let mut last_write = Instant::now();
    loop {
        let woken = ctx.state.data.notified();
        let store = ctx.store.clone();
        let batch = ctx.batch;
        let body = tokio::task::spawn_blocking(move || store.replica_chunk(next, batch))
            .await
            .unwrap_or_default();
        if !body.is_empty() {
            let header = encode_header(next, body.len());
            // Advanced before writing, as nextTransferFromWhere is.
            next += body.len() as i64;
            ctx.state.transferring(id, next);
            tokio::select! {
                _ = token.cancelled() => return Ok(()),
                r = async {
                    w.write_all(&header).await?;
                    w.write_all(&body).await
                } => r?,
            }
            last_write = Instant::now();
            continue;
        }
        if last_write.elapsed() >= ctx.heartbeat {
            let header = encode_header(next, 0);
            tokio::select! {
                _ = token.cancelled() => return Ok(()),
                r = w.write_all(&header) => r?,
            }
            last_write = Instant::now();
        }
        let heartbeat_due = last_write + ctx.heartbeat;
        tokio::select! {
            _ = token.cancelled() => return Ok(()),
            _ = woken => {}
            _ = tokio::time::sleep(DATA_POLL) => {}
            _ = tokio::time::sleep_until(heartbeat_due) => {}
        }
    }
}
