//! The one worker loop: a pacing thread that writes every send when it is due, and a reader per
//! connection that matches responses by opaque: a thread of its own in the open loop, the pacer
//! itself in the closed loop ([`crate::runner::inline`]).
//!
//! Why the pacer writes itself: handing intended times to async tasks adds a cross-thread
//! wake-up (tens of µs, and up to a millisecond of timer granularity) to every send. The pacer
//! sleeps coarsely, spins the last [`SPIN`](crate::runner::wait::SPIN), and calls `write` on a blocking socket at the due
//! instant, so `lag` (actual write − intended) measures only the generator.
//!
//! Open loop: send `i` of a phase is due at `phase_start + i/rate`. When every connection has
//! `max_in_flight` sends outstanding, due sends wait in a bounded backlog and are written as
//! soon as a slot frees, keeping their intended time (latency accrues from it, lag shows the
//! wait). A send that waited `send_timeout` without a slot is `dropped`; its latency is
//! recorded as the time it waited ("the time until it could have been sent").
//!
//! This file starts and stops the loop; [`crate::runner::plan`] holds the schedule,
//! [`crate::runner::pacer`] the pacing thread, [`crate::runner::conn`] the connections,
//! [`crate::runner::reader`] their readers, and [`crate::runner::retry`] the client retry policy.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::recorder::{Interval, Recorder};
use crate::runner::common::Common;
use crate::runner::conn::{connect, Conn};
use crate::runner::pacer::Pacer;
use crate::runner::plan::LoadConfig;
use crate::runner::retry::NotStoreOk;
use harness_model::schedule::Pacing;
use rmq_client::uniq_key::KeySpace;
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
    #[error(transparent)]
    Late(#[from] harness_model::shard::Late),
}

/// A running load. Dropping it without [`LoadHandle::join`] stops and joins the threads.
pub struct LoadHandle {
    /// Intended time of the first send.
    pub start: Instant,
    /// How the UNIQ_KEYs of this load map back to send numbers.
    pub keys: KeySpace,
    recorders: Vec<Arc<Mutex<Recorder>>>,
    spin_ns: Arc<AtomicU64>,
    stop: CancellationToken,
    finished: Arc<AtomicBool>,
    pacer: Option<JoinHandle<()>>,
}

impl LoadHandle {
    /// Connects and starts the pacer; the first send is due ~50 ms from now, or at the
    /// shared `start_at` ([`LoadError::Late`] when that passed more than its skew ago).
    pub fn start(cfg: LoadConfig) -> Result<LoadHandle, LoadError> {
        let w = &cfg.workload;
        let segments = cfg.segments();
        let (retry_tx, retry_rx) = sync_channel(4096);
        let common = Arc::new(Common {
            policy: w.retry,
            not_store_ok: NotStoreOk::of(w.retry_another_broker_when_not_store_ok),
            send_timeout: w.send_timeout.duration(),
            oneway: w.oneway,
            closed_loop: matches!(cfg.pacing, Pacing::Closed { .. }),
            outstanding: AtomicUsize::new(0),
            current_segment: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
            retry_tx,
            pacer: Mutex::new(None),
            tracking: cfg.tracking.clone(),
            outcomes: cfg.outcomes.clone(),
            cluster: cfg.cluster.clone(),
            key_gate: (w.ordering == harness_model::profile::SendOrdering::SyncByKey)
                .then(|| Arc::new(crate::send_order::key::KeyGate::new(w.order_keys))),
        });
        let pacer_rec = Arc::new(Mutex::new(Recorder::new(segments)));
        let mut recorders = vec![pacer_rec.clone()];
        let mut conns = Vec::new();
        let mut last_err = None;
        // One set of connections per cluster broker, or to the one address.
        let targets: Vec<(SocketAddr, Option<usize>)> = match &cfg.cluster {
            Some(r) => r
                .brokers
                .iter()
                .enumerate()
                .map(|(i, b)| (b.addr, Some(i)))
                .collect(),
            None => vec![(cfg.addr, None)],
        };
        for (addr, broker) in targets {
            for _ in 0..w.connections {
                let rec = Arc::new(Mutex::new(Recorder::new(segments)));
                recorders.push(rec.clone());
                let mut c = Conn::new(rec, addr, broker);
                if let Err(e) = connect(&mut c, &common, conns.len()) {
                    last_err = Some(e);
                }
                conns.push(c);
            }
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
        let start = match &cfg.start_at {
            Some(at) => match at.instant() {
                Ok(t) => t,
                Err(late) => {
                    let mut p = Pacer::idle(cfg.clone(), common, conns, retry_rx, pacer_rec);
                    p.close();
                    return Err(late.into());
                }
            },
            None => Instant::now() + Duration::from_millis(50),
        };
        let spin_ns = Arc::new(AtomicU64::new(0));
        let stop = CancellationToken::new();
        let finished = Arc::new(AtomicBool::new(false));
        let mut pacer = Pacer::idle(cfg, common.clone(), conns, retry_rx, pacer_rec);
        pacer.start = start;
        pacer.spin_ns = spin_ns.clone();
        pacer.stop = stop.clone();
        let keys = pacer.key_space();
        let fin = finished.clone();
        let handle = thread::Builder::new()
            .name("harness-pacer".into())
            .spawn(move || {
                pacer.run();
                fin.store(true, Ordering::Release);
            })
            .map_err(LoadError::Spawn)?;
        *common.pacer.lock() = Some(handle.thread().clone());
        Ok(LoadHandle {
            start,
            keys,
            recorders,
            spin_ns,
            stop,
            finished,
            pacer: Some(handle),
        })
    }

    /// Takes the per-second interval out of every worker.
    /// The last second of every worker, merged into `total` (emptied first), which the caller
    /// keeps and passes again every second.
    pub fn take_interval_into(&self, total: &mut Interval) {
        total.reset();
        for r in &self.recorders {
            r.lock().move_interval_into(total);
        }
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
        let mut merged = self.recorders[0].lock().clone();
        for r in &self.recorders[1..] {
            merged.merge(&r.lock());
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
