//! The broker's registration (name-server reference §8): REGISTER_BROKER to every name server
//! at start and every `registerNameServerPeriod` (forced, uncompressed JSON) from the thread
//! `BrokerRegisterService`; a topic created while serving a request is registered from the
//! creating thread before the answer (through [`RegisterHook`](super::hook::RegisterHook)):
//!
//! | profile | auto-created by a send / retry topic | UPDATE_AND_CREATE_TOPIC |
//! |---|---|---|
//! | 4.3, 4.9 | `registerBrokerAll(oneway=true)`: sent, not awaited | synchronous |
//! | 5.3 | synchronous (`registerIncrementBrokerData`) | synchronous |
//!
//! We send the whole table each time (RocketMQ's increment carries the one topic and the same
//! DataVersion; the name server's result is the same). UNREGISTER_BROKER at a clean stop.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{
        atomic::{AtomicBool, Ordering},
        mpsc, Arc, Weak,
    },
    time::{Duration, Instant},
};

use parking_lot::Mutex;
use remoting::{
    headers::{
        RegisterBrokerRequestHeader, RegisterBrokerResponseHeader, UnregisterBrokerRequestHeader,
    },
    route::{body_crc32, RegisterBrokerBody, TopicConfigData, TopicConfigWrapper, PERM_INHERIT},
    RemotingCommand, RequestCode,
};

use super::{client::NamesrvClient, hook::TopicOrigin, settings::Settings};
use crate::{
    broker::Broker, consumer::topics::DataVersion, keys::VersionProfile, periodic::Stoppable,
};

/// The Java broker's UNREGISTER_BROKER timeout.
const UNREGISTER_TIMEOUT: Duration = Duration::from_millis(3000);

/// The running registration thread; [`Registrar::stop`] (or drop) unregisters and joins it.
pub struct Registrar {
    thread: Stoppable,
    registration: Arc<Registration>,
}

/// Who this broker is, as the registration header says it.
struct Identity {
    cluster: String,
    name: String,
    addr: String,
    ha_addr: String,
    /// `brokerId`: 0 for the master, > 0 for a slave.
    broker_id: i64,
    version: i32,
}

/// Whether the caller waits for the name servers' answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delivery {
    Sync,
    Oneway,
}

impl Delivery {
    /// The table above.
    fn for_topic(profile: VersionProfile, origin: TopicOrigin) -> Delivery {
        match origin {
            TopicOrigin::Send if profile.is_4x() => Delivery::Oneway,
            _ => Delivery::Sync,
        }
    }
}

/// State shared by the periodic thread and the creating threads.
struct Registration {
    id: Identity,
    settings: Settings,
    /// One connection per name server, with whether the last call succeeded (to log changes
    /// only). Held across a call: the periodic round and a topic's registration take turns
    /// (RocketMQ runs them in parallel on a pool; one at a time keeps each connection's
    /// request/answer pairing simple).
    clients: Mutex<Vec<(NamesrvClient, bool)>>,
    /// Set once UNREGISTER_BROKER is under way: no registration may follow it.
    stopped: AtomicBool,
}

impl Registrar {
    /// Starts the thread; the first registration is sent at once. Installs the broker's
    /// [`RegisterHook`](super::hook::RegisterHook).
    pub fn start(
        broker: Arc<Broker>,
        settings: Settings,
        bound: SocketAddr,
    ) -> std::io::Result<Self> {
        let addr = SocketAddr::new(broker.config.broker_ip, bound.port());
        let id = Identity {
            cluster: broker.config.broker_cluster_name.clone(),
            name: broker.config.broker_name.clone(),
            addr: addr.to_string(),
            // brokerIP2:haListenPort, as bound by the HA service.
            ha_addr: broker
                .ha
                .bound
                .get()
                .copied()
                .unwrap_or_else(|| {
                    SocketAddr::new(broker.config.broker_ip, bound.port().wrapping_add(1))
                })
                .to_string(),
            broker_id: broker.config.ha.broker_id,
            version: match broker.config.profile {
                VersionProfile::V4_3 => 273,
                VersionProfile::V4_9 => 409,
                VersionProfile::V5_3 => 479,
            },
        };
        let registration = Arc::new(Registration {
            clients: Mutex::new(
                settings
                    .name_servers
                    .iter()
                    .map(|ns| (NamesrvClient::new(ns.clone()), false))
                    .collect(),
            ),
            id,
            settings,
            stopped: AtomicBool::new(false),
        });
        {
            // Weak: the broker owns the hook, the hook must not own the broker.
            let weak: Weak<Broker> = Arc::downgrade(&broker);
            let r = registration.clone();
            broker.namesrv.install(Box::new(move |origin| {
                if let Some(b) = weak.upgrade() {
                    r.register(&b, Delivery::for_topic(b.config.profile, origin));
                }
            }));
        }
        let r = registration.clone();
        let thread = Stoppable::spawn("BrokerRegisterService", move |rx| run(broker, r, rx))?;
        Ok(Registrar {
            thread,
            registration,
        })
    }

    /// Unregisters from every name server and joins the thread (also on drop).
    pub fn stop(&mut self) {
        self.registration.stopped.store(true, Ordering::SeqCst);
        self.thread.stop();
    }
}

impl Registration {
    /// REGISTER_BROKER with the current topic table to every name server, in turn.
    fn register(&self, broker: &Broker, delivery: Delivery) {
        let mut clients = self.clients.lock();
        // Checked under the lock: the unregistration takes it too, so none follows it.
        if self.stopped.load(Ordering::SeqCst) {
            return;
        }
        let (version, topics) = broker.topics.snapshot();
        let cmd = register_command(&self.id, broker, version, topics);
        let name = &self.id.name;
        for (c, ok_before) in clients.iter_mut() {
            let outcome = match delivery {
                Delivery::Sync => c.call(cmd.clone(), self.settings.timeout).map(Some),
                Delivery::Oneway => c
                    .send_oneway(cmd.clone().with_oneway(), self.settings.timeout)
                    .map(|()| None),
            };
            match outcome {
                Ok(Some(a)) if a.code != 0 => {
                    eprintln!(
                        "register broker[{name}] to name server {} refused: code {} {}",
                        c.addr,
                        a.code,
                        a.remark.unwrap_or_default()
                    );
                    *ok_before = false;
                }
                Ok(answer) => {
                    if let Some(a) = answer {
                        learn_master(broker, &a);
                    }
                    if !*ok_before {
                        eprintln!("register broker[{name}] to name server {} OK", c.addr);
                    }
                    *ok_before = true;
                }
                Err(e) => {
                    eprintln!(
                        "register broker[{name}] to name server {} failed: {e}",
                        c.addr
                    );
                    *ok_before = false;
                }
            }
        }
    }

    fn unregister(&self) {
        let mut clients = self.clients.lock();
        self.stopped.store(true, Ordering::SeqCst);
        let id = &self.id;
        let cmd = RemotingCommand::request(RequestCode::UNREGISTER_BROKER, 0).with_header(
            &UnregisterBrokerRequestHeader {
                broker_name: id.name.clone(),
                broker_addr: id.addr.clone(),
                cluster_name: id.cluster.clone(),
                broker_id: id.broker_id,
            },
        );
        for (c, _) in clients.iter_mut() {
            match c.call(cmd.clone(), UNREGISTER_TIMEOUT) {
                Ok(_) => eprintln!(
                    "unregistered broker[{}] from name server {}",
                    id.name, c.addr
                ),
                Err(e) => eprintln!(
                    "unregister broker[{}] from name server {} failed: {e}",
                    id.name, c.addr
                ),
            }
        }
    }
}

/// A slave without `haMasterAddress` takes its master's HA address from the answer
/// (`haServerAddr`, `masterAddr`; HA reference §1.4). Only the first answer counts in 4.x; any
/// answer with an address will do here (the name servers agree).
fn learn_master(broker: &Broker, answer: &RemotingCommand) {
    if broker.config.broker_role != crate::config::BrokerRole::Slave {
        return;
    }
    let Ok(h) = answer.header::<RegisterBrokerResponseHeader>() else {
        return;
    };
    broker.ha.learn_master_broker(h.master_addr);
    if broker.config.ha.master_address.is_none() {
        broker.ha.learn_master(h.ha_server_addr);
    }
}

/// The periodic round: at once, then every `registerNameServerPeriod`, until stopped.
fn run(broker: Arc<Broker>, registration: Arc<Registration>, rx: mpsc::Receiver<()>) {
    loop {
        registration.register(&broker, Delivery::Sync);
        let next = Instant::now() + registration.settings.period;
        match rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => break,
        }
    }
    registration.unregister();
}

/// REGISTER_BROKER with the whole topic table. Like the Java broker's TopicConfigManager,
/// the table registered includes a topic named after the broker and one after the cluster
/// (perm INHERIT only): RocketMQ 5.x refuses a first registration with a single topic.
fn register_command(
    id: &Identity,
    broker: &Broker,
    version: DataVersion,
    topics: Vec<crate::consumer::TopicConfig>,
) -> RemotingCommand {
    let mut table: BTreeMap<String, TopicConfigData> = BTreeMap::new();
    for name in [&id.name, &id.cluster] {
        table.insert(
            name.clone(),
            TopicConfigData {
                topic_name: name.clone(),
                read_queue_nums: 1,
                write_queue_nums: 1,
                perm: PERM_INHERIT,
                ..Default::default()
            },
        );
    }
    for t in topics {
        table.insert(
            t.topic_name.clone(),
            TopicConfigData {
                order: t.order,
                perm: t.perm,
                read_queue_nums: t.read_queue_nums,
                topic_name: t.topic_name,
                write_queue_nums: t.write_queue_nums,
                ..Default::default()
            },
        );
    }
    let is_5x = !broker.config.profile.is_4x();
    let body = RegisterBrokerBody {
        filter_server_list: Vec::new(),
        topic_config_serialize_wrapper: TopicConfigWrapper {
            data_version: remoting::route::DataVersion {
                counter: version.counter,
                state_version: is_5x.then_some(0),
                timestamp: version.timestamp,
            },
            topic_config_table: table,
        },
    }
    .encode();
    let crc = body_crc32(&body);
    let mut cmd = RemotingCommand::request(RequestCode::REGISTER_BROKER, 0)
        .with_header(&RegisterBrokerRequestHeader {
            broker_name: id.name.clone(),
            broker_addr: id.addr.clone(),
            cluster_name: id.cluster.clone(),
            ha_server_addr: id.ha_addr.clone(),
            broker_id: id.broker_id,
            compressed: Some(false),
            body_crc32: Some(crc),
            ..Default::default()
        })
        .with_body(body);
    cmd.version = id.version;
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The module's table: only a 4.x topic auto-created on the send path goes oneway.
    #[test]
    fn delivery_follows_the_profile_and_the_origin() {
        for p in VersionProfile::ALL {
            let want_send = if p.is_4x() {
                Delivery::Oneway
            } else {
                Delivery::Sync
            };
            assert_eq!(Delivery::for_topic(p, TopicOrigin::Send), want_send, "{p}");
            assert_eq!(
                Delivery::for_topic(p, TopicOrigin::Admin),
                Delivery::Sync,
                "{p}"
            );
        }
    }
}
