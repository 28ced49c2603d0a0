//! The one worker loop: a pacing thread that writes every send when it is due, and one reader
//! thread per connection that matches responses by opaque.
//!
//! Why the pacer writes itself: handing intended times to async tasks adds a cross-thread
//! wake-up (tens of µs, and up to a millisecond of timer granularity) to every send. The pacer
//! sleeps coarsely, spins the last [`SPIN`], and calls `write` on a blocking socket at the due
//! instant, so `lag` (actual write − intended) measures only the generator.
//!
//! Open loop: send `i` of a phase is due at `phase_start + i/rate`. When every connection has
//! `max_in_flight` sends outstanding, due sends wait in a bounded backlog and are written as
//! soon as a slot frees, keeping their intended time (latency accrues from it, lag shows the
//! wait). A send that waited `send_timeout` without a slot is `dropped`; its latency is
//! recorded as the time it waited ("the time until it could have been sent").

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use remoting::{decode_frame, MAX_FRAME_LEN};
use tokio_util::sync::CancellationToken;

use crate::profile::{Model, RetryPolicy, Workload};
use crate::recorder::{classify, Interval, Outcome, Recorder};
use crate::runner::client::SendBuilder;

/// How long before a due time the pacer stops sleeping and spins.
pub const SPIN: Duration = Duration::from_micros(150);
/// How often readers look for timed-out sends.
const SWEEP: Duration = Duration::from_millis(5);
/// Minimum time between reconnect attempts of one connection.
const RECONNECT_EVERY: Duration = Duration::from_millis(100);
/// Attempts of one send under a retry policy: retryTimesWhenSendFailed (2) + 1 (§11).
const MAX_ATTEMPTS: u32 = 3;

/// A stretch of the schedule recorded into one segment (0 = warm-up).
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub segment: usize,
    /// Sends per second (open loop); unused in the closed loop.
    pub rate: f64,
    pub duration: Duration,
}

impl Phase {
    fn count(&self) -> u64 {
        (self.rate * self.duration.as_secs_f64()).ceil() as u64
    }
}

/// The pacing strategy of the worker loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// Every send has an intended time fixed in advance.
    Open,
    /// A send is issued whenever fewer than `concurrency` are outstanding.
    Closed { concurrency: usize },
}

/// The schedule of a workload: warm-up (segment 0) then the measured phases (segments 1..).
pub fn plan(w: &Workload) -> (Pacing, Vec<Phase>) {
    let mut phases = vec![Phase {
        segment: 0,
        rate: w.warmup_rate(),
        duration: w.warmup.duration(),
    }];
    match w.model {
        Model::Steps => {
            for (i, s) in w.steps.iter().enumerate() {
                phases.push(Phase {
                    segment: i + 1,
                    rate: s.rate,
                    duration: s.duration.duration(),
                });
            }
        }
        _ => phases.push(Phase {
            segment: 1,
            rate: w.rate,
            duration: w.duration.duration(),
        }),
    }
    let pacing = match w.model {
        Model::Closed => Pacing::Closed {
            concurrency: w.concurrency as usize,
        },
        _ => Pacing::Open,
    };
    (pacing, phases)
}

/// Everything the loop needs.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub addr: SocketAddr,
    pub workload: Workload,
    pub pacing: Pacing,
    pub phases: Vec<Phase>,
}

impl LoadConfig {
    pub fn new(addr: SocketAddr, workload: &Workload) -> LoadConfig {
        let (pacing, phases) = plan(workload);
        LoadConfig {
            addr,
            workload: workload.clone(),
            pacing,
            phases,
        }
    }

    pub fn segments(&self) -> usize {
        self.phases.iter().map(|p| p.segment).max().unwrap_or(0) + 1
    }

    /// Total scheduled time, warm-up included.
    pub fn total(&self) -> Duration {
        self.phases.iter().map(|p| p.duration).sum()
    }

    /// The phase active `elapsed` after the start (None once the schedule is over).
    pub fn phase_at(&self, elapsed: Duration) -> Option<&Phase> {
        let mut t = Duration::ZERO;
        for p in &self.phases {
            t += p.duration;
            if elapsed < t {
                return Some(p);
            }
        }
        None
    }
}

/// Start-up failures of the loop.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("no connection to {addr} could be opened: {source}")]
    Connect {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot start a worker thread: {0}")]
    Spawn(std::io::Error),
}

struct InFlight {
    seq: u64,
    intended: Instant,
    written: Instant,
    first_written: Instant,
    segment: usize,
    attempt: u32,
}

/// A connection slot's state shared between the pacer and its reader. The in-flight map
/// itself is owned by the reader: the pacer hands entries over a channel, so it never waits on a
/// lock held by a reader that the scheduler has preempted.
#[derive(Default)]
struct Shared {
    len: AtomicUsize,
    broken: AtomicBool,
}

type Handoff = (i32, InFlight);

/// What a reader leaves behind: entries nobody answered yet.
type Leftover = (Receiver<Handoff>, HashMap<i32, InFlight>);

struct Retry {
    seq: u64,
    intended: Instant,
    first_written: Instant,
    segment: usize,
    attempt: u32,
}

/// What readers share with the pacer.
struct Common {
    policy: RetryPolicy,
    send_timeout: Duration,
    oneway: bool,
    closed_loop: bool,
    outstanding: AtomicUsize,
    current_segment: AtomicUsize,
    closing: AtomicBool,
    retry_tx: SyncSender<Retry>,
    pacer: Mutex<Option<Thread>>,
}

impl Common {
    fn wake(&self) {
        if let Some(t) = lock(&self.pacer).as_ref() {
            t.unpark();
        }
    }

    fn retryable(&self, outcome: Outcome, code: Option<i32>) -> bool {
        let transport = matches!(outcome, Outcome::Timeout | Outcome::ConnectionError);
        match self.policy {
            RetryPolicy::None => false,
            RetryPolicy::Rocketmq4 => {
                transport || code.is_some_and(|c| [17, 14, 1, 16, 204, 205].contains(&c))
            }
            RetryPolicy::Rocketmq53 => {
                transport || code.is_some_and(|c| [17, 14, 1, 16, 204, 205, 2, 1500].contains(&c))
            }
        }
    }

    /// Retries `e` if the policy and budget allow; otherwise records the final outcome.
    fn finish(
        &self,
        rec: &Mutex<Recorder>,
        e: InFlight,
        outcome: Outcome,
        code: Option<i32>,
        now: Instant,
        answered: bool,
    ) {
        if self.retryable(outcome, code)
            && e.attempt < MAX_ATTEMPTS
            && now < e.first_written + self.send_timeout
        {
            let r = Retry {
                seq: e.seq,
                intended: e.intended,
                first_written: e.first_written,
                segment: e.segment,
                attempt: e.attempt + 1,
            };
            if self.retry_tx.try_send(r).is_ok() {
                self.wake();
                return;
            }
        }
        let service = answered.then(|| us(now - e.written));
        lock(rec).outcome(e.segment, outcome, Some(us(now - e.intended)), service);
        if self.closed_loop {
            self.outstanding.fetch_sub(1, Ordering::AcqRel);
        }
        self.wake();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking worker must not take the measurements of the others with it.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

struct Conn {
    shared: Arc<Shared>,
    stream: Option<TcpStream>,
    /// Hands in-flight entries to this connection's reader.
    tx: Option<std::sync::mpsc::Sender<Handoff>>,
    reader: Option<JoinHandle<Leftover>>,
    last_attempt: Option<Instant>,
    opaque: i32,
    recorder: Arc<Mutex<Recorder>>,
    /// Encoded sends not yet written, and their (opaque, segment, intended time).
    out: BytesMut,
    batch: Vec<(i32, usize, Instant)>,
}

/// A running load. Dropping it without [`LoadHandle::join`] stops and joins the threads.
pub struct LoadHandle {
    /// Intended time of the first send.
    pub start: Instant,
    recorders: Vec<Arc<Mutex<Recorder>>>,
    spin_ns: Arc<AtomicU64>,
    stop: CancellationToken,
    finished: Arc<AtomicBool>,
    pacer: Option<JoinHandle<()>>,
}

impl LoadHandle {
    /// Connects and starts the pacer; the first send is due ~50 ms from now.
    pub fn start(cfg: LoadConfig) -> Result<LoadHandle, LoadError> {
        let w = &cfg.workload;
        let segments = cfg.segments();
        let (retry_tx, retry_rx) = sync_channel(4096);
        let common = Arc::new(Common {
            policy: w.retry,
            send_timeout: w.send_timeout.duration(),
            oneway: w.oneway,
            closed_loop: matches!(cfg.pacing, Pacing::Closed { .. }),
            outstanding: AtomicUsize::new(0),
            current_segment: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
            retry_tx,
            pacer: Mutex::new(None),
        });
        let pacer_rec = Arc::new(Mutex::new(Recorder::new(segments)));
        let mut recorders = vec![pacer_rec.clone()];
        let mut conns = Vec::new();
        let mut last_err = None;
        for _ in 0..w.connections {
            let rec = Arc::new(Mutex::new(Recorder::new(segments)));
            recorders.push(rec.clone());
            let mut c = Conn {
                shared: Arc::new(Shared::default()),
                stream: None,
                tx: None,
                reader: None,
                last_attempt: None,
                opaque: 0,
                recorder: rec,
                out: BytesMut::new(),
                batch: Vec::new(),
            };
            if let Err(e) = connect(&mut c, cfg.addr, &common, conns.len()) {
                last_err = Some(e);
            }
            conns.push(c);
        }
        if conns.iter().all(|c| c.stream.is_none()) {
            let source =
                last_err.unwrap_or_else(|| std::io::Error::other("no connections configured"));
            let mut p = Pacer::idle(cfg.clone(), common, conns, retry_rx, pacer_rec);
            p.close();
            return Err(LoadError::Connect {
                addr: cfg.addr,
                source,
            });
        }
        let start = Instant::now() + Duration::from_millis(50);
        let spin_ns = Arc::new(AtomicU64::new(0));
        let stop = CancellationToken::new();
        let finished = Arc::new(AtomicBool::new(false));
        let mut pacer = Pacer::idle(cfg, common.clone(), conns, retry_rx, pacer_rec);
        pacer.start = start;
        pacer.spin_ns = spin_ns.clone();
        pacer.stop = stop.clone();
        let fin = finished.clone();
        let handle = thread::Builder::new()
            .name("harness-pacer".into())
            .spawn(move || {
                pacer.run();
                fin.store(true, Ordering::Release);
            })
            .map_err(LoadError::Spawn)?;
        *lock(&common.pacer) = Some(handle.thread().clone());
        Ok(LoadHandle {
            start,
            recorders,
            spin_ns,
            stop,
            finished,
            pacer: Some(handle),
        })
    }

    /// Takes the per-second interval out of every worker.
    pub fn take_interval(&self) -> Interval {
        let mut total = Interval::default();
        for r in &self.recorders {
            let i = lock(r).take_interval();
            total.merge(&i);
        }
        total
    }

    /// Nanoseconds the pacer spent spin-waiting (excluded from harness CPU).
    pub fn spin_ns(&self) -> u64 {
        self.spin_ns.load(Ordering::Relaxed)
    }

    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// Stops scheduling new sends; in-flight sends get a short drain.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Waits for the end and merges the workers' recorders once.
    pub fn join(mut self) -> Recorder {
        if let Some(h) = self.pacer.take() {
            let _ = h.join();
        }
        let mut merged = lock(&self.recorders[0]).clone();
        for r in &self.recorders[1..] {
            merged.merge(&lock(r));
        }
        merged
    }
}

impl Drop for LoadHandle {
    fn drop(&mut self) {
        if let Some(h) = self.pacer.take() {
            self.stop.cancel();
            let _ = h.join();
        }
    }
}

fn connect(
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
                lock(&ctx.recorder).attempt_answer(e.segment, cmd.code, remark);
                ctx.common
                    .finish(&ctx.recorder, e, outcome, Some(cmd.code), now, true);
            }
            None => {
                let seg = ctx.common.current_segment.load(Ordering::Relaxed);
                let mut rec = lock(&ctx.recorder);
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

struct Pending {
    seq: u64,
    intended: Instant,
    segment: usize,
}

enum Pick {
    Conn(usize),
    Full,
    Down,
}

struct Pacer {
    cfg: LoadConfig,
    common: Arc<Common>,
    conns: Vec<Conn>,
    retry_rx: Receiver<Retry>,
    rec: Arc<Mutex<Recorder>>,
    builder: SendBuilder,
    start: Instant,
    spin_ns: Arc<AtomicU64>,
    stop: CancellationToken,
    rr: usize,
    buf: BytesMut,
    backlog: VecDeque<Pending>,
    backlog_cap: usize,
}

impl Pacer {
    fn idle(
        cfg: LoadConfig,
        common: Arc<Common>,
        conns: Vec<Conn>,
        retry_rx: Receiver<Retry>,
        rec: Arc<Mutex<Recorder>>,
    ) -> Pacer {
        let max_rate = cfg.phases.iter().map(|p| p.rate).fold(0.0, f64::max);
        let backlog_cap =
            ((max_rate * common.send_timeout.as_secs_f64()) as usize).clamp(1024, 2_000_000);
        Pacer {
            builder: SendBuilder::new(&cfg.workload),
            cfg,
            common,
            conns,
            retry_rx,
            rec,
            start: Instant::now(),
            spin_ns: Arc::new(AtomicU64::new(0)),
            stop: CancellationToken::new(),
            rr: 0,
            buf: BytesMut::with_capacity(8 * 1024),
            backlog: VecDeque::new(),
            backlog_cap,
        }
    }

    fn run(&mut self) {
        set_timer_slack();
        self.wait_until(self.start);
        while self.start > Instant::now() {
            self.wait_until(self.start);
        }
        let mut phase = 0usize;
        let mut j: u64 = 0;
        let mut seq: u64 = 0;
        let mut phase_start = self.start;
        loop {
            if self.stop.is_cancelled() {
                break;
            }
            self.drain_retries();
            let now = Instant::now();
            let mut next_due = None;
            match self.cfg.pacing {
                Pacing::Open => {
                    while phase < self.cfg.phases.len() {
                        let ph = &self.cfg.phases[phase];
                        if j >= ph.count() {
                            phase_start += ph.duration;
                            phase += 1;
                            j = 0;
                            continue;
                        }
                        let due = phase_start + Duration::from_secs_f64(j as f64 / ph.rate);
                        if due > now {
                            next_due = Some(due);
                            break;
                        }
                        let segment = ph.segment;
                        self.common
                            .current_segment
                            .store(segment, Ordering::Relaxed);
                        lock(&self.rec).scheduled(segment);
                        if self.backlog.len() >= self.backlog_cap {
                            lock(&self.rec).outcome(segment, Outcome::Dropped, Some(0), None);
                        } else {
                            self.backlog.push_back(Pending {
                                seq,
                                intended: due,
                                segment,
                            });
                        }
                        seq += 1;
                        j += 1;
                    }
                    self.flush_backlog();
                    if phase >= self.cfg.phases.len() && self.backlog.is_empty() {
                        break;
                    }
                }
                Pacing::Closed { concurrency } => {
                    let Some(ph) = self.cfg.phase_at(now.saturating_duration_since(self.start))
                    else {
                        break;
                    };
                    let segment = ph.segment;
                    self.common
                        .current_segment
                        .store(segment, Ordering::Relaxed);
                    while self.common.outstanding.load(Ordering::Acquire) < concurrency {
                        match self.pick() {
                            Pick::Conn(c) => {
                                lock(&self.rec).scheduled(segment);
                                self.common.outstanding.fetch_add(1, Ordering::AcqRel);
                                let t = Instant::now();
                                self.write(c, seq, t, None, segment, 1);
                                seq += 1;
                            }
                            Pick::Full => break,
                            Pick::Down => {
                                lock(&self.rec).scheduled(segment);
                                lock(&self.rec).outcome(
                                    segment,
                                    Outcome::ConnectionError,
                                    Some(0),
                                    None,
                                );
                                seq += 1;
                                break;
                            }
                        }
                    }
                    self.flush_conns();
                }
            }
            // Wait: for the next due send, or (slots exhausted / closed loop) for a completion.
            let waiting_for_slot =
                !self.backlog.is_empty() || matches!(self.cfg.pacing, Pacing::Closed { .. });
            match next_due {
                Some(due) if !waiting_for_slot => self.wait_until(due),
                Some(due) => thread::park_timeout(
                    due.saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(1)),
                ),
                None => thread::park_timeout(Duration::from_millis(1)),
            }
        }
        self.drain();
        self.close();
    }

    /// Writes backlog entries while connections have free slots.
    fn flush_backlog(&mut self) {
        while let Some(p) = self.backlog.front() {
            let now = Instant::now();
            if now.saturating_duration_since(p.intended) >= self.common.send_timeout {
                let p = self.backlog.pop_front().expect("front exists");
                lock(&self.rec).outcome(
                    p.segment,
                    Outcome::Dropped,
                    Some(us(now - p.intended)),
                    None,
                );
                continue;
            }
            match self.pick() {
                Pick::Conn(c) => {
                    let p = self.backlog.pop_front().expect("front exists");
                    self.write(c, p.seq, p.intended, None, p.segment, 1);
                }
                Pick::Full => break,
                Pick::Down => {
                    let p = self.backlog.pop_front().expect("front exists");
                    lock(&self.rec).outcome(
                        p.segment,
                        Outcome::ConnectionError,
                        Some(us(now - p.intended)),
                        None,
                    );
                }
            }
        }
        self.flush_conns();
    }

    fn drain_retries(&mut self) {
        loop {
            match self.retry_rx.try_recv() {
                Ok(r) => match self.pick() {
                    Pick::Conn(c) => self.write(
                        c,
                        r.seq,
                        r.intended,
                        Some(r.first_written),
                        r.segment,
                        r.attempt,
                    ),
                    Pick::Full | Pick::Down => {
                        // No slot: the retry fails like the Java client's would, as a connection error.
                        let now = Instant::now();
                        lock(&self.rec).outcome(
                            r.segment,
                            Outcome::ConnectionError,
                            Some(us(now - r.intended)),
                            None,
                        );
                        if self.common.closed_loop {
                            self.common.outstanding.fetch_sub(1, Ordering::AcqRel);
                        }
                    }
                },
                Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => {
                    self.flush_conns();
                    return;
                }
            }
        }
    }

    /// Round robin over healthy connections with a free slot; reconnects broken ones.
    fn pick(&mut self) -> Pick {
        let n = self.conns.len();
        let max = self.cfg.workload.max_in_flight as usize;
        let mut any_up = false;
        for k in 0..n {
            let i = (self.rr + k) % n;
            let broken = self.conns[i].stream.is_none()
                || self.conns[i].shared.broken.load(Ordering::Acquire);
            if broken {
                let due = self.conns[i]
                    .last_attempt
                    .is_none_or(|t| t.elapsed() >= RECONNECT_EVERY);
                if !due || self.stop.is_cancelled() {
                    continue;
                }
                if let Some(s) = self.conns[i].stream.take() {
                    let _ = s.shutdown(Shutdown::Both);
                }
                if connect(&mut self.conns[i], self.cfg.addr, &self.common, i).is_err() {
                    continue;
                }
            }
            any_up = true;
            if self.common.oneway || self.conns[i].shared.len.load(Ordering::Acquire) < max {
                self.rr = i + 1;
                return Pick::Conn(i);
            }
        }
        if any_up {
            Pick::Full
        } else {
            Pick::Down
        }
    }

    /// Encodes one attempt into the connection's output buffer; [`Pacer::flush_conns`] writes
    /// it. Sends due together (a catch-up after a late wake-up) go out in one `write`.
    fn write(
        &mut self,
        c: usize,
        seq: u64,
        intended: Instant,
        first_written: Option<Instant>,
        segment: usize,
        attempt: u32,
    ) {
        let conn = &mut self.conns[c];
        conn.opaque = conn.opaque.wrapping_add(1) & 0x3fff_ffff;
        let opaque = conn.opaque;
        self.builder.encode(seq, opaque, &mut self.buf);
        conn.out.extend_from_slice(&self.buf);
        if !self.common.oneway {
            let now = Instant::now();
            let e = InFlight {
                seq,
                intended,
                written: now,
                first_written: first_written.unwrap_or(now),
                segment,
                attempt,
            };
            conn.shared.len.fetch_add(1, Ordering::AcqRel);
            let handed = match conn.tx.as_ref() {
                Some(tx) => tx.send((opaque, e)).map_err(|err| err.0 .1),
                None => Err(e),
            };
            if let Err(e) = handed {
                // The reader is gone: this send cannot be answered.
                conn.shared.len.fetch_sub(1, Ordering::AcqRel);
                self.common.finish(
                    &self.rec,
                    e,
                    Outcome::ConnectionError,
                    None,
                    Instant::now(),
                    false,
                );
                conn.out.truncate(conn.out.len() - self.buf.len());
                return;
            }
        }
        conn.batch.push((opaque, segment, intended));
    }

    /// Writes every connection's pending sends; lag is measured at the `write` call.
    fn flush_conns(&mut self) {
        for conn in &mut self.conns {
            if conn.batch.is_empty() {
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
                    let mut rec = lock(&self.rec);
                    for (_, segment, intended) in batch {
                        let lag = us(written.saturating_duration_since(intended));
                        rec.written(segment, lag);
                        if self.common.oneway {
                            rec.outcome(segment, Outcome::Ok, Some(lag), None);
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
                    if self.common.oneway {
                        let now = Instant::now();
                        let mut rec = lock(&self.rec);
                        for (_, segment, intended) in batch {
                            rec.outcome(
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

    /// After the schedule: wait for answers (and retries) up to the send timeout.
    fn drain(&mut self) {
        let cancelled = self.stop.is_cancelled();
        let limit = if cancelled {
            self.common.send_timeout.min(Duration::from_secs(1))
        } else {
            self.common.send_timeout + Duration::from_millis(500)
        };
        let deadline = Instant::now() + limit;
        loop {
            self.drain_retries();
            self.flush_backlog();
            let inflight: usize = self
                .conns
                .iter()
                .map(|c| c.shared.len.load(Ordering::Acquire))
                .sum();
            if inflight == 0 && self.backlog.is_empty() || Instant::now() >= deadline {
                break;
            }
            thread::park_timeout(Duration::from_millis(2));
        }
        let now = Instant::now();
        for p in std::mem::take(&mut self.backlog) {
            lock(&self.rec).outcome(
                p.segment,
                Outcome::Dropped,
                Some(us(now - p.intended)),
                None,
            );
        }
    }

    /// Ends every remaining send as a timeout, closes the sockets and joins the readers.
    fn close(&mut self) {
        // Retries queued now cannot be sent any more; they end as timeouts below.
        self.common.closing.store(true, Ordering::Release);
        let now = Instant::now();
        for c in &mut self.conns {
            c.tx = None;
            if let Some(s) = c.stream.take() {
                let _ = s.shutdown(Shutdown::Both);
            }
            if let Some(r) = c.reader.take() {
                if let Ok((rx, map)) = r.join() {
                    let mut rec = lock(&c.recorder);
                    for (_, e) in map.into_iter().chain(rx.try_iter()) {
                        c.shared.len.fetch_sub(1, Ordering::AcqRel);
                        rec.outcome(
                            e.segment,
                            Outcome::Timeout,
                            Some(us(now - e.intended)),
                            None,
                        );
                    }
                }
            }
        }
        while let Ok(r) = self.retry_rx.try_recv() {
            lock(&self.rec).outcome(
                r.segment,
                Outcome::Timeout,
                Some(us(now - r.intended)),
                None,
            );
        }
    }

    /// Sleeps coarsely, then spins the last [`SPIN`]. Returns early after a coarse sleep (at
    /// most 1 ms) so the caller can look at retries and cancellation.
    fn wait_until(&self, t: Instant) {
        let now = Instant::now();
        if now >= t {
            return;
        }
        let rem = t - now;
        if rem > SPIN {
            thread::sleep((rem - SPIN).min(Duration::from_millis(1)));
            return;
        }
        let s = Instant::now();
        while Instant::now() < t {
            std::hint::spin_loop();
        }
        self.spin_ns
            .fetch_add(us(s.elapsed()) * 1000, Ordering::Relaxed);
    }
}

/// 1 µs timer slack for the pacer: the default 50 µs would be added to every coarse sleep.
fn set_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument and affects only the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}
