//! The reading side of `harness merge`: a shard's result folder as the merge reads it
//! ([`folder`], with [`hlog_read`] for its `latency.hlog`), the check that folders are the
//! shards of one launch ([`check`]), each phase's rate ([`rates`]) and why a merge is refused
//! ([`MergeError`]). The merged folder is written by `harness`'s `merge/` through the row types
//! and writers of `harness-results` (the same ones `harness run` writes with and `read` reads).

pub mod check;
mod error;
pub mod folder;
pub mod hlog_read;
pub mod rates;

pub use error::MergeError;
