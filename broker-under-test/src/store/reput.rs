//! ReputMessageService (DefaultMessageStore.ReputMessageService; consumer reference §3): one named
//! thread that reads the CommitLog behind the writers, from `reputFromOffset` up to what readers
//! may see, writes a consume-queue entry per message (which advances that queue's max offset),
//! reports each entry to the message-arriving listener (long polling's `notifyMessageArriving`),
//! and rests 1 ms between rounds (`Thread.sleep(1)`, then `doReput`).
//!
//! A put is answered without waiting for any of this. A consumer therefore sees a message only
//! once this thread has dispatched it, and `dispatchBehindBytes` ([`Reput::behind`]) is how far
//! the thread is behind: bytes readers may see that have no consume-queue entry yet.
//!
//! How far a round reads (`getReputEndOffset`, [`ReputEnd`]): 4.3 and 4.9 read up to
//! `CommitLog.getMaxOffset()`, the read position of the last file, which is its committed
//! position when a transient-pool buffer takes its appends (§9.4); 5.3 reads up to
//! `getConfirmOffset()`, the same except under SYNC_FLUSH, where it is `flushedWhere`, so 5.3
//! consumers see only forced data. 5.3's batched notification (`notifyMessageArriveInBatch`)
//! belongs to the RocksDB store only; the default store notifies per message in all three
//! releases, as here.
//!
//! Recovery: the consume queues are rebuilt on every open, so [`Reput::do_reput`] runs once on the
//! opening thread from the first CommitLog offset before the thread starts (4.9 and 5.3 likewise
//! start the thread and wait until `dispatchBehindBytes() <= 0` before they accept puts). The
//! thread then starts at the recovered end.
//!
//! Shutdown differs in form, not in outcome: RocketMQ polls up to 50 × 100 ms for the thread to
//! catch up and then stops it; here the stop ends the rest (or an injected stall) at once and the
//! thread makes one last round before it exits, so what is readable at that moment is dispatched.
//!
//! Memory: a round reads the mapped files in place; nothing is queued between the put path and
//! this thread.
//!
//! This file holds the position and one round (`doReput`); the thread's loop is in `service.rs`
//! with the other store services.

use std::sync::atomic::{AtomicI64, Ordering};

use super::commitlog::CommitLog;
use super::config::ReputEnd;
use super::consume_queue::CqEntry;
use super::error::StoreError;
use super::record::{is_prepared_or_rollback, parse_for_dispatch, Parsed};

/// The dispatch position and how far it may go.
pub(crate) struct Reput {
    /// `reputFromOffset`: the next CommitLog offset to dispatch. Written by one dispatcher at a
    /// time, never two: the opening thread's rebuild, then the thread (started after it). Read by
    /// [`Reput::behind`] from any thread, so it is advanced after every record.
    from: AtomicI64,
    end: ReputEnd,
}

impl Reput {
    pub(crate) fn new(end: ReputEnd) -> Self {
        Reput {
            from: AtomicI64::new(0),
            end,
        }
    }

    /// `getReputEndOffset`.
    fn end_offset(&self, log: &CommitLog) -> i64 {
        match self.end {
            ReputEnd::MaxOffset => log.max_offset(),
            ReputEnd::FlushedWhere => log.flushed_where(),
        }
    }

    /// `dispatchBehindBytes` (`behind()`): the end offset minus `reputFromOffset`.
    pub(crate) fn behind(&self, log: &CommitLog) -> i64 {
        self.end_offset(log) - self.from.load(Ordering::Acquire)
    }

    /// `isCommitLogAvailable`: there is something to dispatch.
    pub(crate) fn available(&self, log: &CommitLog) -> bool {
        self.from.load(Ordering::Acquire) < self.end_offset(log)
    }

    /// `doReput`: dispatches every record below the end offset, file by file; returns the
    /// messages and bytes dispatched.
    pub(crate) fn do_reput(&self, log: &CommitLog) -> Result<(u64, u64), StoreError> {
        let mut dispatched = (0u64, 0u64);
        let mut from = self.from.load(Ordering::Acquire);
        let min = log.min_offset();
        if from < min {
            eprintln!(
                "The reputFromOffset={from} is smaller than minPyOffset={min}, this usually \
                 indicate that the dispatch behind too much and the commitlog has expired."
            );
            from = min;
            self.from.store(from, Ordering::Release);
        }
        loop {
            let end = self.end_offset(log);
            if from >= end {
                return Ok(dispatched);
            }
            let Some(file) = log.find_file(from) else {
                return Ok(dispatched);
            };
            let in_file = (from - file.file_from_offset()) as usize;
            let readable = file.readable_from(in_file);
            // A record that crosses the end offset waits for the next round (5.3's
            // `reputFromOffset + size > getReputEndOffset()`): the parser sees it cut short.
            let limit =
                usize::try_from(end - from).map_or(readable.len(), |n| n.min(readable.len()));
            let readable = &readable[..limit];
            let mut used = 0usize;
            while used < readable.len() {
                match parse_for_dispatch(&readable[used..]) {
                    Parsed::Message(info) => {
                        if !is_prepared_or_rollback(info.sys_flag) {
                            log.consume_queues.dispatch(
                                &info.topic,
                                info.queue_id,
                                info.queue_offset,
                                CqEntry {
                                    commit_log_offset: from + used as i64,
                                    size: info.size as i32,
                                    tag_hash: info.tags_hash,
                                },
                            )?;
                        }
                        used += info.size;
                        dispatched.0 += 1;
                        dispatched.1 += info.size as u64;
                        self.from.store(from + used as i64, Ordering::Release);
                    }
                    // The end-of-file marker: `rollNextFile`.
                    Parsed::Blank => {
                        used = file.size() - in_file;
                        break;
                    }
                    Parsed::End => break,
                }
            }
            from += used as i64;
            self.from.store(from, Ordering::Release);
            if used == 0 || in_file + used < file.size() {
                return Ok(dispatched);
            }
        }
    }
}
