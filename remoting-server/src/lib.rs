//! What every remoting server of this workspace does around its connections, and nothing of
//! what it answers: accept connections up to a limit, one task per connection, stop on a
//! cancellation token, and turn SIGINT / SIGTERM into that token. `remoting` stays free of
//! sockets; the broker and the name server bring their own per-connection `serve`.
//!
//! It must never import `remoting` or any other crate of the workspace: it knows connections,
//! not frames, so the codec and the servers can change without it.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long a failed `accept` (EMFILE and friends) waits before the next one, instead of
/// spinning on the error (mini-redis does the same).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Accepts connections until `shutdown` is cancelled, at most `max_connections` open at once:
/// a permit is taken before `accept`, so connection `max_connections + 1` waits in the kernel's
/// backlog instead of costing a task. Each connection runs `serve(socket, peer)` on `tracker`
/// (the caller waits for them on stop); a failed accept is passed to `on_accept_error`.
pub async fn accept_loop<S, F>(
    listener: TcpListener,
    max_connections: usize,
    shutdown: CancellationToken,
    tracker: TaskTracker,
    on_accept_error: impl Fn(&std::io::Error),
    serve: S,
) where
    S: Fn(TcpStream, SocketAddr) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let limit = Arc::new(Semaphore::new(max_connections));
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
                let connection = serve(socket, peer);
                tracker.spawn(async move {
                    connection.await;
                    drop(permit);
                });
            }
            Err(e) => {
                on_accept_error(&e);
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                }
            }
        }
    }
}

/// Completes on SIGINT or SIGTERM (RocketMQ's `mqshutdown` sends SIGTERM). `what` names the
/// server in the one message this can print: when a signal cannot be listened for, the other
/// one still stops it.
///
/// Both handlers are installed when this is called, not when the future is first polled: the
/// caller announces "listening on …" before it polls, and a SIGINT sent in between would
/// otherwise meet the default action and kill the process instead of stopping it cleanly.
/// Must be called inside a tokio runtime.
pub fn shutdown_signal(what: &str) -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let streams = [SignalKind::interrupt(), SignalKind::terminate()].map(|kind| {
        signal(kind)
            .map_err(|e| {
                eprintln!("cannot listen for signal {kind:?} ({e}); the other one stops the {what}")
            })
            .ok()
    });
    async move {
        let [int, term] = streams;
        tokio::select! {
            _ = next_signal(int) => {}
            _ = next_signal(term) => {}
        }
    }
}

/// The next delivery of `signal`; never, for a signal that could not be listened for.
async fn next_signal(signal: Option<tokio::signal::unix::Signal>) {
    match signal {
        Some(mut s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::AsyncReadExt;

    /// The limit holds: with one permit, a second client is not served until the first
    /// connection ends; cancelling the token ends the loop.
    #[tokio::test]
    async fn one_permit_serves_one_connection_at_a_time_and_stops_on_cancel() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let tracker = TaskTracker::new();
        let served = Arc::new(AtomicUsize::new(0));
        let counter = served.clone();
        let server = tokio::spawn(accept_loop(
            listener,
            1,
            shutdown.clone(),
            tracker.clone(),
            |_| {},
            move |mut socket, _| {
                let counter = counter.clone();
                async move {
                    counter.fetch_add(1, Ordering::SeqCst);
                    // Serve until the client closes.
                    let mut buf = [0u8; 16];
                    while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
                }
            },
        ));
        let first = TcpStream::connect(addr).await.unwrap();
        let _second = TcpStream::connect(addr).await.unwrap();
        // Not a fixed sleep (a late wrong serve would pass one): the loopback handshakes are
        // done, so the second connection waits in the listener's queue now. With the clock
        // paused, the sleep ends only once the runtime is idle, after it polled the sockets
        // once more: a loop that could accept the second has accepted it then. `yield_now`
        // lets every task woken by then run first, so the serve it would have spawned has run
        // before the check. All on this one thread, no real time involved.
        tokio::time::pause();
        tokio::time::sleep(Duration::from_millis(200)).await;
        tokio::task::yield_now().await;
        tokio::time::resume();
        assert_eq!(
            served.load(Ordering::SeqCst),
            1,
            "the second waits for a permit"
        );
        drop(first);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while served.load(Ordering::SeqCst) < 2 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            served.load(Ordering::SeqCst),
            2,
            "served once the first closed"
        );
        shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .expect("the loop stops on cancel")
            .unwrap();
    }
}
