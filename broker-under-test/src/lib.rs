//! broker-under-test: RocketMQ's send path, request by request:
//! `remoting → server → dispatch → processor → store`.
//!
//! [`run`] serves a bound socket until a shutdown future completes; [`RunningBroker`] starts
//! one in-process (tests, the harness).
//!
//! It imports only `remoting` and `remoting-server` from the workspace; it must never import the
//! name server, `rmq-client` or a harness crate. The harness drives it as a process over the
//! wire, as it drives Apache's broker, so the model answers only what the protocol says.

pub mod acl;
pub mod broker;
pub mod clock;
pub mod config;
pub mod consumer;
pub mod counters;
pub mod dispatch;
pub mod executor;
pub mod ha;
pub mod keys;
pub mod namesrv;
pub mod periodic;
pub mod processor;
pub mod schedule;
pub mod server;
pub mod slave_sync;
pub mod store;
pub mod task;

use std::{future::Future, io::Write, net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context;
use tokio::{
    net::{TcpListener, TcpSocket},
    sync::oneshot,
    task::JoinHandle,
};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::{
    broker::Broker,
    config::{BrokerConfig, BrokerRole},
    dispatch::fast_failure,
    executor::Workers,
    periodic::Periodic,
    store::MessageStore,
    task::{ExecutorKind, RequestTask},
};

pub use crate::{config::ConfigSources, keys::VersionProfile};

/// RocketMQ's delay before the first consumerOffset.json write.
const OFFSET_FLUSH_FIRST_DELAY: Duration = Duration::from_secs(10);

/// PullRequestHoldService's period with long polling on.
const LONG_POLLING_CHECK: Duration = Duration::from_secs(5);

/// ClientHousekeepingService's scan period.
const CLIENT_SCAN_PERIOD: Duration = Duration::from_secs(10);

/// How often the flow-control summary line is logged.
const SUMMARY_PERIOD: Duration = Duration::from_secs(60);

/// Serves `socket` (bound by [`bind`], not yet listening) until `shutdown` completes, then stops
/// accepting, lets the executors finish their queued work, shuts the store down (flush) and
/// joins every thread.
///
/// Prints two lines to stdout once ready, `listening on IP:PORT` then `ha listening on IP:PORT`
/// (the HA port); everything else goes to stderr.
pub async fn run(
    config: BrokerConfig,
    socket: TcpSocket,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    serve(config, socket, shutdown, None).await
}

/// Binds the broker's port without listening on it: the port is the broker's from here on, but
/// a client's connect is refused until the store has opened (RocketMQ's NettyRemotingServer
/// binds in `start()`, after the store's load and recovery). A listening socket would let the
/// kernel complete handshakes and buffer requests through a long recovery; clients time out
/// (3 s), close and reconnect, and their queued heartbeats are served after the close.
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpSocket> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // As Netty's server channel (and tokio's TcpListener::bind) do: a restart on the same port
    // must not wait for the last run's TIME_WAIT connections. For port 0 only from `listen`
    // on ([`listen`]): the socket is bound here but listens only once the store is open,
    // seconds later, and while both sockets carry SO_REUSEADDR another process may bind the
    // same port and listen first (a broker's HA port at its listenPort + 1), so that this
    // listen() fails with EADDRINUSE (seen in CI: a cluster test's broker-0). Without it the
    // port stays this socket's alone until it listens.
    if addr.port() != 0 {
        socket.set_reuseaddr(true)?;
    }
    socket.bind(addr)?;
    Ok(socket)
}

/// NettyServerConfig `serverSocketBacklog` (1024).
const BACKLOG: u32 = 1024;

/// Listens on a socket from [`bind`], with SO_REUSEADDR set now if `bind` left it off: the
/// accepted connections inherit it, so their TIME_WAIT does not keep a restart of this broker
/// from binding the same port.
fn listen(socket: TcpSocket) -> std::io::Result<tokio::net::TcpListener> {
    socket.set_reuseaddr(true)?;
    socket.listen(BACKLOG)
}

/// `aclEnable=true`: the accounts of `${rocketmqHome}/conf/plain_acl.yml`. A file that is
/// missing or does not parse stops the start-up: a broker that quietly let every request
/// through, or refused every one, would measure something else than the user asked for.
fn acl_validator(config: &BrokerConfig) -> anyhow::Result<Option<acl::PlainAccessValidator>> {
    if !config.acl_enable {
        return Ok(None);
    }
    // `validate` refused this already; a config built by hand must not get 4.9.8's checks
    // under another release's name either.
    if let Some(why) = acl::acl_refusal(config.profile) {
        anyhow::bail!(why);
    }
    let path = config.acl_file();
    let v =
        acl::PlainAccessValidator::load(&path).context("aclEnable=true: loading the ACL file")?;
    eprintln!(
        "aclEnable=true: {} account(s) from {}",
        v.accounts(),
        path.display()
    );
    Ok(Some(v))
}

async fn serve(
    config: BrokerConfig,
    socket: TcpSocket,
    shutdown: impl Future<Output = ()>,
    ready: Option<oneshot::Sender<Bound>>,
) -> anyhow::Result<()> {
    let local = socket.local_addr().context("reading the bound address")?;
    let store_config = config.store_config(local);
    let root = store_config.store_path_root_dir.clone();
    let store = tokio::task::spawn_blocking(move || MessageStore::open(store_config))
        .await
        .context("store start-up task")?
        .with_context(|| format!("opening the store under {}", root.display()))?;
    let store_host = SocketAddr::new(config.broker_ip, local.port());
    let acl = acl_validator(&config).inspect_err(|_| store.shutdown())?;
    let (mut broker, loaded) =
        Broker::open(config, store.clone(), store_host).inspect_err(|_| {
            store.shutdown();
        })?;
    broker.acl = acl;
    for line in loaded {
        eprintln!("{line}");
    }
    let broker = Arc::new(broker);

    let handler: Arc<dyn Fn(RequestTask) + Send + Sync> = {
        let b = broker.clone();
        Arc::new(move |task| processor::process(&b, task))
    };
    let mut workers = Vec::new();
    for kind in ExecutorKind::ALL {
        let threads = broker.config.executor(kind).threads;
        let w = Workers::start(broker.queue(kind).clone(), threads, handler.clone())
            .with_context(|| format!("starting the {kind:?} executor threads"))?;
        workers.push(w);
    }
    drop(handler);
    let fast_failure = fast_failure::start(broker.clone()).context("starting BrokerFastFailure")?;
    {
        let hold = broker.pull_hold.clone();
        let long_polling = broker.config.long_polling_enable;
        // 4.x notifies only on a master (5.3 on slaves too); both only with long polling on.
        let notify = long_polling
            && !(broker.config.profile.is_4x() && broker.config.broker_role == BrokerRole::Slave);
        if notify {
            broker.store.set_message_arriving_listener(Box::new(
                move |topic, queue_id, max, tags| hold.notify(topic, queue_id, max, Some(tags)),
            ));
        }
    }
    let hold_check = {
        let hold = broker.pull_hold.clone();
        let store = broker.store.clone();
        let period = if broker.config.long_polling_enable {
            LONG_POLLING_CHECK
        } else {
            broker.config.short_polling_time
        };
        Periodic::start("PullRequestHoldService", period, period, move || {
            hold.check_all(|topic, queue_id| store.max_offset_in_queue(topic, queue_id))
        })
        .context("starting PullRequestHoldService")?
    };
    let housekeeping = {
        let b = broker.clone();
        let timeout = broker.config.channel_expired_timeout;
        Periodic::start(
            "ClientHousekeepingScheduledThread",
            CLIENT_SCAN_PERIOD,
            CLIENT_SCAN_PERIOD,
            move || {
                b.consumers.scan_expired(timeout);
            },
        )
        .context("starting the client housekeeping thread")?
    };
    let offset_flush = {
        let b = broker.clone();
        let period = broker.config.flush_consumer_offset_interval;
        // RocketMQ's first write is after 10 s; a shorter period (tests) starts sooner.
        Periodic::start(
            "ConsumerOffsetFlushService",
            period.min(OFFSET_FLUSH_FIRST_DELAY),
            period,
            move || b.persist(false),
        )
        .context("starting the consumer-offset flush thread")?
    };

    // Never on a SLAVE: its SCHEDULE_TOPIC_XXXX records are replicated, and so are the master's
    // re-puts of them; a re-put of its own would make its CommitLog differ from the master's.
    // 4.3.2 DefaultMessageStore.start l.224; 4.9.8 handleScheduleMessageService l.1552-1561;
    // 5.3.3 BrokerController l.1780 changeSpecialServiceStatus(brokerId == MASTER_ID).
    let schedule = if broker.config.broker_role == BrokerRole::Slave {
        None
    } else {
        let threads = broker
            .schedule
            .start(broker.config.flush_delay_offset_interval)
            .context("starting ScheduleMessageService")?;
        Some(threads)
    };

    // A slave copies its master's offsets and configs (SlaveSynchronize, per version).
    let slave_sync = if broker.config.broker_role == BrokerRole::Slave {
        Some(slave_sync::start(broker.clone()).context("starting SlaveSynchronize")?)
    } else {
        None
    };

    let token = CancellationToken::new();
    let tracker = TaskTracker::new();
    // Listening only now, with the store open (see [`bind`]).
    let listener = listen(socket).with_context(|| format!("listening on {local}"))?;
    let fast = bind_fast_port(&broker.config, local).await?;
    let fast_addr = fast.as_ref().and_then(|l| l.local_addr().ok());
    if let Some(fast) = fast {
        tracker.spawn(server::accept_loop(
            fast,
            broker.clone(),
            token.clone(),
            tracker.clone(),
        ));
    }
    tracker.spawn(server::accept_loop(
        listener,
        broker.clone(),
        token.clone(),
        tracker.clone(),
    ));
    {
        let broker = broker.clone();
        let token = token.clone();
        tracker.spawn(async move {
            let mut tick = tokio::time::interval(SUMMARY_PERIOD);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = token.cancelled() => return,
                    _ = tick.tick() => eprintln!("{}", broker.summary_line()),
                }
            }
        });
    }

    let mut ha = ha::HaService::start(&broker, local.port(), &token, &tracker)
        .await
        .context("starting the HA service")?;

    let registrar = match namesrv::Settings::from_config(&broker.config) {
        Ok(Some(s)) => Some(
            namesrv::Registrar::start(broker.clone(), s, local)
                .context("starting the name-server registration thread")?,
        ),
        Ok(None) => None,
        Err(e) => anyhow::bail!(e),
    };

    {
        let mut out = std::io::stdout().lock();
        // One write for both lines: a reader that takes the first line and closes the pipe
        // must not make the second one fail. The HA line comes second, so that readers of
        // the first line keep working.
        let lines = format!("listening on {local}\nha listening on {}\n", ha.addr);
        out.write_all(lines.as_bytes())
            .context("writing to stdout")?;
        out.flush().context("flushing stdout")?;
    }
    if let Some(ready) = ready {
        let _ = ready.send(Bound {
            addr: local,
            fast_addr,
            ha_addr: ha.addr,
        });
    }

    shutdown.await;
    eprintln!("shutting down: no new connections, finishing queued work");
    if let Some(mut r) = registrar {
        // 5.x unregisters first thing, so producers stop choosing this broker.
        tokio::task::spawn_blocking(move || r.stop())
            .await
            .context("joining the registration thread")?;
    }
    token.cancel();
    // Held pulls are never answered (as in RocketMQ); dropping them lets connections close.
    let mut hold_check = hold_check;
    hold_check.stop();
    broker.pull_hold.clear();
    let mut housekeeping = housekeeping;
    housekeeping.stop();
    let b = broker.clone();
    tokio::task::spawn_blocking(move || {
        // The HA connections ended with the token: puts still waiting for a slave are
        // answered FLUSH_SLAVE_TIMEOUT now rather than at their deadline.
        ha.stop();
        let mut fast_failure = fast_failure;
        fast_failure.stop();
        for mut w in workers {
            w.shutdown();
        }
        // Pulls the last queued tasks parked.
        b.pull_hold.clear();
        // After the executors: no send-back adds to a level any more.
        if let Some(mut schedule) = schedule {
            schedule.stop();
        }
        if let Some(mut s) = slave_sync {
            s.stop();
        }
        let mut offset_flush = offset_flush;
        offset_flush.stop();
        b.persist(true);
        b.store.shutdown();
    })
    .await
    .context("joining the executor threads")?;
    tracker.close();
    tracker.wait().await;
    eprintln!("{}", broker.summary_line());
    Ok(())
}

/// The fast port (NettyServerConfig `listenPort − 2`, the VIP channel 4.3 clients use for offset,
/// lock and send-back calls; consumer §8.1), served like the main port. With an explicit
/// `listenPort` failing to bind it is an error, as in RocketMQ; with an ephemeral one (tests)
/// the port below may belong to someone else, and the broker goes on without it.
async fn bind_fast_port(
    config: &BrokerConfig,
    main: SocketAddr,
) -> anyhow::Result<Option<TcpListener>> {
    let Some(port) = main.port().checked_sub(2).filter(|p| *p > 0) else {
        return Ok(None);
    };
    let addr = SocketAddr::new(main.ip(), port);
    match TcpListener::bind(addr).await {
        Ok(l) => {
            eprintln!("fast port: listening on {addr}");
            Ok(Some(l))
        }
        Err(e) if config.listen_port == 0 => {
            eprintln!("fast port {addr} not bound ({e}); serving the main port only");
            Ok(None)
        }
        Err(e) => Err(e).with_context(|| format!("binding the fast port {addr}")),
    }
}

/// The addresses a broker serves, once it serves.
struct Bound {
    addr: SocketAddr,
    fast_addr: Option<SocketAddr>,
    ha_addr: SocketAddr,
}

/// A broker served in-process on its own tokio task.
pub struct RunningBroker {
    pub addr: SocketAddr,
    /// The fast (VIP) port, `listenPort − 2`, when it could be bound.
    pub fast_addr: Option<SocketAddr>,
    /// The HA port (`haListenPort`).
    pub ha_addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<anyhow::Result<()>>,
}

impl RunningBroker {
    /// Binds `config.bind_addr()` (use `listenPort=0` for an ephemeral port) and returns once
    /// the broker serves.
    pub async fn start(config: BrokerConfig) -> anyhow::Result<Self> {
        let socket =
            bind(config.bind_addr()).with_context(|| format!("binding {}", config.bind_addr()))?;
        let stop = CancellationToken::new();
        let (ready_tx, ready_rx) = oneshot::channel();
        let shutdown = stop.clone().cancelled_owned();
        let task = tokio::spawn(serve(config, socket, shutdown, Some(ready_tx)));
        match ready_rx.await {
            Ok(Bound {
                addr,
                fast_addr,
                ha_addr,
            }) => Ok(RunningBroker {
                addr,
                fast_addr,
                ha_addr,
                stop,
                task,
            }),
            // The sender was dropped: start-up failed; the task holds the error.
            Err(_) => match task.await {
                Ok(Err(e)) => Err(e),
                Ok(Ok(())) => Err(anyhow::anyhow!("the broker stopped during start-up")),
                Err(e) => Err(anyhow::anyhow!("the broker task failed: {e}")),
            },
        }
    }

    /// Graceful shutdown, as on SIGTERM.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.stop.cancel();
        self.task.await.context("broker task")?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Between `bind` and `listen` an ephemeral port is this socket's alone: a socket that could
    /// share it (SO_REUSEADDR, as a broker's HA listener has) is refused, so nothing can listen
    /// on it first. (A restart on a known port is `cluster_consumer`'s
    /// `a_killed_broker_s_queues_resume_after_its_restart`.)
    #[tokio::test]
    async fn an_ephemeral_port_is_not_shared_before_it_listens() {
        let socket = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = socket.local_addr().unwrap();
        let other = TcpSocket::new_v4().unwrap();
        other.set_reuseaddr(true).unwrap();
        assert!(other.bind(addr).is_err(), "{addr} was shared before listen");
        assert_eq!(listen(socket).unwrap().local_addr().unwrap(), addr);
    }
}
