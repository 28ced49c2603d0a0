//! The store's seam to replication (CommitLog.handleHA / submitReplicaRequest): after a put is
//! appended, a SYNC_MASTER's [`ReplicaGate`] decides whether the answer waits for a slave, and
//! the store combines its verdict with the sync-flush one. The gate lives in `crate::ha`; the
//! store only knows this trait, so it stays free of sockets and roles. Also the two CommitLog
//! operations HA needs: reading a transfer chunk (master) and appending one (slave).
//!
//! A leaf: the put path and the handle share it without importing each other.

use std::sync::Arc;

use super::commitlog::CommitLog;
use super::lock::PutLockGuard;
use super::types::PutMessageStatus;

/// Receives a status exactly once.
pub type StatusDone = Box<dyn FnOnce(PutMessageStatus) + Send + 'static>;

/// How the replica wait is ordered against the sync-flush wait (reference §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushThenReplica {
    /// 4.3 – 4.6.1: the flush wait first, then the replica wait (the waits add up).
    Sequential,
    /// 4.7.0+: both waits start together; the answer comes when both ended.
    Parallel,
}

/// Decides and completes a put's wait for the slave. Installed once, by the HA service of a
/// SYNC_MASTER; without one no put waits.
pub trait ReplicaGate: Send + Sync {
    /// Called after a put with WAIT=true was appended; `next_offset` is the end of its bytes.
    /// Calls `done` exactly once, with PUT_OK, SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT; may
    /// call it before returning. Never blocks.
    fn await_replica(&self, next_offset: i64, done: StatusDone);

    /// Whether the flush wait comes before the replica wait.
    fn ordering(&self) -> FlushThenReplica;
}

/// The status of a put that waited for both: a non-OK replica status wins over the flush
/// status (4.7+ `handleDiskFlushAndHA`; 4.3 overwrites the flush status the same way).
pub(crate) fn combine(flush: PutMessageStatus, replica: PutMessageStatus) -> PutMessageStatus {
    if replica != PutMessageStatus::PutOk {
        replica
    } else {
        flush
    }
}

/// Two completions joined: `done` runs once both halves reported.
pub(crate) fn join(done: StatusDone) -> (StatusDone, StatusDone) {
    type Slots = (
        Option<PutMessageStatus>,
        Option<PutMessageStatus>,
        Option<StatusDone>,
    );
    let slots: Arc<parking_lot::Mutex<Slots>> =
        Arc::new(parking_lot::Mutex::new((None, None, Some(done))));
    let finish = |s: &mut Slots| -> Option<(StatusDone, PutMessageStatus)> {
        match (s.0, s.1) {
            (Some(f), Some(r)) => s.2.take().map(|d| (d, combine(f, r))),
            _ => None,
        }
    };
    let a = Arc::clone(&slots);
    let flush: StatusDone = Box::new(move |st| {
        let ready = {
            let mut s = a.lock();
            s.0 = Some(st);
            finish(&mut s)
        };
        if let Some((d, st)) = ready {
            d(st);
        }
    });
    let replica: StatusDone = Box::new(move |st| {
        let ready = {
            let mut s = slots.lock();
            s.1 = Some(st);
            finish(&mut s)
        };
        if let Some((d, st)) = ready {
            d(st);
        }
    });
    (flush, replica)
}

/// Why a replicated chunk was not appended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplicaAppendError {
    /// The chunk does not start where this CommitLog ends (the slave then reconnects and
    /// reports its true end).
    #[error("master pushed offset not equal the max phy offset in slave, SLAVE: {slave} MASTER: {master}")]
    OffsetMismatch { slave: i64, master: i64 },
    #[error("the chunk at {offset} of {len} bytes crosses the end of its CommitLog file")]
    CrossesFile { offset: i64, len: usize },
    #[error("creating the CommitLog file for offset {0} failed")]
    CreateFile(i64),
    #[error("the store is shut down")]
    Stopped,
}

impl CommitLog {
    /// The master's transfer read: up to `max` readable bytes from `offset`, never past the end
    /// of the file holding it (a frame never spans two files). Empty when nothing is there.
    pub(crate) fn read_chunk(&self, offset: i64, max: usize) -> Vec<u8> {
        let Some(file) = self.find_file(offset) else {
            return Vec::new();
        };
        let pos = (offset - file.file_from_offset()) as usize;
        let readable = file.readable_from(pos);
        readable[..readable.len().min(max)].to_vec()
    }

    /// The slave's append (HAClient.dispatchReadRequest → appendToCommitLog): `bytes` at
    /// exactly `offset`, which must be this log's end unless the log is empty; the first file
    /// of an empty log starts at `offset` rounded down to the file size.
    pub(crate) fn append_replica(
        &self,
        guard: &mut PutLockGuard<'_, super::commitlog::AppendState>,
        offset: i64,
        bytes: &[u8],
    ) -> Result<i64, ReplicaAppendError> {
        let size = self.file_size() as i64;
        let end = self.max_wrote_offset();
        let have_files = !self.files().is_empty();
        if have_files && end != offset {
            return Err(ReplicaAppendError::OffsetMismatch {
                slave: end,
                master: offset,
            });
        }
        if bytes.is_empty() {
            return Ok(end);
        }
        let base = offset - offset % size;
        if (offset - base) as usize + bytes.len() > size as usize {
            return Err(ReplicaAppendError::CrossesFile {
                offset,
                len: bytes.len(),
            });
        }
        let file = match self.files().last() {
            Some(f) if f.file_from_offset() == base => Arc::clone(f),
            _ => self
                .roll_to(guard, base)
                .map_err(|_| ReplicaAppendError::CreateFile(base))?,
        };
        if file.file_from_offset() + file.wrote() as i64 != offset {
            return Err(ReplicaAppendError::OffsetMismatch {
                slave: file.file_from_offset() + file.wrote() as i64,
                master: offset,
            });
        }
        file.append(bytes);
        Ok(offset + bytes.len() as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PutMessageStatus::*;

    fn joined() -> (
        StatusDone,
        StatusDone,
        std::sync::mpsc::Receiver<PutMessageStatus>,
    ) {
        let (tx, rx) = std::sync::mpsc::channel();
        let (f, r) = join(Box::new(move |s| {
            let _ = tx.send(s);
        }));
        (f, r, rx)
    }

    /// 4.7+: the answer comes once both waits ended; a non-OK replica status wins.
    #[test]
    fn both_halves_answer_once_and_the_replica_status_wins() {
        let (f, r, rx) = joined();
        f(FlushDiskTimeout);
        assert!(rx.try_recv().is_err(), "the replica half is still waiting");
        r(FlushSlaveTimeout);
        assert_eq!(rx.try_recv(), Ok(FlushSlaveTimeout));
        let (f, r, rx) = joined();
        r(PutOk);
        f(FlushDiskTimeout);
        assert_eq!(rx.try_recv(), Ok(FlushDiskTimeout));
        assert!(rx.try_recv().is_err(), "exactly once");
        assert_eq!(combine(PutOk, SlaveNotAvailable), SlaveNotAvailable);
        assert_eq!(combine(PutOk, PutOk), PutOk);
    }
}
