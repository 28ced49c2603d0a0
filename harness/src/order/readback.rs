//! The store read-back of a job without consumers: one thread (`harness-order-reader`) on its
//! own connection reads every queue of the topic forward from where it stopped, a few times a
//! second, with PULL_MESSAGE as reconciliation does (`reconcile::read_queue_from`), and feeds
//! the stored order to the ledger. Reading while the load runs costs the broker what one
//! consumer reading at the send rate would, and gives the per-second figures.

use std::net::SocketAddr;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::order::ledger::OrderLedger;
use crate::reconcile::{read_queue_from, Stored};
use crate::runner::client::AdminConn;

/// Time between read passes while the load runs.
const PASS_EVERY: Duration = Duration::from_millis(250);
/// One pull's answer time before the reader gives up on the broker.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause between the passes of a catch-up (the broker's dispatch to its consume queues runs
/// behind the append).
const SETTLE: Duration = Duration::from_millis(20);

enum Cmd {
    /// Read until a pass finds nothing new, then answer.
    CatchUp(SyncSender<Result<(), String>>),
    /// Catch up a last time, then end.
    Stop,
    /// End now (the job is being abandoned).
    Quit,
}

/// The running reader. Dropping it stops and joins the thread.
pub struct StoreReader {
    tx: SyncSender<Cmd>,
    handle: Option<JoinHandle<Result<(), String>>>,
}

struct Reader {
    conn: AdminConn,
    topic: String,
    /// Per queue id, the next offset to read.
    cursors: Vec<i64>,
    ledger: Arc<OrderLedger>,
}

impl Reader {
    /// One pass over every queue; returns the records read.
    fn pass(&mut self) -> Result<u64, String> {
        let mut total = 0;
        for (q, cursor) in self.cursors.iter_mut().enumerate() {
            let mut keys: Vec<Option<String>> = Vec::new();
            let (read, next) = read_queue_from(
                &mut self.conn,
                &self.topic,
                q as i32,
                *cursor,
                CALL_TIMEOUT,
                |s| match s {
                    Stored::Key(k) => keys.push(k),
                    Stored::Corrupt => keys.push(None),
                },
            )
            .map_err(|e| format!("order read-back of {} queue {q}: {e}", self.topic))?;
            *cursor = next;
            total += read;
            self.ledger.stored(keys.iter().map(Option::as_deref));
        }
        Ok(total)
    }

    fn catch_up(&mut self) -> Result<(), String> {
        // Bounded: a load that never stops storing cannot hold the reader forever.
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.pass()? > 0 && Instant::now() < deadline {
            thread::sleep(SETTLE);
        }
        Ok(())
    }

    fn run(mut self, rx: Receiver<Cmd>) -> Result<(), String> {
        let mut failed: Option<String> = None;
        loop {
            match rx.recv_timeout(PASS_EVERY) {
                Err(RecvTimeoutError::Timeout) => {
                    if failed.is_none() {
                        if let Err(e) = self.pass() {
                            failed = Some(e);
                        }
                    }
                }
                Ok(Cmd::CatchUp(done)) => {
                    let r = match &failed {
                        Some(e) => Err(e.clone()),
                        None => self.catch_up(),
                    };
                    if let Err(e) = &r {
                        failed.get_or_insert(e.clone());
                    }
                    let _ = done.send(r);
                }
                Ok(Cmd::Quit) | Err(RecvTimeoutError::Disconnected) => return Ok(()),
                Ok(Cmd::Stop) => {
                    return match failed {
                        Some(e) => Err(e),
                        None => self.catch_up(),
                    }
                }
            }
        }
    }
}

impl StoreReader {
    /// Connects to `addr` and starts reading `queues` queues of `topic` from offset 0.
    pub fn start(
        addr: SocketAddr,
        topic: &str,
        queues: u32,
        ledger: Arc<OrderLedger>,
    ) -> Result<StoreReader, String> {
        let conn = AdminConn::connect(addr, Duration::from_secs(2))
            .map_err(|e| format!("order read-back: {e}"))?;
        let reader = Reader {
            conn,
            topic: topic.to_owned(),
            cursors: vec![0; queues as usize],
            ledger,
        };
        let (tx, rx) = sync_channel(1);
        let handle = thread::Builder::new()
            .name("harness-order-reader".into())
            .spawn(move || reader.run(rx))
            .map_err(|e| format!("order read-back thread: {e}"))?;
        Ok(StoreReader {
            tx,
            handle: Some(handle),
        })
    }

    /// Reads everything stored so far (until a pass finds nothing new).
    pub fn catch_up(&self) -> Result<(), String> {
        let (done_tx, done_rx) = sync_channel(1);
        self.tx
            .send(Cmd::CatchUp(done_tx))
            .map_err(|_| "order read-back: the reader stopped".to_owned())?;
        done_rx
            .recv_timeout(Duration::from_secs(60))
            .map_err(|_| "order read-back: no answer to a catch-up".to_owned())?
    }

    /// Catches up a last time, stops and joins the reader.
    pub fn finish(mut self) -> Result<(), String> {
        let _ = self.tx.send(Cmd::Stop);
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("order read-back: the reader panicked".into()),
            None => Ok(()),
        }
    }
}

impl Drop for StoreReader {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            let _ = self.tx.send(Cmd::Quit);
            let _ = h.join();
        }
    }
}
