//! The reading side of `harness merge`: a shard's result folder as the merge reads it
//! ([`folder`], with [`hlog_read`] for its `latency.hlog`), the check that folders are the
//! shards of one launch ([`check`]), each phase's rate ([`rates`]) and why a merge is refused
//! ([`MergeError`]). Writing the merged folder (its rows, time series and interval log) is
//! still `harness`'s `merge/`, because the row types and writers live there.

pub mod check;
mod error;
pub mod folder;
pub mod hlog_read;
pub mod rates;

pub use error::MergeError;
