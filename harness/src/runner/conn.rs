//! Connections: a blocking socket the pacer writes to, and a reader thread per connection that
//! matches responses by opaque and ends timed-out or lost sends.

use std::collections::HashMap;
use std::io::Read;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use parking_lot::Mutex;
use remoting::{decode_frame, MAX_FRAME_LEN};

use crate::recorder::{classify, Outcome, Recorder};
use crate::runner::common::{Common, InFlight};

/// How often readers look for timed-out sends.
const SWEEP: Duration = Duration::from_millis(5);
/// Minimum time between reconnect attempts of one connection.
pub const RECONNECT_EVERY: Duration = Duration::from_millis(100);

/// A connection slot's state shared between the pacer and its reader. The in-flight map
/// itself is owned by the reader: the pacer hands entries over a channel, so it never waits on a
/// lock held by a reader that the scheduler has preempted.
#[derive(Default)]
pub struct Shared {
    pub len: AtomicUsize,
    pub broken: AtomicBool,
}

pub type Handoff = (i32, InFlight);

/// What a reader leaves behind: entries nobody answered yet.
pub type Leftover = (Receiver<Handoff>, HashMap<i32, InFlight>);

/// One connection slot of the pacer; the socket is reopened after a failure.
pub struct Conn {
    pub shared: Arc<Shared>,
    pub stream: Option<TcpStream>,
    /// Hands in-flight entries to this connection's reader.
    pub tx: Option<std::sync::mpsc::Sender<Handoff>>,
    pub reader: Option<JoinHandle<Leftover>>,
    pub last_attempt: Option<Instant>,
    pub opaque: i32,
    pub recorder: Arc<Mutex<Recorder>>,
    /// Encoded sends not yet written, and their (opaque, segment, intended time).
    pub out: BytesMut,
    pub batch: Vec<(i32, usize, Instant)>,
}

impl Conn {
    /// A connection slot not yet connected, recording into `recorder`.
    pub fn new(recorder: Arc<Mutex<Recorder>>) -> Conn {
        Conn {
            shared: Arc::new(Shared::default()),
            stream: None,
            tx: None,
            reader: None,
            last_attempt: None,
            opaque: 0,
            recorder,
            out: BytesMut::new(),
            batch: Vec::new(),
        }
    }
}

pub fn connect(
    c: &mut Conn,
    addr: SocketAddr,
    common: &Arc<Common>,
    index: usize,
) -> std::io::Result<()> {
    c.last_attempt = Some(Instant::now());
    // Sends handed to the old reader after it failed the socket: end them here so every
    // scheduled send keeps exactly one outcome.
    c.tx = None;
    if let Some(old) = c.reader.take() {
        if let Ok((rx, map)) = old.join() {
            let now = Instant::now();
            for (_, e) in map.into_iter().chain(rx.try_iter()) {
                c.shared.len.fetch_sub(1, Ordering::AcqRel);
                common.finish(&c.recorder, e, Outcome::ConnectionError, None, now, false);
            }
        }
    }
    let stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    stream.set_nodelay(true)?;
    stream.set_write_timeout(Some(common.send_timeout))?;
    let read_half = stream.try_clone()?;
    c.out.clear();
    c.batch.clear();
    c.shared = Arc::new(Shared::default());
    let (tx, rx) = std::sync::mpsc::channel();
    let ctx = ReaderCtx {
        shared: c.shared.clone(),
        recorder: c.recorder.clone(),
        common: common.clone(),
        rx,
        map: HashMap::new(),
    };
    let reader = thread::Builder::new()
        .name(format!("harness-reader-{index}"))
        .spawn(move || reader_loop(read_half, ctx))?;
    c.tx = Some(tx);
    c.reader = Some(reader);
    c.stream = Some(stream);
    Ok(())
}

struct ReaderCtx {
    shared: Arc<Shared>,
    recorder: Arc<Mutex<Recorder>>,
    common: Arc<Common>,
    /// Entries handed over by the pacer, moved into `map` before responses are matched.
    rx: Receiver<Handoff>,
    map: HashMap<i32, InFlight>,
}

impl ReaderCtx {
    fn take_handoffs(&mut self) {
        for (k, e) in self.rx.try_iter() {
            self.map.insert(k, e);
        }
    }
}

fn reader_loop(mut stream: TcpStream, mut ctx: ReaderCtx) -> Leftover {
    if stream.set_read_timeout(Some(SWEEP)).is_err() {
        fail(&mut ctx);
        return (ctx.rx, ctx.map);
    }
    let mut buf = BytesMut::with_capacity(256 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut last_sweep = Instant::now();
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => {
                fail(&mut ctx);
                return (ctx.rx, ctx.map);
            }
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                let mut frames = Vec::new();
                let mut corrupt = false;
                loop {
                    match decode_frame(&mut buf, MAX_FRAME_LEN) {
                        // Broker-initiated requests (CHECK_TRANSACTION_STATE, ...) are not ours.
                        Ok(Some(cmd)) if cmd.is_response() => frames.push(cmd),
                        Ok(Some(_)) => {}
                        Ok(None) => break,
                        Err(_) => {
                            corrupt = true;
                            break;
                        }
                    }
                }
                handle_responses(&mut ctx, frames);
                if corrupt {
                    fail(&mut ctx);
                    let _ = stream.shutdown(Shutdown::Both);
                    return (ctx.rx, ctx.map);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => {
                fail(&mut ctx);
                return (ctx.rx, ctx.map);
            }
        }
        let now = Instant::now();
        if now - last_sweep >= SWEEP {
            last_sweep = now;
            sweep(&mut ctx, now, false);
        }
    }
}

/// Matches a read's worth of responses against the reader's in-flight map.
fn handle_responses(ctx: &mut ReaderCtx, frames: Vec<remoting::RemotingCommand>) {
    if frames.is_empty() {
        return;
    }
    let now = Instant::now();
    ctx.take_handoffs();
    let entries: Vec<Option<InFlight>> = frames
        .iter()
        .map(|cmd| ctx.map.remove(&cmd.opaque))
        .collect();
    for (cmd, entry) in frames.into_iter().zip(entries) {
        let remark = cmd.remark.as_deref();
        let outcome = classify(cmd.code, remark);
        match entry {
            Some(e) => {
                ctx.shared.len.fetch_sub(1, Ordering::AcqRel);
                ctx.recorder
                    .lock()
                    .attempt_answer(e.segment, cmd.code, remark);
                ctx.common
                    .finish(&ctx.recorder, e, outcome, Some(cmd.code), now, true);
            }
            None => {
                let seg = ctx.common.current_segment.load(Ordering::Relaxed);
                let mut rec = ctx.recorder.lock();
                rec.late_answer(seg, cmd.code, remark);
                if ctx.common.oneway {
                    rec.reclassify_oneway(seg, outcome);
                }
            }
        }
    }
}

/// Times out sends past their budget; with `all`, every remaining send.
fn sweep(ctx: &mut ReaderCtx, now: Instant, all: bool) {
    ctx.take_handoffs();
    let expired: Vec<InFlight> = {
        let map = &mut ctx.map;
        let keys: Vec<i32> = map
            .iter()
            .filter(|(_, e)| all || now >= e.first_written + ctx.common.send_timeout)
            .map(|(k, _)| *k)
            .collect();
        keys.into_iter().filter_map(|k| map.remove(&k)).collect()
    };
    for e in expired {
        ctx.shared.len.fetch_sub(1, Ordering::AcqRel);
        ctx.common
            .finish(&ctx.recorder, e, Outcome::Timeout, None, now, false);
    }
}

fn fail(ctx: &mut ReaderCtx) {
    ctx.shared.broken.store(true, Ordering::Release);
    if ctx.common.closing.load(Ordering::Acquire) {
        return;
    }
    let now = Instant::now();
    ctx.take_handoffs();
    let lost: Vec<InFlight> = ctx.map.drain().map(|(_, e)| e).collect();
    for e in lost {
        ctx.shared.len.fetch_sub(1, Ordering::AcqRel);
        ctx.common
            .finish(&ctx.recorder, e, Outcome::ConnectionError, None, now, false);
    }
}
