//! The pacer: one thread that writes every send at its due instant (open loop) or whenever a
//! slot frees (closed loop), keeps the backlog of due sends, and writes retries.

use std::collections::VecDeque;
use std::net::Shutdown;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::recorder::{Outcome, Recorder};
use crate::runner::common::{us, Common, InFlight, Reading};
use crate::runner::conn::{flush_conns, Conn};
use crate::runner::inline;
use crate::runner::plan::LoadConfig;
use crate::runner::retry::Retry;
use crate::runner::wait::{set_timer_slack, wait_for_retry, wait_until};
use crate::send_order::key::{KeyScan, Streams};
use harness_model::profile::SendOrdering;
use harness_model::schedule::Pacing;
use rmq_client::send::SendBuilder;

mod pick;

/// One attempt of a send, as handed to [`Pacer::write`].
struct Attempt {
    seq: u64,
    intended: Instant,
    /// The first attempt's write time; `None` for a first attempt.
    first_written: Option<Instant>,
    segment: usize,
    /// 1 for the first attempt.
    number: u32,
}

impl Attempt {
    fn first(seq: u64, intended: Instant, segment: usize) -> Attempt {
        Attempt {
            seq,
            intended,
            first_written: None,
            segment,
            number: 1,
        }
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

/// The pacing thread's state: it owns the connections' write halves.
pub struct Pacer {
    cfg: LoadConfig,
    common: Arc<Common>,
    conns: Vec<Conn>,
    retry_rx: Receiver<Retry>,
    rec: Arc<Mutex<Recorder>>,
    builder: SendBuilder,
    /// Intended time of the first send.
    pub start: Instant,
    /// Nanoseconds spent spin-waiting, excluded from harness CPU.
    pub spin_ns: Arc<AtomicU64>,
    pub stop: CancellationToken,
    rr: usize,
    backlog: VecDeque<Pending>,
    backlog_cap: usize,
    /// `ordering` other than `none`: each send's key picks its queue, and the queue its one
    /// connection, as a Java producer has one channel per broker (`harness::order`).
    order: Option<Streams>,
    /// sync-by-key: which backlog entry may go next.
    key_scan: KeyScan,
    /// The closed loop's poll set, reused ([`crate::runner::inline`]).
    fds: Vec<libc::pollfd>,
    /// A retry that ended a phase without sends' wait ([`wait_for_retry`]), written first.
    woke_by: Option<Retry>,
}

impl Pacer {
    /// A pacer that has not started: `start`, `spin_ns` and `stop` are set before [`Pacer::run`].
    pub fn idle(
        cfg: LoadConfig,
        common: Arc<Common>,
        conns: Vec<Conn>,
        retry_rx: Receiver<Retry>,
        rec: Arc<Mutex<Recorder>>,
    ) -> Pacer {
        let max_rate = cfg.phases.iter().map(|p| p.rate).fold(0.0, f64::max);
        let backlog_cap =
            ((max_rate * common.send_timeout.as_secs_f64()) as usize).clamp(1024, 2_000_000);
        let mut builder = SendBuilder::new(&crate::send_spec::send_spec(&cfg.workload, cfg.shard));
        if let Some(t) = &cfg.tracking {
            builder.set_uniq_prefix(&t.prefix);
        }
        let order = (cfg.workload.ordering != SendOrdering::None && cfg.cluster.is_none())
            .then(|| Streams::of(&cfg.workload));
        Pacer {
            key_scan: KeyScan::new(cfg.workload.order_keys),
            order,
            builder,
            cfg,
            common,
            conns,
            retry_rx,
            rec,
            start: Instant::now(),
            spin_ns: Arc::new(AtomicU64::new(0)),
            stop: CancellationToken::new(),
            rr: 0,
            backlog: VecDeque::new(),
            backlog_cap,
            fds: Vec::new(),
            woke_by: None,
        }
    }

    /// How this pacer's UNIQ_KEYs map back to send numbers.
    pub fn key_space(&self) -> rmq_client::uniq_key::KeySpace {
        self.builder.key_space()
    }

    pub fn run(&mut self) {
        set_timer_slack();
        // A shared `--start-at` can be minutes away: keep looking at `stop` while waiting.
        while self.start > Instant::now() && !self.stop.is_cancelled() {
            self.wait_until(self.start);
        }
        // Shard I of N takes sends I, I+N, … of every phase, at their intended times.
        let (first, step) = (
            u64::from(self.cfg.shard.index),
            u64::from(self.cfg.shard.count),
        );
        let mut phase = 0usize;
        let mut j: u64 = first;
        let mut seq: u64 = 0;
        let mut phase_start = self.start;
        loop {
            if self.stop.is_cancelled() {
                break;
            }
            self.drain_retries();
            let now = Instant::now();
            let mut next_due = None;
            let mut quiet = false;
            match self.cfg.pacing {
                Pacing::Open => {
                    while phase < self.cfg.phases.len() {
                        let ph = &self.cfg.phases[phase];
                        if ph.rate == 0.0 && now < phase_start + ph.duration {
                            // A phase without sends still lasts its duration (consumers alone).
                            next_due = Some(phase_start + ph.duration);
                            quiet = true;
                            break;
                        }
                        if j >= ph.count() {
                            phase_start += ph.duration;
                            phase += 1;
                            j = first;
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
                        let mut rec = self.rec.lock();
                        rec.scheduled(segment);
                        if self.backlog.len() >= self.backlog_cap {
                            self.common.end_send(
                                &mut rec,
                                segment,
                                Outcome::Dropped,
                                Some(0),
                                None,
                            );
                        } else {
                            self.backlog.push_back(Pending {
                                seq,
                                intended: due,
                                segment,
                            });
                        }
                        seq += 1;
                        j += step;
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
                    // Every free slot is filled now, with one clock reading and one recorder
                    // lock for all of them: per send, both were a visible share of the cost.
                    // The slots are counted as taken before `flush_conns` writes (and hands
                    // over) the sends, so no answer can release a slot not yet counted.
                    let room =
                        concurrency.saturating_sub(self.common.outstanding.load(Ordering::Acquire));
                    let t = Instant::now();
                    let mut filled = 0;
                    while filled < room {
                        if !self.key_free(seq) {
                            break;
                        }
                        let (pick, queue) = self.pick_first(seq);
                        match pick {
                            Pick::Conn(c) => {
                                self.write(c, Attempt::first(seq, t, segment), t, queue);
                                seq += 1;
                                filled += 1;
                            }
                            Pick::Full => break,
                            Pick::Down => {
                                let mut rec = self.rec.lock();
                                rec.scheduled(segment);
                                // It takes a slot like every closed-loop send, which ending it frees.
                                self.common.outstanding.fetch_add(1, Ordering::AcqRel);
                                self.common.end_send(
                                    &mut rec,
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
                    if filled > 0 {
                        self.rec.lock().scheduled_n(segment, filled as u64);
                        self.common.outstanding.fetch_add(filled, Ordering::AcqRel);
                    }
                    self.flush_conns();
                }
            }
            // Wait: for the next due send, or (slots exhausted / closed loop) for a completion.
            let waiting_for_slot =
                !self.backlog.is_empty() || matches!(self.cfg.pacing, Pacing::Closed { .. });
            match next_due {
                Some(due) if quiet && !waiting_for_slot => {
                    self.woke_by = wait_for_retry(&self.retry_rx, due);
                }
                Some(due) if !waiting_for_slot => self.wait_until(due),
                Some(due) => thread::park_timeout(
                    due.saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(1)),
                ),
                None => self.wait_for_answers(Duration::from_millis(1)),
            }
        }
        self.drain();
        self.close();
    }

    /// Ends a send that never reached the wire (or whose answer can no longer come): latency
    /// from its intended time, no service time.
    fn end_unwritten(&self, segment: usize, outcome: Outcome, intended: Instant, now: Instant) {
        self.common.end_send(
            &mut self.rec.lock(),
            segment,
            outcome,
            Some(us(now - intended)),
            None,
        );
    }

    /// Writes backlog entries while connections have free slots.
    fn flush_backlog(&mut self) {
        while let Some(p) = self.backlog.front() {
            let now = Instant::now();
            if now.saturating_duration_since(p.intended) >= self.common.send_timeout {
                let p = self.backlog.pop_front().expect("front exists");
                self.end_unwritten(p.segment, Outcome::Dropped, p.intended, now);
                continue;
            }
            let Some(i) = self.next_ready() else {
                break;
            };
            let (pick, queue) = self.pick_first(self.backlog[i].seq);
            match pick {
                Pick::Conn(c) => {
                    let p = self.backlog.remove(i).expect("entry exists");
                    self.write(c, Attempt::first(p.seq, p.intended, p.segment), now, queue);
                }
                Pick::Full => break,
                Pick::Down => {
                    let p = self.backlog.remove(i).expect("entry exists");
                    self.end_unwritten(p.segment, Outcome::ConnectionError, p.intended, now);
                }
            }
        }
        self.flush_conns();
    }

    fn drain_retries(&mut self) {
        loop {
            let next = match self.woke_by.take() {
                Some(r) => Ok(r),
                None => self.retry_rx.try_recv(),
            };
            match next {
                Ok(r) => match self.pick_retry(r.last_broker) {
                    (Pick::Conn(c), queue) => {
                        let attempt = Attempt {
                            seq: r.seq,
                            intended: r.intended,
                            first_written: Some(r.first_written),
                            segment: r.segment,
                            number: r.attempt,
                        };
                        self.write(c, attempt, Instant::now(), queue);
                    }
                    (Pick::Full | Pick::Down, _) => {
                        // No slot: the retry fails like the Java client's would, as a connection error.
                        let now = Instant::now();
                        self.end_unwritten(r.segment, Outcome::ConnectionError, r.intended, now);
                    }
                },
                Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => {
                    self.flush_conns();
                    return;
                }
            }
        }
    }

    /// Whether send `seq` may be written now: with sync-by-key, only when its key has no send
    /// in flight.
    fn key_free(&self, seq: u64) -> bool {
        self.common.key_gate.as_ref().is_none_or(|g| g.is_free(seq))
    }

    /// The backlog entry to write next: the front, or with sync-by-key [`KeyScan`]'s choice.
    fn next_ready(&mut self) -> Option<usize> {
        match self.common.key_gate.clone() {
            None => Some(0),
            Some(gate) => self
                .key_scan
                .next_ready(&gate, self.backlog.iter().map(|p| p.seq)),
        }
    }

    /// Encodes one attempt into the connection's output buffer; [`Pacer::flush_conns`] writes
    /// it. Sends due together (a catch-up after a late wake-up) go out in one `write`.
    /// `now` is the caller's clock reading: one per batch of writes, since a clock read is a
    /// measurable share of the generator's cost per send.
    /// `queue`: the router's queue id in a cluster; otherwise the builder's round robin.
    /// Inlined so that the attempt's fields stay in registers: passed by reference, its
    /// first load waited on the caller's stores (a third of `write`'s samples; callgrind on
    /// `floor.toml` 1,257 → 1,198 instructions a send).
    #[inline(always)]
    fn write(&mut self, c: usize, a: Attempt, now: Instant, queue: Option<i32>) {
        let Attempt {
            seq,
            intended,
            first_written,
            segment,
            number,
        } = a;
        if let Some(g) = &self.common.key_gate {
            g.take(seq);
        }
        let conn = &mut self.conns[c];
        conn.opaque = conn.opaque.wrapping_add(1) & 0x3fff_ffff;
        let opaque = conn.opaque;
        self.builder
            .encode_into_queue(seq, queue, opaque, now, &mut conn.out);
        if !self.common.oneway {
            let broker = conn.broker;
            let make = || InFlight::new(seq, intended, now, first_written, segment, number, broker);
            match conn.inline.as_mut() {
                // The pacer reads this connection itself: the entry is built in its table now.
                Some(r) => r.adopt(opaque, make),
                // Handed to the reader thread in `flush_conns`, before the bytes are written.
                None => conn.pending.push(make().with_opaque(opaque)),
            }
        }
        conn.batch.push((opaque, segment, intended));
    }

    /// Writes every connection's pending sends; lag is measured at the `write` call.
    fn flush_conns(&mut self) {
        flush_conns(&mut self.conns, &self.common, &self.rec);
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
            self.wait_for_answers(Duration::from_millis(2));
        }
        let now = Instant::now();
        for p in std::mem::take(&mut self.backlog) {
            self.end_unwritten(p.segment, Outcome::Dropped, p.intended, now);
        }
    }

    /// Ends every remaining send as a timeout, closes the sockets and joins the readers.
    pub fn close(&mut self) {
        // Retries queued now cannot be sent any more; they end as timeouts below.
        self.common.closing.store(true, Ordering::Release);
        let now = Instant::now();
        for c in &mut self.conns {
            c.handover = None;
            if let Some(s) = c.stream.take() {
                let _ = s.shutdown(Shutdown::Both);
            }
            // Encoded but never handed over (nothing calls close between a write and its
            // flush, but every send must still end once).
            let unsent = std::mem::take(&mut c.pending).into_iter();
            end_as_timeouts(&self.common, &self.rec, unsent, None, now);
            if let Some(left) = c.take_leftover() {
                let held = left.into_entries().into_iter();
                end_as_timeouts(&self.common, &c.recorder, held, Some(&c.shared), now);
            }
        }
        while let Ok(r) = self.retry_rx.try_recv() {
            self.end_unwritten(r.segment, Outcome::Timeout, r.intended, now);
        }
    }
    /// Waits for answers: a reader thread wakes the pacer (open loop), or the pacer reads
    /// them itself (closed loop, at most [`crate::runner::wait::READ_WAIT`] at a time).
    fn wait_for_answers(&mut self, timeout: Duration) {
        match self.common.reading() {
            Reading::Thread => thread::park_timeout(timeout),
            Reading::Inline => inline::wait_and_read(&mut self.conns, &self.common, &mut self.fds),
        }
    }

    fn wait_until(&self, t: Instant) {
        wait_until(t, &self.spin_ns);
    }
}

/// Ends sends the run can no longer answer (at close) as timeouts, from their intended time;
/// `held`: the connection whose in-flight count they still take.
fn end_as_timeouts(
    common: &Common,
    rec: &Mutex<Recorder>,
    sends: impl Iterator<Item = InFlight>,
    held: Option<&crate::runner::reader::Shared>,
    now: Instant,
) {
    let mut rec = rec.lock();
    for e in sends {
        if let Some(shared) = held {
            shared.len.fetch_sub(1, Ordering::AcqRel);
        }
        common.end_send(
            &mut rec,
            e.segment(),
            Outcome::Timeout,
            Some(us(now - e.intended())),
            None,
        );
    }
}
