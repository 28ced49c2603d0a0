//! Why a merge was refused. Every variant names the folder (and the file) and the fix; all of
//! them are invalid input (exit 3): nothing is written.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    NotAResult { path: PathBuf, reason: String },
    #[error("{path}: {reason} (is this the latency.hlog of a harness run?)")]
    Hlog { path: PathBuf, reason: String },
    #[error("{b} cannot be merged with {a}: {what}; merge only shard folders of one `harness run --shard I/N` launch")]
    Mismatch {
        a: PathBuf,
        b: PathBuf,
        what: String,
    },
    #[error("{0}")]
    Shards(String),
    #[error("{path}: no row for cell {cell_id} repetition {repetition}{step} (the other shards have one): was this shard interrupted? Re-run it with the same --start-at or merge the complete shards of another launch")]
    MissingRow {
        path: PathBuf,
        cell_id: String,
        repetition: String,
        step: String,
    },
    #[error("{path}: no `{tag}` histogram in latency.hlog, so the percentiles of cell {cell_id} cannot be merged exactly (folders written before `harness merge` existed lack it; re-run the shard)")]
    MissingSegment {
        path: PathBuf,
        tag: String,
        cell_id: String,
    },
    #[error("--out {path}: {reason}")]
    Out { path: PathBuf, reason: String },
}
