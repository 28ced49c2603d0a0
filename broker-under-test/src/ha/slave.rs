//! The slave side (HAClient / DefaultHAClient; HA reference §2.5, §2.6, §2.8): connect to the
//! master's HA address, report the end of the own CommitLog, append every transfer frame at
//! exactly its offset (ReputMessageService then builds the consume queues, so the slave's
//! queue offsets are real) and report again after each append and every
//! `haSendHeartbeatInterval`.
//!
//! Per profile: a 4.x slave sends its first report one heartbeat interval after each connect
//! (the clock is reset at connect) and reconnects at once after an error; 5.3 reports at once
//! and waits 5 s after an error. The housekeeping clock (close a master silent for
//! `haHousekeepingInterval`) is the last read in 4.3 and 5.3; in 4.9 it is the last report
//! written, so it never fires while the slave reports (issue #1082).

use std::{
    sync::{atomic::Ordering, Arc},
    time::Duration,
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use super::{
    frame::{check_frame, encode_report, HEADER_LEN, READ_MAX_BUFFER_SIZE},
    state::HaState,
};
use crate::{config::HaConfig, keys::VersionProfile, store::MessageStore};

/// Connect timeout, and the pause after a failed connect or without an address.
const RETRY: Duration = Duration::from_millis(5000);
/// How long a slave whose housekeeping clock ran out looks for a closed link first.
const REACTOR_TURN: Duration = Duration::from_millis(100);
/// How long one read waits before the loop looks at its clocks (`select(1000)`).
const SELECT: Duration = Duration::from_millis(1000);

/// Why a connection ended.
#[derive(Debug, thiserror::Error)]
enum LinkError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Frame(#[from] super::frame::FrameError),
    #[error("{0}")]
    Append(#[from] crate::store::ReplicaAppendError),
    #[error("HAClient, master not response some time, so close connection")]
    Expired,
    #[error("master closed the connection")]
    Closed,
    #[error("shutting down")]
    Stopped,
}

/// The HA client loop, until `token` is cancelled.
pub async fn run(
    state: Arc<HaState>,
    store: Arc<MessageStore>,
    config: HaConfig,
    token: CancellationToken,
) {
    // 5.3.3 DefaultHAClient's `lastWriteTimestamp` (l.67): set when the client is built and
    // moved only by reports (l.126), across connections. So the first report after the slave
    // starts comes a heartbeat interval after that, not at the first connect; after an outage
    // longer than the interval it comes at once (audit #10).
    let mut last_write_53 = Instant::now();
    loop {
        let Some(addr) = state.master_address() else {
            if pause(&token, RETRY).await {
                return;
            }
            continue;
        };
        let connected = tokio::select! {
            _ = token.cancelled() => return,
            c = tokio::time::timeout(RETRY, TcpStream::connect(addr.as_str())) => c,
        };
        let stream = match connected {
            Ok(Ok(s)) => s,
            Ok(Err(_)) | Err(_) => {
                eprintln!("HAClient connect to master {addr} failed");
                if pause(&token, RETRY).await {
                    return;
                }
                continue;
            }
        };
        stream.set_nodelay(true).ok();
        eprintln!("HAClient connected to master {addr}");
        state.client_connected.store(true, Ordering::Release);
        // 4.x resets the report clock at connect: the first report waits a heartbeat interval.
        let mut last_report = match config.profile {
            VersionProfile::V5_3 => last_write_53,
            VersionProfile::V4_3 | VersionProfile::V4_9 => Instant::now(),
        };
        let result = transfer(stream, &state, &store, &config, &token, &mut last_report).await;
        last_write_53 = last_report;
        state.client_connected.store(false, Ordering::Release);
        // 5.3: a failed transfer waits 5 s (`closeMasterAndWait`); the housekeeping close
        // reconnects at once (`closeMaster`, 5.3.3 DefaultHAClient l.330-336).
        let expired = matches!(result, Err(LinkError::Expired));
        match result {
            Err(LinkError::Stopped) => return,
            Err(e) => eprintln!("HAClient: connection to {addr} closed: {e}"),
            Ok(()) => {}
        }
        if config.profile == VersionProfile::V5_3 && !expired && pause(&token, RETRY).await {
            return;
        }
    }
}

/// Waits `d`; true when told to stop meanwhile.
async fn pause(token: &CancellationToken, d: Duration) -> bool {
    tokio::select! {
        _ = token.cancelled() => true,
        _ = tokio::time::sleep(d) => false,
    }
}

/// One connection: reports and frames until an error or the housekeeping timeout.
async fn transfer(
    mut stream: TcpStream,
    state: &HaState,
    store: &Arc<MessageStore>,
    config: &HaConfig,
    token: &CancellationToken,
    last_write: &mut Instant,
) -> Result<(), LinkError> {
    let now = Instant::now();
    let mut last_read = now;
    let mut last_report: Option<Instant> = Some(*last_write);
    let mut reported = store.max_wrote_offset();
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let due = last_report.is_none_or(|t| t.elapsed() >= config.heartbeat_interval);
        if due {
            reported = store.max_wrote_offset();
            write_report(&mut stream, state, reported).await?;
            last_report = Some(Instant::now());
            *last_write = Instant::now();
        }
        let report_at = last_report.expect("set above") + config.heartbeat_interval;
        let read = tokio::select! {
            _ = token.cancelled() => return Err(LinkError::Stopped),
            r = stream.read(&mut chunk) => Some(r),
            _ = tokio::time::sleep_until(report_at.min(Instant::now() + SELECT)) => None,
        };
        if let Some(r) = read {
            let n = r?;
            if n == 0 {
                return Err(LinkError::Closed);
            }
            last_read = Instant::now();
            state
                .client_last_read
                .store(crate::clock::epoch_millis(), Ordering::Release);
            buf.extend_from_slice(&chunk[..n]);
            let end = dispatch(&mut buf, store).await?;
            if end > reported {
                reported = end;
                write_report(&mut stream, state, reported).await?;
                last_report = Some(Instant::now());
                *last_write = Instant::now();
            }
        }
        let clock = match config.profile {
            VersionProfile::V4_9 => last_report.expect("set above"),
            VersionProfile::V4_3 | VersionProfile::V5_3 => last_read,
        };
        if clock.elapsed() > config.housekeeping_interval {
            // RocketMQ reads before it looks at the clock (5.3.3 DefaultHAClient:
            // transferFromMaster, then the housekeeping check, l.320-336): a link the master
            // closed while this slave was stopped (SIGSTOP longer than haHousekeepingInterval)
            // is a failed read, after which 5.3 waits 5 s, not an expiry. After such a stop the
            // timer is seen before the reactor reports the socket, so give it one turn.
            if let Ok(r) = tokio::time::timeout(REACTOR_TURN, stream.peek(&mut chunk[..1])).await {
                if r? == 0 {
                    return Err(LinkError::Closed);
                }
                continue; // bytes pending: the next read takes them and resets the clock
            }
            eprintln!(
                "HAClient, housekeeping, found this connection expired, {}",
                clock.elapsed().as_millis()
            );
            return Err(LinkError::Expired);
        }
        if buf.len() > READ_MAX_BUFFER_SIZE {
            // check_frame refuses larger bodies; a buffer this full cannot happen.
            return Err(LinkError::Frame(super::frame::FrameError::TooLarge(
                buf.len(),
            )));
        }
    }
}

async fn write_report(
    stream: &mut TcpStream,
    state: &HaState,
    offset: i64,
) -> Result<(), LinkError> {
    // Set before the write, as HAClient's reportSlaveMaxOffsetPlus sets currentReportedOffset:
    // whoever reads the report off the wire then finds it in the runtime info too (after the
    // write, a busy machine could preempt the slave in between; ha_frames saw 0 for 64).
    state.client_reported.store(offset, Ordering::Release);
    stream.write_all(&encode_report(offset)).await?;
    state
        .client_last_write
        .store(crate::clock::epoch_millis(), Ordering::Release);
    Ok(())
}

/// Appends every whole frame at the front of `buf`; returns the CommitLog end afterwards.
async fn dispatch(buf: &mut Vec<u8>, store: &Arc<MessageStore>) -> Result<i64, LinkError> {
    let mut used = 0;
    let mut end = store.max_wrote_offset();
    while let Some(h) = check_frame(&buf[used..])? {
        let body_at = used + HEADER_LEN;
        let slave_max = end;
        // A fresh slave (0) takes whatever the master starts with.
        if slave_max != 0 && slave_max != h.physic_offset {
            return Err(crate::store::ReplicaAppendError::OffsetMismatch {
                slave: slave_max,
                master: h.physic_offset,
            }
            .into());
        }
        if h.body_size > 0 {
            let body = buf[body_at..body_at + h.body_size].to_vec();
            let s = store.clone();
            let offset = h.physic_offset;
            end = tokio::task::spawn_blocking(move || s.append_replica(offset, &body))
                .await
                .map_err(|e| std::io::Error::other(e.to_string()))??;
        }
        used = body_at + h.body_size;
    }
    buf.drain(..used);
    Ok(end)
}
