//! The store read-back of a job without consumers: one thread (`harness-order-reader`) on its
//! own connection reads every queue of the topic forward from where it stopped, a few times a
//! second, with PULL_MESSAGE as reconciliation does (`reconcile::pull_request`; one pull in
//! flight per queue), and feeds the stored order to the ledger. Reading while the load runs
//! costs the broker what one consumer reading at the send rate would, and gives the per-second
//! figures.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::reconcile::{pull_answer, pull_request, Stored};
use crate::send_order::ledger::OrderLedger;
use rmq_client::admin::{AdminConn, ClientError};

/// Why the read-back's count is incomplete: the order part's `PartError::Order`, whose text is
/// the rows' `invalid_reason`.
#[derive(Debug, thiserror::Error)]
pub enum ReadBackError {
    /// The reader's own admin connection.
    #[error("order read-back: {0}")]
    Connect(#[source] Box<ClientError>),
    #[error("order read-back thread: {0}")]
    Thread(#[source] std::io::Error),
    /// A pull of a catch-up failed three passes in a row.
    #[error("order read-back of {topic}: {source}")]
    Pull {
        topic: String,
        #[source]
        source: Box<ClientError>,
    },
    /// The store kept growing: the load did not end, or reading is slower than writing.
    #[error("order read-back of {topic} still finding messages after {limit:?}")]
    StillFinding { topic: String, limit: Duration },
    #[error("order read-back: the reader stopped")]
    ReaderStopped,
    #[error("order read-back: no answer to a catch-up")]
    NoAnswer,
    #[error("order read-back: the reader panicked")]
    Panicked,
}

/// Pulls of one pass at most (about 3 million messages): a pass ends even if the store grows
/// as fast as it is read.
const MAX_PULLS_PER_PASS: u64 = 100_000;
/// Time between read passes while the load runs.
const PASS_EVERY: Duration = Duration::from_millis(250);
/// One pull's answer time before a pass gives up: an overloaded broker (8 spinning send
/// threads on 2 cores) can take seconds to answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a catch-up may read: far more than reading a job's messages takes.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(120);
/// Pause between the passes of a catch-up (the broker's dispatch to its consume queues runs
/// behind the append).
const SETTLE: Duration = Duration::from_millis(20);

enum Cmd {
    /// Read until a pass finds nothing new, then answer.
    CatchUp(SyncSender<Result<(), ReadBackError>>),
    /// Catch up a last time, then end.
    Stop,
    /// End now (the job is being abandoned).
    Quit,
}

/// The running reader. Dropping it stops and joins the thread.
pub struct StoreReader {
    tx: SyncSender<Cmd>,
    handle: Option<JoinHandle<Result<(), ReadBackError>>>,
}

struct Reader {
    conn: AdminConn,
    topic: String,
    /// Per queue id, the next offset to read.
    cursors: Vec<i64>,
    ledger: Arc<OrderLedger>,
}

impl Reader {
    /// One pass over every queue, each to its end, with one pull in flight per queue (queues
    /// are read side by side: one pull at a time would trail a fast load). Returns the records
    /// read. A queue's records are counted only when their answer arrives, in order, so a
    /// pass that fails leaves the unanswered queues where they were for the next one.
    fn pass(&mut self) -> Result<u64, ReadBackError> {
        let fail = |e: ClientError| ReadBackError::Pull {
            topic: self.topic.clone(),
            source: Box::new(e),
        };
        let mut waiting: HashMap<i32, usize> = HashMap::new();
        for (q, &cursor) in self.cursors.iter().enumerate() {
            let opaque = self
                .conn
                .send(pull_request(&self.topic, q as i32, cursor), CALL_TIMEOUT)
                .map_err(fail)?;
            waiting.insert(opaque, q);
        }
        let mut total = 0;
        let mut pulls = 0u64;
        let mut keys: Vec<Option<String>> = Vec::new();
        while !waiting.is_empty() {
            let resp = self
                .conn
                .read_response(Instant::now() + CALL_TIMEOUT, CALL_TIMEOUT)
                .map_err(fail)?;
            // An answer that a failed pass gave up on: its queue is read again from its cursor.
            let Some(q) = waiting.remove(&resp.opaque) else {
                continue;
            };
            keys.clear();
            let (read, next) = pull_answer(resp, self.cursors[q], &mut |s| match s {
                Stored::Key(k) => keys.push(k),
                Stored::Corrupt => keys.push(None),
            })
            .map_err(fail)?;
            self.ledger.stored(keys.iter().map(Option::as_deref));
            total += read;
            pulls += 1;
            if let Some(next) = next {
                self.cursors[q] = next;
                if pulls < MAX_PULLS_PER_PASS {
                    let opaque = self
                        .conn
                        .send(pull_request(&self.topic, q as i32, next), CALL_TIMEOUT)
                        .map_err(fail)?;
                    waiting.insert(opaque, q);
                }
            }
        }
        Ok(total)
    }

    /// Reads until a pass finds nothing new (the load has ended, so the store stops growing).
    /// A pass that fails is tried again, twice.
    fn catch_up(&mut self) -> Result<(), ReadBackError> {
        let deadline = Instant::now() + CATCH_UP_LIMIT;
        let mut failures = 0;
        loop {
            match self.pass() {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) => {
                    failures += 1;
                    if failures == 3 {
                        return Err(e);
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(ReadBackError::StillFinding {
                    topic: self.topic.clone(),
                    limit: CATCH_UP_LIMIT,
                });
            }
            thread::sleep(SETTLE);
        }
    }

    /// Passes while the load runs; a pass that fails (a pull unanswered) is tried again at
    /// the next one from the same offsets, since nothing of an unfinished queue read is
    /// counted. Only a failed catch-up is an error.
    fn run(mut self, rx: Receiver<Cmd>) -> Result<(), ReadBackError> {
        loop {
            match rx.recv_timeout(PASS_EVERY) {
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.pass();
                }
                Ok(Cmd::CatchUp(done)) => {
                    let _ = done.send(self.catch_up());
                }
                Ok(Cmd::Quit) | Err(RecvTimeoutError::Disconnected) => return Ok(()),
                Ok(Cmd::Stop) => return self.catch_up(),
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
    ) -> Result<StoreReader, ReadBackError> {
        let conn = AdminConn::connect(addr, Duration::from_secs(2))
            .map_err(|e| ReadBackError::Connect(Box::new(e)))?;
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
            .map_err(ReadBackError::Thread)?;
        Ok(StoreReader {
            tx,
            handle: Some(handle),
        })
    }

    /// Reads everything stored so far (until a pass finds nothing new).
    pub fn catch_up(&self) -> Result<(), ReadBackError> {
        let (done_tx, done_rx) = sync_channel(1);
        self.tx
            .send(Cmd::CatchUp(done_tx))
            .map_err(|_| ReadBackError::ReaderStopped)?;
        done_rx
            .recv_timeout(CATCH_UP_LIMIT + 3 * CALL_TIMEOUT)
            .map_err(|_| ReadBackError::NoAnswer)?
    }

    /// Catches up a last time, stops and joins the reader.
    pub fn finish(mut self) -> Result<(), ReadBackError> {
        let _ = self.tx.send(Cmd::Stop);
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(ReadBackError::Panicked),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows' `invalid_reason` when the count is incomplete: the texts of before.
    #[test]
    fn reasons_read_as_before() {
        let e = ReadBackError::StillFinding {
            topic: "T".into(),
            limit: CATCH_UP_LIMIT,
        };
        assert_eq!(
            e.to_string(),
            "order read-back of T still finding messages after 120s"
        );
        assert_eq!(
            ReadBackError::NoAnswer.to_string(),
            "order read-back: no answer to a catch-up"
        );
    }
}
