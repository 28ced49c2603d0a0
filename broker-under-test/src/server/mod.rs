//! The accept loop: a connection limit (a semaphore permit per connection, taken before
//! `accept`), one task per connection, graceful shutdown through a cancellation token.

mod connection;

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::broker::Broker;

/// Accepts connections until `shutdown` is cancelled, at most `maxConnections` at once;
/// connection tasks are spawned on `tracker`.
pub async fn accept_loop(
    listener: TcpListener,
    broker: Arc<Broker>,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) {
    let max_connections = broker.config.max_connections;
    let stop = shutdown.clone();
    remoting_server::accept_loop(
        listener,
        max_connections,
        shutdown,
        tracker,
        |e| eprintln!("accept failed: {e}"),
        move |socket, peer| connection::serve(socket, peer, broker.clone(), stop.clone()),
    )
    .await
}
