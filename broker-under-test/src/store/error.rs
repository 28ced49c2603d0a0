//! Store errors: [`StoreError`] for opening, flushing and dispatching, and the one way an append
//! can fail under the put lock.

use std::path::PathBuf;

use thiserror::Error;

/// Store failures at open time.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid store configuration: {0}")]
    Config(String),
    #[error("cannot start store thread {name}: {source}")]
    Thread {
        name: &'static str,
        #[source]
        source: std::io::Error,
    },
}

/// Why an append failed inside the lock.
#[derive(Debug)]
pub(crate) enum AppendError {
    /// No file could be created (pool exhausted with fast-fail, or I/O).
    CreateMappedFileFailed,
}
