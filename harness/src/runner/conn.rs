//! Connections: a blocking socket the pacer writes to, and its reader ([`crate::runner::reader`]),
//! which matches responses by opaque and ends timed-out or lost sends: a thread of its own in the
//! open loop, the pacer itself in the closed loop.

use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use remoting::FrameBuf;

use crate::recorder::{Outcome, Recorder};
use crate::runner::common::{us, Common, EndTime, Reading};
use crate::runner::inflight::InFlightTable;
use crate::runner::reader::{self, Handoffs, HandoverTx, Leftover, Reader, ReaderCtx, Shared};

/// Minimum time between reconnect attempts of one connection.
pub const RECONNECT_EVERY: Duration = Duration::from_millis(100);

/// One connection slot of the pacer; the socket is reopened after a failure.
pub struct Conn {
    /// Where it connects, and which cluster broker that is (`None` with one broker).
    pub addr: SocketAddr,
    pub broker: Option<usize>,
    pub shared: Arc<Shared>,
    pub stream: Option<TcpStream>,
    /// Hands in-flight entries to this connection's reader thread, a write's worth at a time,
    /// and takes emptied vectors back, so that handing over allocates nothing once a few are in
    /// circulation. `None` with an inline reader (entries are adopted) or no reader.
    pub handover: Option<HandoverTx>,
    /// The entries of the sends in `out`, handed over by [`Conn::hand_over`].
    pub pending: Handoffs,
    /// The reader thread (open loop).
    pub reader: Option<JoinHandle<Leftover>>,
    /// The reader the pacer runs itself (closed loop).
    pub inline: Option<Reader>,
    /// Since when bytes in `out` have waited for a socket that takes none (closed loop, whose
    /// writes do not block): after the send timeout the connection counts as broken, as a
    /// blocking write's timeout makes it in the open loop.
    pub stalled_since: Option<Instant>,
    pub last_attempt: Option<Instant>,
    pub opaque: i32,
    pub recorder: Arc<Mutex<Recorder>>,
    /// Encoded sends not yet written, and their (opaque, segment, intended time).
    pub out: FrameBuf,
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
            handover: None,
            pending: Vec::new(),
            reader: None,
            inline: None,
            stalled_since: None,
            last_attempt: None,
            opaque: 0,
            recorder,
            out: FrameBuf::new(),
            batch: Vec::new(),
        }
    }

    /// No socket, or its reader saw the socket fail.
    #[inline]
    pub fn is_broken(&self) -> bool {
        self.stream.is_none() || self.shared.broken.load(Ordering::Acquire)
    }

    /// Room for one more send. Sends encoded but not yet handed over count against the window
    /// too. A closed-loop socket that did not take the last write gets no more until it does:
    /// its bytes wait in memory, one window's worth at most.
    #[inline]
    pub fn has_room(&self, oneway: bool, max_in_flight: usize) -> bool {
        self.stalled_since.is_none()
            && (oneway
                || self.shared.len.load(Ordering::Acquire) + self.pending.len() < max_in_flight)
    }

    /// Sends the pending entries to the reader, which must know them before their answers can
    /// arrive, and counts them in flight. `Err` gives them back when the reader is gone.
    pub fn hand_over(&mut self) -> Result<(), Handoffs> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let Some(h) = self.handover.as_ref() else {
            return Err(std::mem::take(&mut self.pending));
        };
        let fresh = h.spare.try_recv().unwrap_or_default();
        let entries = std::mem::replace(&mut self.pending, fresh);
        let n = entries.len();
        self.shared.len.fetch_add(n, Ordering::AcqRel);
        let sent = h.tx.send(entries).map_err(|e| e.0);
        if sent.is_err() {
            self.shared.len.fetch_sub(n, Ordering::AcqRel);
        }
        sent
    }

    /// Stops the reader (joining its thread) and returns the entries it still held.
    pub fn take_leftover(&mut self) -> Option<Leftover> {
        if let Some(r) = self.inline.take() {
            return Some(r.into_leftover());
        }
        self.reader.take().and_then(|h| h.join().ok())
    }

    /// Writes as much of `out` as the socket takes now. A closed-loop connection's pacer also
    /// reads its answers, so it must not block in a write while the peer blocks writing answers
    /// to it: what the socket does not take stays in `out` for [`Conn::write_rest`]. The lag of
    /// every send in the batch is still taken at this call, the moment the generator wrote.
    fn write_out(&mut self) -> io::Result<()> {
        let Some(s) = self.stream.as_mut() else {
            return Err(io::Error::from(io::ErrorKind::NotConnected));
        };
        if self.inline.is_none() {
            let r = s.write_all(self.out.as_slice());
            self.out.clear();
            return r;
        }
        let before = self.out.len();
        while !self.out.is_empty() {
            match send_dontwait(s, self.out.as_slice()) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => self.out.advance(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        // The stall clock runs from the last write that made progress.
        if self.out.is_empty() {
            self.stalled_since = None;
        } else if self.out.len() < before || self.stalled_since.is_none() {
            self.stalled_since = Some(Instant::now());
        }
        Ok(())
    }

    /// Writes what is left in `out` (see [`Conn::write_out`]); the connection breaks when the
    /// socket fails or takes nothing for `send_timeout`, as a blocking write's timeout breaks it
    /// in the open loop.
    pub fn write_rest(&mut self, send_timeout: Duration) {
        if self.out.is_empty() {
            return;
        }
        let result = self.write_out();
        let stalled = self
            .stalled_since
            .is_some_and(|t| t.elapsed() >= send_timeout);
        if result.is_err() || stalled {
            self.break_off();
        }
    }

    /// Marks the connection broken and shuts the socket, so its reader fails the sends it holds.
    fn break_off(&mut self) {
        self.out.clear();
        self.stalled_since = None;
        self.shared.broken.store(true, Ordering::Release);
        if let Some(s) = self.stream.as_ref() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// `send(2)` with `MSG_DONTWAIT`: the socket stays blocking for everything else.
fn send_dontwait(s: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `buf`, which outlives the call; the descriptor
    // is `s`'s, open for the duration of the borrow.
    let n = unsafe {
        libc::send(
            s.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Consecutive sends of one write with the same segment and intended time, hence the same lag.
struct LagRun {
    segment: usize,
    intended: Instant,
    lag: u64,
    n: u64,
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
            let end = EndTime::new(Instant::now());
            let mut rec = rec_of_pacer.lock();
            for e in lost {
                common.finish(&mut rec, &e, Outcome::ConnectionError, None, &end, false);
            }
            drop(rec);
            conn.out.clear();
            conn.batch.clear();
            continue;
        }
        let written = Instant::now();
        let result = conn.write_out();
        let batch = std::mem::take(&mut conn.batch);
        match result {
            Ok(()) => {
                let mut rec = rec_of_pacer.lock();
                // The sends of a closed-loop refill share their intended time: their lag is
                // worked out once (an `Instant` subtraction is about 75 instructions), and
                // recorded once for the run of them.
                let mut run: Option<LagRun> = None;
                for (_, segment, intended) in batch {
                    let lag = match &mut run {
                        Some(r) if r.intended == intended && r.segment == segment => {
                            r.n += 1;
                            r.lag
                        }
                        _ => {
                            if let Some(r) = run.take() {
                                rec.written_n(r.segment, r.lag, r.n);
                            }
                            let lag = us(written.saturating_duration_since(intended));
                            run = Some(LagRun {
                                segment,
                                intended,
                                lag,
                                n: 1,
                            });
                            lag
                        }
                    };
                    if common.oneway {
                        common.end_send(&mut rec, segment, Outcome::Ok, Some(lag), None);
                    }
                }
                if let Some(r) = run {
                    rec.written_n(r.segment, r.lag, r.n);
                }
            }
            Err(_) => {
                // Answered sends were handed to the reader, which fails them when it sees
                // the shut-down socket; oneway sends are ended here.
                conn.break_off();
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
    // Every send the old socket still holds ends here as a connection error, so each scheduled
    // send keeps exactly one outcome:
    // - those handed to the old reader after it failed the socket (in flight: `len` counts them);
    // - those encoded and not yet written: a batch whose connection broke between the encoding
    //   of one send and the next, reconnected by the pick of the next. Cleared without an
    //   outcome, one was counted in `sent` and nowhere else (fault_e2e, a kill at 1,000
    //   sends/s: sent 6,000, outcomes 5,999). `flush_conns` ends unwritten sends the same way
    //   when the reader is gone.
    c.handover = None;
    let handed = c.take_leftover();
    let unwritten = std::mem::take(&mut c.pending);
    let batch = std::mem::take(&mut c.batch);
    c.out.clear();
    if handed.is_some() || !unwritten.is_empty() || (common.oneway && !batch.is_empty()) {
        let end = EndTime::new(Instant::now());
        let mut rec = c.recorder.lock();
        if let Some(left) = handed {
            for e in left.into_entries() {
                c.shared.len.fetch_sub(1, Ordering::AcqRel);
                common.finish(&mut rec, &e, Outcome::ConnectionError, None, &end, false);
            }
        }
        for e in unwritten {
            common.finish(&mut rec, &e, Outcome::ConnectionError, None, &end, false);
        }
        if common.oneway {
            for (_, segment, _) in batch {
                common.end_send(&mut rec, segment, Outcome::ConnectionError, None, None);
            }
        }
        drop(rec);
        common.wake();
    }
    let stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    stream.set_nodelay(true)?;
    stream.set_write_timeout(Some(common.send_timeout))?;
    let read_half = stream.try_clone()?;
    c.stalled_since = None;
    c.shared = Arc::new(Shared::default());
    let mut ctx = ReaderCtx {
        shared: c.shared.clone(),
        recorder: c.recorder.clone(),
        common: common.clone(),
        handover: None,
        map: InFlightTable::default(),
    };
    match common.reading() {
        Reading::Thread => {
            let (tx, rx) = reader::handover();
            ctx.handover = Some(rx);
            c.reader = Some(reader::spawn(read_half, ctx, index)?);
            c.handover = Some(tx);
        }
        Reading::Inline => {
            read_half.set_read_timeout(Some(crate::runner::wait::READ_WAIT))?;
            c.inline = Some(Reader::new(read_half, ctx));
        }
    }
    c.stream = Some(stream);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicBool, AtomicUsize};
    use std::sync::mpsc::sync_channel;

    use super::*;
    use crate::runner::common::InFlight;
    use crate::runner::retry::NotStoreOk;
    use harness_model::profile::RetryPolicy;

    fn common(oneway: bool) -> Arc<Common> {
        let (retry_tx, _) = sync_channel(16);
        Arc::new(Common {
            policy: RetryPolicy::None,
            not_store_ok: NotStoreOk::of(false),
            send_timeout: Duration::from_secs(3),
            oneway,
            closed_loop: false,
            outstanding: AtomicUsize::new(0),
            current_segment: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
            retry_tx,
            pacer: parking_lot::Mutex::new(None),
            tracking: None,
            outcomes: None,
            cluster: None,
            key_gate: None,
        })
    }

    /// A write's sends are recorded in runs of one segment and intended time, each run with
    /// the lag of its own intended time: the same histograms as one record per send.
    #[test]
    fn a_write_records_each_sends_lag_in_runs() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let common = common(true);
        let rec = Arc::new(Mutex::new(Recorder::new(2)));
        let mut c = Conn::new(rec.clone(), listener.local_addr().unwrap(), None);
        connect(&mut c, &common, 0).unwrap();
        let now = Instant::now();
        let (long_ago, lately) = (now - Duration::from_secs(10), now - Duration::from_secs(1));
        let sends = [
            (0, long_ago),
            (0, long_ago),
            (0, long_ago),
            (0, lately),
            (0, lately),
            (1, lately),
            (0, long_ago),
        ];
        for (opaque, (segment, intended)) in sends.iter().enumerate() {
            c.batch.push((opaque as i32, *segment, *intended));
            c.out.extend_from_slice(b"encoded");
        }
        flush_conns(std::slice::from_mut(&mut c), &common, &rec);
        let r = rec.lock();
        let in_range = |seg: usize, lo: u64, hi: u64| {
            let h = &r.segments[seg].lag;
            h.iter_recorded()
                .filter(|v| (lo..hi).contains(&v.value_iterated_to()))
                .map(|v| v.count_at_value())
                .sum::<u64>()
        };
        assert_eq!(r.segments[0].attempts, 6);
        assert_eq!(r.segments[1].attempts, 1);
        assert_eq!(r.segments[0].lag.len(), 6);
        assert_eq!(in_range(0, 10_000_000, u64::MAX), 4);
        assert_eq!(in_range(0, 1_000_000, 10_000_000), 2);
        assert_eq!(in_range(1, 1_000_000, 10_000_000), 1);
        // Oneway: every send also ended, as ok, with its lag as its latency.
        assert_eq!(r.segments[0].counts.ok, 6);
        assert_eq!(r.segments[0].latency.len(), 6);
        drop(r);
        if let Some(s) = c.stream.take() {
            let _ = s.shutdown(Shutdown::Both);
        }
        let _ = c.take_leftover();
    }

    /// Two sends encoded for a connection that broke before they were written: the reconnect
    /// ends them as connection errors, so sent still equals the sum of the outcomes.
    #[test]
    fn a_reconnect_ends_the_sends_encoded_and_never_written() {
        for oneway in [false, true] {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let common = common(oneway);
            let rec = Arc::new(Mutex::new(Recorder::new(1)));
            let mut c = Conn::new(rec.clone(), listener.local_addr().unwrap(), None);
            connect(&mut c, &common, 0).unwrap();
            let now = Instant::now();
            for opaque in [1, 2] {
                if !oneway {
                    let e = InFlight::new(opaque as u64, now, now, None, 0, 1, None);
                    c.pending.push(e.with_opaque(opaque));
                }
                c.batch.push((opaque, 0, now));
                c.out.extend_from_slice(b"encoded");
            }
            // The connection broke; the pacer's pick shuts it and reconnects.
            if let Some(s) = c.stream.take() {
                let _ = s.shutdown(Shutdown::Both);
            }
            connect(&mut c, &common, 0).unwrap();
            let r = rec.lock();
            assert_eq!(r.segments[0].counts.connection_errors, 2, "oneway {oneway}");
            assert!(c.pending.is_empty() && c.batch.is_empty() && c.out.is_empty());
            drop(r);
            c.handover = None;
            if let Some(s) = c.stream.take() {
                let _ = s.shutdown(Shutdown::Both);
            }
            let _ = c.take_leftover();
        }
    }
}
