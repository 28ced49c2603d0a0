//! Starting and stopping replication for one broker (HAService.start / shutdown): bind the HA
//! port (every role, as RocketMQ; a bind failure aborts start-up, but for listenPort + 1 taken by
//! another process, see below), serve slaves, run the HA
//! client on a SLAVE, and on a SYNC_MASTER whose profile waits, start GroupTransferService and
//! install it as the store's gate.

use std::{net::SocketAddr, sync::Arc, thread::JoinHandle};

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use super::{master, slave, transfer::Transfer};
use crate::{broker::Broker, config::BrokerRole};

/// The running HA service; [`HaService::stop`] ends the transfer thread (the tasks end with the
/// broker's cancellation token).
pub struct HaService {
    pub addr: SocketAddr,
    transfer: Option<(Arc<Transfer>, JoinHandle<()>)>,
}

impl HaService {
    /// Binds `brokerIP1:haPort` and starts the tasks on `tracker`, cancelled by `token`.
    pub async fn start(
        broker: &Arc<Broker>,
        bound_listen_port: u16,
        token: &CancellationToken,
        tracker: &TaskTracker,
    ) -> anyhow::Result<HaService> {
        let c = &broker.config;
        let port = c.ha.ha_port(c.listen_port, bound_listen_port);
        let want = SocketAddr::new(c.broker_ip, port);
        let listener = match TcpListener::bind(want).await {
            Ok(l) => l,
            // listenPort + 1 is taken by someone who is no broker: on a machine where brokers
            // sit on ephemeral ports (the harness restarting one on its old port), its own
            // reconnecting clients can hold it. RocketMQ would not start; we say so and take
            // any port, which the name-server registration and the stdout line then carry.
            Err(e)
                if e.kind() == std::io::ErrorKind::AddrInUse
                    && c.ha.ha_port_is_derived(c.listen_port) =>
            {
                eprintln!(
                    "HA port {want} (listenPort + 1) in use ({e}): RocketMQ would not start; listening on an ephemeral HA port instead"
                );
                TcpListener::bind(SocketAddr::new(c.broker_ip, 0))
                    .await
                    .with_context(|| format!("binding an HA port on {}", c.broker_ip))?
            }
            Err(e) => return Err(e).with_context(|| format!("binding the HA port {want}")),
        };
        let addr = listener.local_addr().context("reading the HA address")?;
        let _ = broker.ha.bound.set(addr);
        let ctx = master::MasterCtx::new(broker.ha.clone(), broker.store.clone(), &c.ha);
        tracker.spawn(master::accept_loop(
            listener,
            ctx,
            token.clone(),
            tracker.clone(),
        ));
        if c.broker_role == BrokerRole::Slave {
            tracker.spawn(slave::run(
                broker.ha.clone(),
                broker.store.clone(),
                c.ha.clone(),
                token.clone(),
            ));
        }
        let transfer = match c.ha.wait_policy() {
            Some(policy) => {
                let t = Transfer::new(broker.ha.clone(), policy, c.ha.slave_fallbehind_max);
                let h = t.start().context("starting GroupTransferService")?;
                broker.store.set_replica_gate(t.clone());
                Some((t, h))
            }
            None => None,
        };
        Ok(HaService { addr, transfer })
    }

    /// Answers the puts still waiting (FLUSH_SLAVE_TIMEOUT) and joins GroupTransferService;
    /// later puts are answered at once.
    pub fn stop(&mut self) {
        if let Some((t, h)) = self.transfer.take() {
            t.stop();
            let _ = h.join();
        }
    }
}

impl Drop for HaService {
    fn drop(&mut self) {
        self.stop();
    }
}
