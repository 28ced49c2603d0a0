//! Reading one connection's answers: each is matched by opaque against the in-flight map and
//! its send ended; sends past their budget are timed out; a broken connection fails every send
//! it holds.
//!
//! Who runs a [`Reader`] depends on the loop ([`crate::runner::common::Reading`]). In the open loop a thread per
//! connection does ([`spawn`]), so reading never delays a due send. In the closed loop nothing
//! is due at an instant: the pacer reads itself between refills ([`crate::runner::inline`]), as a
//! minimal sender does, and saves the wake-up and the two context switches that handing the
//! answers to another thread on the same core cost every round trip.

use std::io;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use remoting::{PeekCache, RemotingCommand, ResponseCode, FLAG_RESPONSE, MAX_FRAME_LEN};

use crate::recorder::{classify, Outcome, Recorder};
use crate::runner::common::{Common, EndTime, InFlight};
use crate::runner::inflight::InFlightTable;

/// How often readers look for timed-out sends.
pub const SWEEP: Duration = Duration::from_millis(5);

/// Bytes asked of one `read`: enough for hundreds of pipelined answers.
const READ_CHUNK: usize = 64 * 1024;

/// A connection slot's state shared between the pacer and its reader. The in-flight map
/// itself is owned by the reader: the pacer hands entries over a channel, so it never waits on a
/// lock held by a reader that the scheduler has preempted. It hands them a write's worth at a
/// time ([`Handoffs`]): one channel operation per `write`, not one per send.
#[derive(Default)]
pub struct Shared {
    pub len: AtomicUsize,
    pub broken: AtomicBool,
}

/// The in-flight entries of one `write`, handed to the reader before the bytes go out.
pub type Handoffs = Vec<InFlight>;

/// The reader thread's end of the hand-over (open loop). An inline reader has none: the pacer
/// puts entries straight into its table ([`Reader::adopt`]).
pub struct HandoverRx {
    rx: Receiver<Handoffs>,
    /// Gives the emptied vectors back to the pacer.
    spare: Sender<Handoffs>,
}

/// The pacer's end of the hand-over: entries go one way, emptied vectors come back.
pub struct HandoverTx {
    pub tx: Sender<Handoffs>,
    pub spare: Receiver<Handoffs>,
}

/// A hand-over channel pair. Unbounded in type, bounded in use: every entry in the channel is
/// counted in [`Shared::len`] before it is sent, and the pacer hands nothing over once that
/// count reaches `max_in_flight`; no more vectors circulate than writes were ever in flight.
pub fn handover() -> (HandoverTx, HandoverRx) {
    let (tx, rx) = std::sync::mpsc::channel();
    let (spare_tx, spare_rx) = std::sync::mpsc::channel();
    (
        HandoverTx {
            tx,
            spare: spare_rx,
        },
        HandoverRx {
            rx,
            spare: spare_tx,
        },
    )
}

/// What a reader leaves behind: entries nobody answered yet, in its table and (a reader
/// thread's) still in the hand-over channel.
pub struct Leftover {
    handed: Option<Receiver<Handoffs>>,
    map: InFlightTable,
}

impl Leftover {
    /// Every entry left, each once.
    pub fn into_entries(mut self) -> Vec<InFlight> {
        let mut all = self.map.take_all();
        if let Some(rx) = self.handed {
            all.extend(rx.try_iter().flatten());
        }
        all
    }
}

/// How one read waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Up to the socket's read timeout.
    Blocking,
    /// Not at all (`MSG_DONTWAIT`): the caller polled first.
    DontWait,
}

/// What one read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadStep {
    /// Bytes came, and every complete answer among them was handled.
    Read,
    /// Nothing within the wait.
    Idle,
    /// The connection is gone: every send it held has ended as a connection error.
    Failed,
}

pub struct ReaderCtx {
    pub shared: Arc<Shared>,
    pub recorder: Arc<Mutex<Recorder>>,
    pub common: Arc<Common>,
    /// Entries handed over by the pacer, moved into `map` before responses are matched (a
    /// reader thread's; `None` for an inline reader).
    pub handover: Option<HandoverRx>,
    pub map: InFlightTable,
}

impl ReaderCtx {
    fn take_handoffs(&mut self) {
        let Some(h) = &self.handover else { return };
        while let Ok(mut entries) = h.rx.try_recv() {
            self.map.extend(entries.drain(..));
            // The pacer takes one back per write and makes a new one only when none came back,
            // so no more circulate than were ever in flight at once. Once the pacer is gone the
            // vector is simply dropped.
            let _ = h.spare.send(entries);
        }
    }
}

/// One connection's reading side.
pub struct Reader {
    stream: TcpStream,
    ctx: ReaderCtx,
    /// Bytes are read straight into `inbox[filled..]`; its length is its capacity, so nothing
    /// is zeroed or copied per read. Only a partial frame at the end is moved to the front.
    inbox: Vec<u8>,
    filled: usize,
    answers: Vec<Answer>,
    /// One broker's answers share their layout: each is compared with the last one's.
    peek: PeekCache,
    last_sweep: Instant,
    failed: bool,
}

impl Reader {
    /// `stream` is blocking, with the read timeout that [`Wait::Blocking`] waits.
    pub fn new(stream: TcpStream, ctx: ReaderCtx) -> Reader {
        Reader {
            stream,
            ctx,
            inbox: vec![0u8; 4 * READ_CHUNK],
            filled: 0,
            answers: Vec::new(),
            peek: PeekCache::new(),
            last_sweep: Instant::now(),
            failed: false,
        }
    }

    pub fn fd(&self) -> std::os::fd::RawFd {
        self.stream.as_raw_fd()
    }

    pub fn failed(&self) -> bool {
        self.failed
    }

    /// One read, and the answers it completes.
    pub fn read_once(&mut self, wait: Wait) -> ReadStep {
        if self.failed {
            return ReadStep::Failed;
        }
        if self.inbox.len() - self.filled < READ_CHUNK {
            self.inbox.resize(self.filled + READ_CHUNK, 0);
        }
        match recv(&self.stream, &mut self.inbox[self.filled..], wait) {
            Ok(0) => self.fail(),
            Ok(n) => {
                self.filled += n;
                let parsed = parse_answers(
                    &self.inbox[..self.filled],
                    &mut self.peek,
                    &mut self.answers,
                );
                let used = parsed.unwrap_or(self.filled);
                self.inbox.copy_within(used..self.filled, 0);
                self.filled -= used;
                handle_answers(&mut self.ctx, &mut self.answers);
                if parsed.is_err() {
                    let _ = self.stream.shutdown(Shutdown::Both);
                    return self.fail();
                }
                ReadStep::Read
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                ReadStep::Idle
            }
            Err(_) => self.fail(),
        }
    }

    /// Takes a send about to be written into the in-flight table, for a pacer that reads this
    /// connection itself: the table is on its own thread, so nothing is handed over (a channel
    /// send, a spare vector's return and each entry copied twice on the way were 6% of the
    /// closed loop's time at the floor).
    #[inline(always)]
    pub fn adopt(&mut self, opaque: i32, make: impl FnOnce() -> InFlight) {
        self.ctx.map.insert_with(opaque, make);
        // Only the pacer's thread changes this count when it reads the connection itself (its
        // reads, sweeps, reconnects and close all run there), so a load and a store count the
        // send without the locked add per send that handing over had paid once per write.
        let len = &self.ctx.shared.len;
        len.store(len.load(Ordering::Acquire) + 1, Ordering::Release);
    }

    /// Times out sends past their budget, at most once a [`SWEEP`].
    pub fn sweep_due(&mut self, now: Instant) {
        if now.saturating_duration_since(self.last_sweep) >= SWEEP {
            self.last_sweep = now;
            sweep(&mut self.ctx, now);
        }
    }

    /// The entries nobody answered, for whoever ends them.
    pub fn into_leftover(self) -> Leftover {
        Leftover {
            handed: self.ctx.handover.map(|h| h.rx),
            map: self.ctx.map,
        }
    }

    fn fail(&mut self) -> ReadStep {
        self.failed = true;
        fail(&mut self.ctx);
        ReadStep::Failed
    }
}

/// `recv(2)` into `buf`; [`Wait::DontWait`] passes `MSG_DONTWAIT`, so the socket itself stays
/// blocking for the pacer's writes and for [`Wait::Blocking`] reads.
fn recv(stream: &TcpStream, buf: &mut [u8], wait: Wait) -> io::Result<usize> {
    let flags = match wait {
        Wait::Blocking => 0,
        Wait::DontWait => libc::MSG_DONTWAIT,
    };
    // SAFETY: the pointer and length describe `buf`, which outlives the call; the descriptor
    // is `stream`'s, open for the duration of the borrow.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            flags,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// A reader thread for `stream` (the open loop), reading until the connection fails.
pub fn spawn(stream: TcpStream, ctx: ReaderCtx, index: usize) -> io::Result<JoinHandle<Leftover>> {
    thread::Builder::new()
        .name(format!("harness-reader-{index}"))
        .spawn(move || {
            let mut r = Reader::new(stream, ctx);
            if r.stream.set_read_timeout(Some(SWEEP)).is_err() {
                r.fail();
                return r.into_leftover();
            }
            loop {
                if r.read_once(Wait::Blocking) == ReadStep::Failed {
                    return r.into_leftover();
                }
                r.sweep_due(Instant::now());
            }
        })
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
fn parse_answers(buf: &[u8], peek: &mut PeekCache, out: &mut Vec<Answer>) -> Result<usize, ()> {
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
        match peek.peek_frame(frame) {
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
    let end = EndTime::new(now);
    ctx.take_handoffs();
    let mut rec = ctx.recorder.lock();
    // The answers to one refill that one read brings share their latency: recorded as runs.
    let common = &ctx.common;
    let matched = rec.runs(|rec| {
        let mut matched = 0;
        for a in answers.drain(..) {
            let remark = a.remark.as_deref();
            let outcome = classify(a.code, remark);
            let found = ctx.map.take_with(a.opaque, |e| {
                rec.attempt_answer(e.segment(), outcome, remark);
                if let Some(b) = e.broker() {
                    rec.broker_answer(e.segment(), b, outcome, now);
                }
                common.finish(rec, e, outcome, Some(a.code), &end, true);
            });
            match found {
                Some(()) => matched += 1,
                None => {
                    let seg = common.current_segment.load(Ordering::Relaxed);
                    rec.late_answer(seg, a.code, remark);
                    if common.oneway {
                        rec.reclassify_oneway(seg, outcome);
                    }
                }
            }
        }
        matched
    });
    drop(rec);
    // One atomic for the whole read: the pacer looks at it only after the wake below.
    ctx.shared.len.fetch_sub(matched, Ordering::AcqRel);
    ctx.common.wake();
}

/// Times out sends past their budget.
fn sweep(ctx: &mut ReaderCtx, now: Instant) {
    ctx.take_handoffs();
    let budget = ctx.common.send_timeout;
    // First written a budget ago or earlier (`now >= first_written + budget`); a run begun
    // less than a budget after the clock's origin has nothing that old.
    let Some(cutoff) = now.checked_sub(budget) else {
        return;
    };
    let expired = ctx.map.take_where(|e| e.first_written_by(cutoff));
    if expired.is_empty() {
        return;
    }
    end_unanswered(ctx, expired, Outcome::Timeout, now);
}

fn fail(ctx: &mut ReaderCtx) {
    ctx.shared.broken.store(true, Ordering::Release);
    if ctx.common.closing.load(Ordering::Acquire) {
        return;
    }
    ctx.take_handoffs();
    let lost = ctx.map.take_all();
    end_unanswered(ctx, lost, Outcome::ConnectionError, Instant::now());
}

/// Ends sends whose answer can no longer come with `outcome`, frees their in-flight slots, and
/// wakes the pacer.
fn end_unanswered(ctx: &ReaderCtx, sends: Vec<InFlight>, outcome: Outcome, now: Instant) {
    let end = EndTime::new(now);
    let mut rec = ctx.recorder.lock();
    for e in sends {
        ctx.shared.len.fetch_sub(1, Ordering::AcqRel);
        ctx.common.finish(&mut rec, &e, outcome, None, &end, false);
    }
    drop(rec);
    ctx.common.wake();
}
