//! name-server: RocketMQ's name server (name-server reference §2–§7), enough for brokers to
//! register and for producers to discover routes.
//!
//! [`run`] serves a bound listener until a shutdown future completes: `server` (connections)
//! → `processor` (codes 103–106) → `routes` (the RouteInfoManager tables), plus the liveness
//! scan. [`RunningNameServer`] starts one in-process (tests, the harness).
//!
//! It imports only `remoting` and `remoting-server` from the workspace; it must never import the
//! broker, `rmq-client` or a harness crate: brokers and clients reach it over the wire.

pub mod compressed;
pub mod config;
pub mod log;
pub mod processor;
pub mod routes;
mod server;

use std::{future::Future, io::Write, net::SocketAddr, sync::Arc, time::Instant};

use anyhow::Context;
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

pub use config::NamesrvConfig;

use crate::{log::Log, routes::RouteInfo, server::Shared};

/// Serves `listener` until `shutdown` completes. Prints exactly one line, `listening on
/// IP:PORT`, to stdout once ready; everything else goes to stderr.
pub async fn run(
    config: NamesrvConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    serve(config, listener, shutdown, None).await
}

async fn serve(
    config: NamesrvConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
    ready: Option<oneshot::Sender<SocketAddr>>,
) -> anyhow::Result<()> {
    let local = listener.local_addr().context("reading the bound address")?;
    let log = Arc::new(match &config.log_file {
        Some(p) => Log::file(p).with_context(|| format!("creating {}", p.display()))?,
        None => Log::stderr(),
    });
    let shared = Arc::new(Shared::new(
        RouteInfo::with_log(
            config.broker_expired,
            config.max_brokers,
            config.max_topics,
            log.clone(),
        ),
        config.idle,
        config.max_connections,
    ));
    let token = CancellationToken::new();
    let tracker = TaskTracker::new();
    tracker.spawn(server::accept_loop(
        listener,
        shared.clone(),
        token.clone(),
        tracker.clone(),
    ));
    {
        // scanNotActiveBroker: periodic, and prompt to stop.
        let shared = shared.clone();
        let token = token.clone();
        let period = config.scan_interval;
        tracker.spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = token.cancelled() => return,
                    _ = tick.tick() => {
                        for (addr, timeout) in shared.routes.scan_not_active(Instant::now()) {
                            shared.routes.log.line(format_args!(
                                "The broker channel expired, {addr} {}ms",
                                timeout.as_millis()
                            ));
                        }
                    }
                }
            }
        });
    }
    match ready {
        // In-process (the harness, tests): the caller learns the address; stdout is theirs.
        Some(ready) => {
            let _ = ready.send(local);
        }
        None => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "listening on {local}").context("writing to stdout")?;
            out.flush().context("flushing stdout")?;
        }
    }
    shutdown.await;
    log.line(format_args!("shutting down"));
    token.cancel();
    tracker.close();
    tracker.wait().await;
    log.line(format_args!(
        "stopped; {} live brokers at the end",
        shared.routes.live_count()
    ));
    Ok(())
}

/// A name server served in-process on its own tokio task.
pub struct RunningNameServer {
    pub addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<anyhow::Result<()>>,
}

impl RunningNameServer {
    /// Binds `config.bind_addr()` (`listenPort=0` for an ephemeral port); returns once it serves.
    pub async fn start(config: NamesrvConfig) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(config.bind_addr())
            .await
            .with_context(|| format!("binding {}", config.bind_addr()))?;
        let stop = CancellationToken::new();
        let (tx, rx) = oneshot::channel();
        let task = tokio::spawn(serve(
            config,
            listener,
            stop.clone().cancelled_owned(),
            Some(tx),
        ));
        match rx.await {
            Ok(addr) => Ok(RunningNameServer { addr, stop, task }),
            Err(_) => match task.await {
                Ok(Err(e)) => Err(e),
                Ok(Ok(())) => Err(anyhow::anyhow!("the name server stopped during start-up")),
                Err(e) => Err(anyhow::anyhow!("the name server task failed: {e}")),
            },
        }
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        self.stop.cancel();
        self.task.await.context("name server task")?
    }
}
