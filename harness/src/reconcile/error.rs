//! Why a store or a running broker could not be read back after a fault job: the job's rows
//! become invalid with this text (the same words as when these were strings).

use std::net::SocketAddr;

use rmq_client::admin::ClientError;

use crate::kind::StartError;

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// No broker could be opened on the job's store.
    #[error("reconcile: opening the store: {0}")]
    OpenStore(#[source] StartError),
    /// The broker to read did not take an admin connection.
    #[error("reconcile: {addr}: {source}")]
    Connect {
        addr: SocketAddr,
        #[source]
        source: Box<ClientError>,
    },
    /// A running broker kept committing or dispatching (or did not say) for too long.
    #[error("reconcile: {addr} did not settle within {within:?} ({last})")]
    NotSettled {
        addr: SocketAddr,
        within: std::time::Duration,
        last: String,
    },
    /// A queue could not be read to its end.
    #[error("reconcile: reading {topic} queue {queue} at {addr}: {source}")]
    ReadQueue {
        topic: String,
        queue: u32,
        addr: SocketAddr,
        #[source]
        source: Box<ClientError>,
    },
}
