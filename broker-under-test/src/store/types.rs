//! What a put takes and answers and what a get returns (RocketMQ's PutMessageResult,
//! AppendMessageResult, GetMessageResult), and the record-size limits of the put path. A leaf:
//! the put path, the services and the handle all speak these types.

use std::net::SocketAddr;

use bytes::Bytes;

/// Longest properties string a record can hold (2-byte length).
pub const MAX_PROPERTIES_LEN: usize = 32767;
/// The encoder allows records up to `maxMessageSize` + this (§7.2).
pub const RECORD_SLACK: usize = 64 * 1024;

/// One message to store.
#[derive(Debug, Clone)]
pub struct PutMessage {
    pub topic: String,
    pub queue_id: i32,
    pub flag: i32,
    pub body: Bytes,
    pub properties: String,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub reconsume_times: i32,
    /// The `WAIT` property: under SYNC_FLUSH, answer only after the force.
    pub wait_store_ok: bool,
}

/// RocketMQ's PutMessageStatus (the subset this store produces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutMessageStatus {
    PutOk,
    FlushDiskTimeout,
    /// SYNC_MASTER: the slave did not acknowledge within the wait (stored on the master).
    FlushSlaveTimeout,
    /// SYNC_MASTER (4.x): no slave connected, or the fastest one too far behind (stored).
    SlaveNotAvailable,
    CreateMappedFileFailed,
    MessageIllegal,
    PropertiesSizeExceeded,
    ServiceNotAvailable,
    OsPageCacheBusy,
    UnknownError,
}

/// AppendMessageResult.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendResult {
    /// CommitLog offset of the first message.
    pub wrote_offset: i64,
    pub wrote_bytes: usize,
    /// Offset message id of each message (`remoting::message::offset_msg_id`).
    pub msg_ids: Vec<String>,
    /// Logical queue offset of the first message.
    pub queue_offset: i64,
    pub msg_num: usize,
    /// STORETIMESTAMP: when the put lock was taken.
    pub store_timestamp: i64,
    /// Time this put held the put lock.
    pub in_lock_micros: u64,
}

/// PutMessageResult.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutResult {
    pub status: PutMessageStatus,
    pub append: Option<AppendResult>,
}

/// Receives the put's result exactly once.
pub type PutCallback = Box<dyn FnOnce(PutResult) + Send + 'static>;

/// GetMessageStatus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetMessageStatus {
    Found,
    NoMessageInQueue,
    OffsetFoundNull,
    OffsetOverflowOne,
    OffsetOverflowBadly,
    OffsetTooSmall,
    NoMatchedLogicQueue,
    /// Entries found, but their CommitLog records were deleted (retention).
    MessageWasRemoving,
}

/// GetMessageResult, with the records copied out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetMessageResult {
    pub status: GetMessageStatus,
    /// Concatenated CommitLog records (a PULL_MESSAGE body).
    pub body: Vec<u8>,
    pub msg_count: usize,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
}

/// Called by the dispatch after each consume-queue entry is written (MessageArrivingListener):
/// topic, queue id, the queue's new max offset, the entry's tags hash. Runs on the dispatching
/// thread, so it must be quick.
pub type ArrivingListener = Box<dyn Fn(&str, i32, i64, i64) + Send + Sync>;
