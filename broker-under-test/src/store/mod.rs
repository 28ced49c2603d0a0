//! The message store: CommitLog of memory-mapped files, the put-message lock, flush and commit
//! services, the transient store pool and consume queues (reference §5, §7.2–§7.6, §8, §9, §10).
//!
//! Threads, all named and joined by [`MessageStore::shutdown`]:
//! `FlushRealTimeService` (ASYNC_FLUSH) or `GroupCommitService` + `FlushDiskWatcher` (SYNC_FLUSH),
//! `CommitRealTimeService` (pool in effect), `ReputMessageService` (dispatch to the consume
//! queues and long polling's wake-ups, `reput.rs`), `StoreStatsService`.
//!
//! A put runs on the caller's thread (see `put.rs` for its steps) and is answered at once or,
//! under SYNC_FLUSH with WAIT, by group commit or the flush-disk watcher; its consume-queue
//! entry comes later, from ReputMessageService.
//!
//! Differences from RocketMQ worth knowing: the file after the active one is pre-created (with
//! its own pool buffer, as AllocateMappedFileService does) not by a thread of its own but inside
//! the put lock at the roll, or with the pool on by CommitRealTimeService after its next round
//! (so a full file's buffer comes back first, as it does on the real broker); 5.3's
//! topic-queue lock always has 32 stripes (`topicQueueLockNum` is not a key here); consume
//! queues are rebuilt from the CommitLog on every open; retention (`retention/`) deletes old files; ordinary messages only
//! (no delay levels). Replication plugs in through `replica.rs` (the gate a SYNC_MASTER's put
//! waits on, the master's chunk read and the slave's append); the HA service is `crate::ha`.
//!
//! Fault injection (ours, not RocketMQ's; all off by default, see [`FaultInjection`]): a put
//! stall holds the put lock for `put_stall_millis` on the first append and then at most once per
//! `put_stall_interval_millis`; `append_delay_micros` stretches every lock hold to at least that
//! (a sleep), `append_spin` adds that much CPU work to it; `flush_stall_millis` is added
//! to every force. The page-cache model (`page_cache.rs`) is the one to use for questions about
//! the transient store pool: its stalls hit whichever thread writes file-backed pages (the
//! appender without a pool buffer, the commit thread with one), and `writeback_stall_millis`
//! holds writers of the pages being forced.
//!
//! This file is only the façade: the children import from their leaf siblings (`error`,
//! `types`, `config`, `record`, …), never from here, so no module imports one that imports it
//! back.

mod commitlog;
mod config;
mod consume_queue;
mod error;
mod flush_request;
mod get;
mod inner;
mod lock;
mod mapped_file;
mod message_store;
mod page_cache;
mod pool;
mod put;
mod record;
mod recovery;
mod replica;
mod reput;
mod retention;
mod service;
mod stats;
mod types;
mod waiter;

pub use config::{
    FaultInjection, FlushDiskType, OffsetCorrection, PutCheckOrder, PutLockKind, ReputEnd,
    StoreConfig, StoreRole, MIN_MAPPED_FILE_SIZE,
};
pub use error::StoreError;
pub use message_store::MessageStore;
pub use replica::{FlushThenReplica, ReplicaAppendError, ReplicaGate, StatusDone};
pub use retention::{allocated_bytes, DiskModel, DiskRatios, RetentionConfig};
pub use stats::human_readable_bytes;
pub use types::{
    AppendResult, ArrivingListener, GetMessageResult, GetMessageStatus, PutCallback, PutMessage,
    PutMessageStatus, PutResult, MAX_PROPERTIES_LEN, RECORD_SLACK,
};

#[cfg(test)]
mod tests;
