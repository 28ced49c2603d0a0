//! The order job part: what the sampling loop calls to count message order, and the store
//! read-back of a job without consumers. What order means and how it is counted (the key of a
//! send, its stream, the counts, one job's ledger) is [`crate::send_order`], below this part,
//! the consumers and the runner, which all feed or read it.
//!
//! * readback.rs — the store read-back thread of a job without consumers
//! * hook.rs     — what the sampling loop calls: start, each second, finish

pub mod hook;
pub mod readback;
