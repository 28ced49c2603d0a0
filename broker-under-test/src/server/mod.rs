//! The accept loop: a connection limit (a semaphore permit per connection, taken before
//! `accept`), one task per connection, graceful shutdown through a cancellation token.

mod connection;

use std::{sync::Arc, time::Duration};

use tokio::{net::TcpListener, sync::Semaphore};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::broker::Broker;

/// Accepts connections until `shutdown` is cancelled; connection tasks are spawned on `tracker`.
pub async fn accept_loop(
    listener: TcpListener,
    broker: Arc<Broker>,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) {
    let limit = Arc::new(Semaphore::new(broker.config.max_connections));
    loop {
        let permit = tokio::select! {
            _ = shutdown.cancelled() => return,
            p = limit.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
        };
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((socket, peer)) => {
                let _ = socket.set_nodelay(true);
                let broker = broker.clone();
                let shutdown = shutdown.clone();
                tracker.spawn(async move {
                    connection::serve(socket, peer, broker, shutdown).await;
                    drop(permit);
                });
            }
            Err(e) => {
                // EMFILE and friends: back off instead of spinning (mini-redis does the same).
                eprintln!("accept failed: {e}");
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        }
    }
}
