//! Connections: a blocking socket the pacer writes to, and a reader thread per connection that
//! matches responses by opaque and ends timed-out or lost sends.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use remoting::{peek_frame, RemotingCommand, ResponseCode, FLAG_RESPONSE, MAX_FRAME_LEN};

use crate::recorder::{classify, Outcome, Recorder};
use crate::runner::common::{us, Common, InFlight};

/// How often readers look for timed-out sends.
const SWEEP: Duration = Duration::from_millis(5);
/// Minimum time between reconnect attempts of one connection.
pub const RECONNECT_EVERY: Duration = Duration::from_millis(100);

/// A connection slot's state shared between the pacer and its reader. The in-flight map
/// itself is owned by the reader: the pacer hands entries over a channel, so it never waits on a
/// lock held by a reader that the scheduler has preempted. It hands them a write's worth at a
/// time ([`Handoffs`]): one channel operation per `write`, not one per send.
#[derive(Default)]
pub struct Shared {
    pub len: AtomicUsize,
    pub broken: AtomicBool,
}

pub type Handoff = (i32, InFlight);

/// The in-flight entries of one `write`, handed to the reader before the bytes go out.
pub type Handoffs = Vec<Handoff>;

/// In-flight attempts by opaque. Opaques are consecutive integers the pacer assigns, so SipHash's
/// protection against chosen keys buys nothing; a multiplicative hash spreads them over every
/// bit the table looks at, at a few instructions per insert and remove.
pub type InFlightMap = HashMap<i32, InFlight, BuildHasherDefault<OpaqueHasher>>;

/// Fibonacci hashing of an opaque (see [`InFlightMap`]).
#[derive(Default)]
pub struct OpaqueHasher(u64);

impl Hasher for OpaqueHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i32(&mut self, v: i32) {
        self.0 = u64::from(v as u32).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// What a reader leaves behind: entries nobody answered yet.
pub type Leftover = (Receiver<Handoffs>, InFlightMap);

/// One connection slot of the pacer; the socket is reopened after a failure.
pub struct Conn {
    /// Where it connects, and which cluster broker that is (`None` with one broker).
    pub addr: SocketAddr,
    pub broker: Option<usize>,
    pub shared: Arc<Shared>,
    pub stream: Option<TcpStream>,
    /// Hands in-flight entries to this connection's reader, a write's worth at a time.
    pub tx: Option<Sender<Handoffs>>,
    /// Emptied hand-off vectors coming back from the reader, so that handing over allocates
    /// nothing once a few are in circulation.
    pub spare: Option<Receiver<Handoffs>>,
    /// The entries of the sends in `out`, handed over by [`Conn::hand_over`].
    pub pending: Handoffs,
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
    pub fn new(recorder: Arc<Mutex<Recorder>>, addr: SocketAddr, broker: Option<usize>) -> Conn {
        Conn {
            addr,
            broker,
            shared: Arc::new(Shared::default()),
            stream: None,
            tx: None,
            spare: None,
            pending: Vec::new(),
            reader: None,
            last_attempt: None,
            opaque: 0,
            recorder,
            out: BytesMut::new(),
            batch: Vec::new(),
        }
    }

    /// Sends the pending entries to the reader, which must know them before their answers can
    /// arrive, and counts them in flight. `Err` gives them back when the reader is gone.
    pub fn hand_over(&mut self) -> Result<(), Handoffs> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let fresh = self
            .spare
            .as_ref()
            .and_then(|r| r.try_recv().ok())
            .unwrap_or_default();
        let entries = std::mem::replace(&mut self.pending, fresh);
        let n = entries.len();
        self.shared.len.fetch_add(n, Ordering::AcqRel);
        let sent = match self.tx.as_ref() {
            Some(tx) => tx.send(entries).map_err(|e| e.0),
            None => Err(entries),
        };
        if sent.is_err() {
            self.shared.len.fetch_sub(n, Ordering::AcqRel);
        }
        sent
    }
}

/// Writes every connection's pending sends (the pacer's), handing their in-flight entries to
/// the readers first; lag is measured at the `write` call.
pub fn flush_conns(conns: &mut [Conn], common: &Common, rec_of_pacer: &Mutex<Recorder>) {
    for conn in conns.iter_mut() {
        if conn.batch.is_empty() {
            continue;
        }
        if let Err(lost) = conn.hand_over() {
            // The reader is gone: these sends cannot be answered, so they are not written.
            let now = Instant::now();
            let mut rec = rec_of_pacer.lock();
            for (_, e) in lost {
                common.finish(&mut rec, e, Outcome::ConnectionError, None, now, false);
            }
            drop(rec);
            conn.out.clear();
            conn.batch.clear();
            continue;
        }
        let written = Instant::now();
        let result = match conn.stream.as_mut() {
            Some(s) => s.write_all(&conn.out),
            None => Err(std::io::Error::from(std::io::ErrorKind::NotConnected)),
        };
        conn.out.clear();
        let batch = std::mem::take(&mut conn.batch);
        match result {
            Ok(()) => {
                let mut rec = rec_of_pacer.lock();
                for (_, segment, intended) in batch {
                    let lag = us(written.saturating_duration_since(intended));
                    rec.written(segment, lag);
                    if common.oneway {
                        common.end_send(&mut rec, segment, Outcome::Ok, Some(lag), None);
                    }
                }
            }
            Err(_) => {
                conn.shared.broken.store(true, Ordering::Release);
                if let Some(s) = conn.stream.as_ref() {
                    let _ = s.shutdown(Shutdown::Both);
                }
                // Answered sends were handed to the reader, which fails them when it sees
                // the shut-down socket; oneway sends are ended here.
                if common.oneway {
                    let now = Instant::now();
                    let mut rec = rec_of_pacer.lock();
                    for (_, segment, intended) in batch {
                        common.end_send(
                            &mut rec,
                            segment,
                            Outcome::ConnectionError,
                            Some(us(now - intended)),
                            None,
                        );
                    }
                }
            }
        }
    }
}

pub fn connect(c: &mut Conn, common: &Arc<Common>, index: usize) -> std::io::Result<()> {
    let addr = c.addr;
    c.last_attempt = Some(Instant::now());
    // Sends handed to the old reader after it failed the socket: end them here so every
    // scheduled send keeps exactly one outcome.
    c.tx = None;
    c.spare = None;
    if let Some(old) = c.reader.take() {
        if let Ok((rx, map)) = old.join() {
            let now = Instant::now();
            let mut rec = c.recorder.lock();
            for (_, e) in map.into_iter().chain(rx.try_iter().flatten()) {
                c.shared.len.fetch_sub(1, Ordering::AcqRel);
                common.finish(&mut rec, e, Outcome::ConnectionError, None, now, false);
            }
            drop(rec);
            common.wake();
        }
    }
    let stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    stream.set_nodelay(true)?;
    stream.set_write_timeout(Some(common.send_timeout))?;
    let read_half = stream.try_clone()?;
    c.out.clear();
    c.batch.clear();
    c.pending.clear();
    c.shared = Arc::new(Shared::default());
    let (tx, rx) = std::sync::mpsc::channel();
    let (spare_tx, spare_rx) = std::sync::mpsc::channel();
    let ctx = ReaderCtx {
        shared: c.shared.clone(),
        recorder: c.recorder.clone(),
        common: common.clone(),
        rx,
        spare: spare_tx,
        map: InFlightMap::default(),
    };
    let reader = thread::Builder::new()
        .name(format!("harness-reader-{index}"))
        .spawn(move || reader_loop(read_half, ctx))?;
    c.tx = Some(tx);
    c.spare = Some(spare_rx);
    c.reader = Some(reader);
    c.stream = Some(stream);
    Ok(())
}

struct ReaderCtx {
    shared: Arc<Shared>,
    recorder: Arc<Mutex<Recorder>>,
    common: Arc<Common>,
    /// Entries handed over by the pacer, moved into `map` before responses are matched.
    rx: Receiver<Handoffs>,
    /// Gives the emptied vectors back to the pacer.
    spare: Sender<Handoffs>,
    map: InFlightMap,
}

impl ReaderCtx {
    fn take_handoffs(&mut self) {
        while let Ok(mut entries) = self.rx.try_recv() {
            self.map.extend(entries.drain(..));
            // The pacer takes one back per write and makes a new one only when none came back,
            // so no more circulate than were ever in flight at once. Once the pacer is gone the
            // vector is simply dropped.
            let _ = self.spare.send(entries);
        }
    }
}

/// Bytes asked of one `read`: enough for hundreds of pipelined answers.
const READ_CHUNK: usize = 64 * 1024;

fn reader_loop(mut stream: TcpStream, mut ctx: ReaderCtx) -> Leftover {
    if stream.set_read_timeout(Some(SWEEP)).is_err() {
        fail(&mut ctx);
        return (ctx.rx, ctx.map);
    }
    // Bytes are read straight into `inbox[filled..]`; its length is its capacity, so nothing
    // is zeroed or copied per read. Only a partial frame at the end is moved to the front.
    let mut inbox = vec![0u8; 4 * READ_CHUNK];
    let mut filled = 0usize;
    let mut answers: Vec<Answer> = Vec::new();
    let mut last_sweep = Instant::now();
    loop {
        if inbox.len() - filled < READ_CHUNK {
            inbox.resize(filled + READ_CHUNK, 0);
        }
        match stream.read(&mut inbox[filled..]) {
            Ok(0) => {
                fail(&mut ctx);
                return (ctx.rx, ctx.map);
            }
            Ok(n) => {
                filled += n;
                let parsed = parse_answers(&inbox[..filled], &mut answers);
                let used = parsed.unwrap_or(filled);
                inbox.copy_within(used..filled, 0);
                filled -= used;
                handle_answers(&mut ctx, &mut answers);
                if parsed.is_err() {
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

/// One response, as much of it as the recorder needs: the remark only where the code makes it
/// matter (busy classes, `[PC_SYNCHRONIZED]` under code 1, error texts).
struct Answer {
    opaque: i32,
    code: i32,
    remark: Option<String>,
}

/// Appends the complete responses at the front of `buf` to `out` and returns the bytes they
/// took. A success is read with a header peek; anything else is decoded in full. Broker-initiated
/// requests (CHECK_TRANSACTION_STATE, ...) are skipped. `Err` means the stream is corrupt.
fn parse_answers(buf: &[u8], out: &mut Vec<Answer>) -> Result<usize, ()> {
    let mut pos = 0;
    while buf.len() - pos >= 4 {
        let len = u32::from_be_bytes([buf[pos], buf[pos + 1], buf[pos + 2], buf[pos + 3]]) as usize;
        if !(4..=MAX_FRAME_LEN).contains(&len) {
            return Err(());
        }
        if buf.len() - pos < 4 + len {
            break;
        }
        let frame = &buf[pos + 4..pos + 4 + len];
        pos += 4 + len;
        match peek_frame(frame) {
            Some(p) if p.flag & FLAG_RESPONSE == 0 => {}
            Some(p) if p.code == ResponseCode::SUCCESS as i32 => out.push(Answer {
                opaque: p.opaque,
                code: p.code,
                remark: None,
            }),
            _ => {
                let cmd = RemotingCommand::decode(Bytes::copy_from_slice(frame)).map_err(|_| ())?;
                if cmd.is_response() {
                    out.push(Answer {
                        opaque: cmd.opaque,
                        code: cmd.code,
                        remark: cmd.remark,
                    });
                }
            }
        }
    }
    Ok(pos)
}

/// Matches a read's worth of answers against the reader's in-flight map, holding the recorder
/// once for all of them, and wakes the pacer once.
fn handle_answers(ctx: &mut ReaderCtx, answers: &mut Vec<Answer>) {
    if answers.is_empty() {
        return;
    }
    let now = Instant::now();
    ctx.take_handoffs();
    let mut rec = ctx.recorder.lock();
    let mut matched = 0;
    for a in answers.drain(..) {
        let remark = a.remark.as_deref();
        let outcome = classify(a.code, remark);
        match ctx.map.remove(&a.opaque) {
            Some(e) => {
                matched += 1;
                rec.attempt_answer(e.segment, a.code, remark);
                if let Some(b) = e.broker {
                    rec.broker_answer(e.segment, b, outcome, now);
                }
                ctx.common
                    .finish(&mut rec, e, outcome, Some(a.code), now, true);
            }
            None => {
                let seg = ctx.common.current_segment.load(Ordering::Relaxed);
                rec.late_answer(seg, a.code, remark);
                if ctx.common.oneway {
                    rec.reclassify_oneway(seg, outcome);
                }
            }
        }
    }
    drop(rec);
    // One atomic for the whole read: the pacer looks at it only after the wake below.
    ctx.shared.len.fetch_sub(matched, Ordering::AcqRel);
    ctx.common.wake();
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
    if expired.is_empty() {
        return;
    }
    let mut rec = ctx.recorder.lock();
    for e in expired {
        ctx.shared.len.fetch_sub(1, Ordering::AcqRel);
        ctx.common
            .finish(&mut rec, e, Outcome::Timeout, None, now, false);
    }
    drop(rec);
    ctx.common.wake();
}

fn fail(ctx: &mut ReaderCtx) {
    ctx.shared.broken.store(true, Ordering::Release);
    if ctx.common.closing.load(Ordering::Acquire) {
        return;
    }
    let now = Instant::now();
    ctx.take_handoffs();
    let lost: Vec<InFlight> = ctx.map.drain().map(|(_, e)| e).collect();
    let mut rec = ctx.recorder.lock();
    for e in lost {
        ctx.shared.len.fetch_sub(1, Ordering::AcqRel);
        ctx.common
            .finish(&mut rec, e, Outcome::ConnectionError, None, now, false);
    }
    drop(rec);
    ctx.common.wake();
}
