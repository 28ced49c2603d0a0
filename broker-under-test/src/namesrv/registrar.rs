//! The broker's registration thread (name-server reference §8): REGISTER_BROKER to every name
//! server at start, every `registerNameServerPeriod` (forced, uncompressed JSON), again as
//! soon as a topic is created or changed, and UNREGISTER_BROKER at a clean stop.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{mpsc, Arc},
    time::{Duration, Instant},
};

use remoting::{
    headers::{RegisterBrokerRequestHeader, UnregisterBrokerRequestHeader},
    route::{
        body_crc32, RegisterBrokerBody, TopicConfigData, TopicConfigWrapper, MASTER_ID,
        PERM_INHERIT,
    },
    RemotingCommand, RequestCode,
};

use super::{client::NamesrvClient, settings::Settings};
use crate::{
    broker::Broker, consumer::topics::DataVersion, keys::VersionProfile, periodic::Stoppable,
};

/// How often the thread looks at the topic table's DataVersion: a topic created by
/// UPDATE_AND_CREATE_TOPIC or a send reaches the name servers within this (RocketMQ registers
/// from the creating thread; polling keeps the processors unaware of the name server).
const TOPIC_POLL: Duration = Duration::from_millis(100);

/// The Java broker's UNREGISTER_BROKER timeout.
const UNREGISTER_TIMEOUT: Duration = Duration::from_millis(3000);

/// The running registration thread; [`Registrar::stop`] (or drop) unregisters and joins it.
pub struct Registrar {
    thread: Stoppable,
}

/// Who this broker is, as the registration header says it.
struct Identity {
    cluster: String,
    name: String,
    addr: String,
    ha_addr: String,
    version: i32,
}

impl Registrar {
    /// Starts the thread; the first registration is sent at once.
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
            // brokerIP2:haListenPort; there is no HA service, the address is only reported.
            ha_addr: SocketAddr::new(broker.config.broker_ip, bound.port().wrapping_add(1))
                .to_string(),
            version: match broker.config.profile {
                VersionProfile::V4_3 => 273,
                VersionProfile::V4_9 => 409,
                VersionProfile::V5_3 => 479,
            },
        };
        let thread = Stoppable::spawn("BrokerRegisterService", move |rx| {
            run(broker, settings, id, rx)
        })?;
        Ok(Registrar { thread })
    }

    /// Unregisters from every name server and joins the thread (also on drop).
    pub fn stop(&mut self) {
        self.thread.stop();
    }
}

fn run(broker: Arc<Broker>, settings: Settings, id: Identity, rx: mpsc::Receiver<()>) {
    let mut clients: Vec<(NamesrvClient, bool)> = settings
        .name_servers
        .iter()
        .map(|ns| (NamesrvClient::new(ns.clone()), false))
        .collect();
    let mut registered_version: Option<DataVersion> = None;
    let mut next = Instant::now();
    loop {
        let now = Instant::now();
        let version = broker.topics.data_version();
        if now >= next || registered_version != Some(version) {
            let (version, topics) = broker.topics.snapshot();
            let cmd = register_command(&id, &broker, version, topics);
            for (c, ok_before) in clients.iter_mut() {
                match c.call(cmd.clone(), settings.timeout) {
                    Ok(a) if a.code == 0 => {
                        if !*ok_before {
                            eprintln!("register broker[{}] to name server {} OK", id.name, c.addr);
                        }
                        *ok_before = true;
                    }
                    Ok(a) => {
                        eprintln!(
                            "register broker[{}] to name server {} refused: code {} {}",
                            id.name,
                            c.addr,
                            a.code,
                            a.remark.unwrap_or_default()
                        );
                        *ok_before = false;
                    }
                    Err(e) => {
                        eprintln!(
                            "register broker[{}] to name server {} failed: {e}",
                            id.name, c.addr
                        );
                        *ok_before = false;
                    }
                }
            }
            registered_version = Some(version);
            next = Instant::now() + settings.period;
        }
        let wait = next
            .saturating_duration_since(Instant::now())
            .min(TOPIC_POLL);
        match rx.recv_timeout(wait) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => break,
        }
    }
    let cmd = RemotingCommand::request(RequestCode::UNREGISTER_BROKER, 0).with_header(
        &UnregisterBrokerRequestHeader {
            broker_name: id.name.clone(),
            broker_addr: id.addr.clone(),
            cluster_name: id.cluster.clone(),
            broker_id: MASTER_ID,
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
            broker_id: MASTER_ID,
            compressed: Some(false),
            body_crc32: Some(crc),
            ..Default::default()
        })
        .with_body(body);
    cmd.version = id.version;
    cmd
}
