//! Registered consumers and producers (ConsumerManager, ProducerManager, consumer §5): groups
//! keyed per connection, subscriptions from heartbeats, NOTIFY_CONSUMER_IDS_CHANGED (40) to
//! every member's connection when the membership changes, and the 120 s expiry scan.
//!
//! A connection is identified by its peer address, unique among live connections.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::atomic::{AtomicI32, Ordering},
    time::{Duration, Instant},
};

use parking_lot::Mutex;
use remoting::{headers::ConsumerGroupHeader, RemotingCommand, RequestCode, ResponseCode};

use super::filter::TagFilter;
use crate::task::Responder;

/// One subscription of a group (SubscriptionData).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub topic: String,
    pub expression_type: String,
    pub sub_version: i64,
    pub filter: TagFilter,
}

/// A consumer entry of a heartbeat, already decoded.
#[derive(Debug, Clone)]
pub struct ConsumerRegistration {
    pub group: String,
    pub client_id: String,
    pub consume_type: String,
    pub message_model: String,
    pub consume_from_where: String,
    pub subscriptions: Vec<Subscription>,
}

struct Channel {
    client_id: String,
    responder: Responder,
    last_update: Instant,
}

#[derive(Default)]
struct GroupInfo {
    channels: HashMap<SocketAddr, Channel>,
    subscriptions: HashMap<String, Subscription>,
    message_model: String,
}

/// What a pull without the SUBSCRIPTION flag finds (§2.1 7b–7g): the expression type and filter,
/// or the answer's code and remark (without the FAQ link).
pub type PullSubscription = Result<(String, TagFilter), (ResponseCode, String)>;

pub struct ConsumerManager {
    // Held for map updates only; notifications are written after it is released.
    groups: Mutex<HashMap<String, GroupInfo>>,
    /// producer group → connections.
    producers: Mutex<HashMap<String, HashMap<SocketAddr, Instant>>>,
    next_opaque: AtomicI32,
    /// The broker's RPC version, written into its own requests.
    version: i32,
}

impl ConsumerManager {
    pub fn new(version: i32) -> Self {
        ConsumerManager {
            groups: Mutex::new(HashMap::new()),
            producers: Mutex::new(HashMap::new()),
            next_opaque: AtomicI32::new(1),
            version,
        }
    }

    /// registerConsumer: returns whether the group changed (a new connection, or a topic added
    /// or removed); a newer `subVersion` replaces a topic's entry without being a change.
    pub fn register(&self, reg: ConsumerRegistration, responder: &Responder) -> bool {
        let mut groups = self.groups.lock();
        let g = groups.entry(reg.group.clone()).or_default();
        g.message_model = reg.message_model;
        let peer = responder.peer();
        let mut changed = false;
        match g.channels.get_mut(&peer) {
            Some(c) => {
                c.client_id = reg.client_id;
                c.last_update = Instant::now();
            }
            None => {
                g.channels.insert(
                    peer,
                    Channel {
                        client_id: reg.client_id,
                        responder: responder.clone(),
                        last_update: Instant::now(),
                    },
                );
                changed = true;
            }
        }
        let incoming: HashMap<String, Subscription> = reg
            .subscriptions
            .into_iter()
            .map(|s| (s.topic.clone(), s))
            .collect();
        for (topic, sub) in &incoming {
            match g.subscriptions.get(topic) {
                None => {
                    g.subscriptions.insert(topic.clone(), sub.clone());
                    changed = true;
                }
                Some(old) if sub.sub_version > old.sub_version => {
                    g.subscriptions.insert(topic.clone(), sub.clone());
                }
                Some(_) => {}
            }
        }
        let before = g.subscriptions.len();
        g.subscriptions.retain(|t, _| incoming.contains_key(t));
        changed |= g.subscriptions.len() != before;
        changed
    }

    pub fn register_producer(&self, group: &str, peer: SocketAddr) {
        self.producers
            .lock()
            .entry(group.to_owned())
            .or_default()
            .insert(peer, Instant::now());
    }

    /// unregisterConsumer for the requesting connection; returns whether it was a member.
    pub fn unregister(&self, group: &str, peer: SocketAddr) -> bool {
        let mut groups = self.groups.lock();
        let Some(g) = groups.get_mut(group) else {
            return false;
        };
        let removed = g.channels.remove(&peer).is_some();
        if g.channels.is_empty() {
            groups.remove(group);
        }
        removed
    }

    pub fn unregister_producer(&self, group: &str, peer: SocketAddr) {
        let mut producers = self.producers.lock();
        if let Some(p) = producers.get_mut(group) {
            p.remove(&peer);
            if p.is_empty() {
                producers.remove(group);
            }
        }
    }

    /// doChannelCloseEvent: drops the connection from every group. Returns the groups it left
    /// with their message model, for the notification.
    pub fn channel_closed(&self, peer: SocketAddr) -> Vec<(String, String)> {
        let mut left = Vec::new();
        let mut groups = self.groups.lock();
        groups.retain(|name, g| {
            if g.channels.remove(&peer).is_some() {
                left.push((name.clone(), g.message_model.clone()));
            }
            !g.channels.is_empty()
        });
        drop(groups);
        for p in self.producers.lock().values_mut() {
            p.remove(&peer);
        }
        left
    }

    /// scanNotActiveChannel: removes consumers without a heartbeat for `timeout` and closes
    /// their connections, without notifying (the close then finds nothing; consumer §5.3).
    pub fn scan_expired(&self, timeout: Duration) -> usize {
        let now = Instant::now();
        let mut expired = Vec::new();
        let mut groups = self.groups.lock();
        groups.retain(|name, g| {
            g.channels.retain(|peer, c| {
                let keep = now.duration_since(c.last_update) <= timeout;
                if !keep {
                    eprintln!(
                        "SCAN: remove expired channel from ConsumerManager consumerTable. \
                         channel={peer}, consumerGroup={name}"
                    );
                    expired.push(c.responder.clone());
                }
                keep
            });
            if g.channels.is_empty() {
                eprintln!("SCAN: remove expired channel from ConsumerManager consumerTable, all clear, consumerGroup={name}");
            }
            !g.channels.is_empty()
        });
        drop(groups);
        for r in &expired {
            r.close();
        }
        expired.len()
    }

    /// The group's client ids (map order), `None` without a registered connection.
    pub fn client_ids(&self, group: &str) -> Option<Vec<String>> {
        let groups = self.groups.lock();
        let g = groups.get(group)?;
        Some(g.channels.values().map(|c| c.client_id.clone()).collect())
    }

    /// Whether `client_id` is registered in `group` on a live connection.
    pub fn is_member(&self, group: &str, client_id: &str) -> bool {
        self.groups
            .lock()
            .get(group)
            .is_some_and(|g| g.channels.values().any(|c| c.client_id == client_id))
    }

    /// Consumer groups and connections registered now (runtime info).
    pub fn counts(&self) -> (usize, usize) {
        let groups = self.groups.lock();
        (
            groups.len(),
            groups.values().map(|g| g.channels.len()).sum(),
        )
    }

    /// §2.1 7b–7g for a pull without the SUBSCRIPTION flag.
    pub fn pull_subscription(
        &self,
        group: &str,
        topic: &str,
        sub_version: i64,
        consume_broadcast_enable: bool,
    ) -> PullSubscription {
        let groups = self.groups.lock();
        let Some(g) = groups.get(group) else {
            return Err((
                ResponseCode::SUBSCRIPTION_NOT_EXIST,
                "the consumer's group info not exist".into(),
            ));
        };
        if g.message_model == "BROADCASTING" && !consume_broadcast_enable {
            return Err((
                ResponseCode::NO_PERMISSION,
                format!("the consumer group[{group}] can not consume by broadcast way"),
            ));
        }
        let Some(sub) = g.subscriptions.get(topic) else {
            return Err((
                ResponseCode::SUBSCRIPTION_NOT_EXIST,
                "the consumer's subscription not exist".into(),
            ));
        };
        if sub.sub_version < sub_version {
            return Err((
                ResponseCode::SUBSCRIPTION_NOT_LATEST,
                "the consumer's subscription not latest".into(),
            ));
        }
        if sub.expression_type != "TAG" {
            return Err((
                ResponseCode::FILTER_DATA_NOT_EXIST,
                "The broker's consumer filter data is not exist!Your expression may be wrong!"
                    .into(),
            ));
        }
        Ok((sub.expression_type.clone(), sub.filter.clone()))
    }

    /// Broker2Client.notifyConsumerIdsChanged: a oneway 40 to every member's connection.
    pub fn notify_ids_changed(&self, group: &str) {
        let members: Vec<Responder> = match self.groups.lock().get(group) {
            Some(g) => g.channels.values().map(|c| c.responder.clone()).collect(),
            None => return,
        };
        for r in members {
            let opaque = self.next_opaque.fetch_add(1, Ordering::Relaxed);
            let mut cmd =
                RemotingCommand::request(RequestCode::NOTIFY_CONSUMER_IDS_CHANGED, opaque)
                    .with_oneway()
                    .with_header(&ConsumerGroupHeader {
                        consumer_group: group.to_owned(),
                    });
            cmd.version = self.version;
            r.write(cmd.to_bytes());
        }
    }
}
