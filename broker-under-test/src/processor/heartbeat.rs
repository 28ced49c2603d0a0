//! ClientManageProcessor: HEART_BEAT (34) registers a client's consumer groups (with their
//! subscriptions) and producer groups on its connection; UNREGISTER_CLIENT (35) removes them at
//! once (consumer §5.1, §5.2, §5.5).

use std::collections::BTreeMap;

use remoting::{
    fastjson::{
        self,
        enums::{self, JavaEnum},
        lenient, ConsumeFromWhere, ConsumeType, MessageModel,
    },
    headers::UnregisterClientRequestHeader,
    RemotingCommand, RequestCode, ResponseCode,
};
use serde::Deserialize;

use crate::{
    broker::{Broker, PERM_READ, PERM_WRITE},
    consumer::{
        clients::{ConsumerRegistration, Subscription},
        filter::TagFilter,
    },
    dispatch::response,
    namesrv::hook::TopicOrigin,
    processor::header::header_error,
    task::RequestTask,
};

/// MixAll.RETRY_GROUP_TOPIC_PREFIX.
pub const RETRY_PREFIX: &str = "%RETRY%";

/// `HeartbeatData`, read as fastjson reads it (enums by name or ordinal, numbers as strings,
/// unknown fields such as 5.x's `heartbeatFingerprint` ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct HeartbeatData {
    #[serde(rename = "clientID", deserialize_with = "lenient::string")]
    client_id: String,
    consumer_data_set: Vec<ConsumerData>,
    producer_data_set: Vec<ProducerData>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ConsumerData {
    #[serde(deserialize_with = "lenient::string")]
    group_name: String,
    #[serde(deserialize_with = "enums::lenient")]
    consume_type: Option<ConsumeType>,
    #[serde(deserialize_with = "enums::lenient")]
    message_model: Option<MessageModel>,
    #[serde(deserialize_with = "enums::lenient")]
    consume_from_where: Option<ConsumeFromWhere>,
    subscription_data_set: Vec<SubscriptionData>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct SubscriptionData {
    #[serde(deserialize_with = "lenient::string")]
    topic: String,
    #[serde(deserialize_with = "lenient::opt_string")]
    sub_string: Option<String>,
    #[serde(deserialize_with = "lenient::opt_string")]
    expression_type: Option<String>,
    #[serde(deserialize_with = "lenient::int")]
    sub_version: i64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ProducerData {
    #[serde(deserialize_with = "lenient::string")]
    group_name: String,
}

/// The constant's name; a field fastjson leaves null (absent, or a name this release does not
/// know) takes the Java client's default.
fn name_or<T: JavaEnum>(v: Option<T>, default: T) -> String {
    v.unwrap_or(default).name().to_owned()
}

pub fn process(broker: &Broker, task: &RequestTask) -> RemotingCommand {
    if task.request.code == RequestCode::UNREGISTER_CLIENT.as_i32() {
        return unregister(broker, task);
    }
    let profile = broker.config.profile;
    let req = &task.request;
    let data: HeartbeatData = match fastjson::from_slice(&req.body) {
        Ok(d) => d,
        Err(e) => {
            return response(
                profile,
                req,
                ResponseCode::SYSTEM_ERROR,
                Some(format!("the heartbeat body does not decode: {e}")),
            )
        }
    };
    let peer = task.responder.peer();
    for c in data.consumer_data_set {
        let config = broker.find_group(&c.group_name);
        match &config {
            Some(g) => {
                // The group's retry topic, created (and persisted) on its first heartbeat, and
                // registered before the answer (createTopicInSendMessageBackMethod).
                let retry = format!("{RETRY_PREFIX}{}", c.group_name);
                if broker.topics.get(&retry).is_none() {
                    broker.topics.create_if_absent(
                        &retry,
                        g.retry_queue_nums,
                        PERM_READ | PERM_WRITE,
                    );
                    broker.namesrv.topic_created(TopicOrigin::Send);
                }
            }
            // 5.2.0+ skips a group it has no config for; 4.x registers it anyway.
            None if !profile.is_4x() => continue,
            None => {}
        }
        let reg = ConsumerRegistration {
            group: c.group_name.clone(),
            client_id: data.client_id.clone(),
            consume_type: name_or(c.consume_type, ConsumeType::Passively),
            message_model: name_or(c.message_model, MessageModel::Clustering),
            consume_from_where: name_or(c.consume_from_where, ConsumeFromWhere::LastOffset),
            subscriptions: c
                .subscription_data_set
                .into_iter()
                .map(|s| Subscription {
                    filter: TagFilter::parse(s.sub_string.as_deref()),
                    topic: s.topic,
                    expression_type: s.expression_type.unwrap_or_else(|| "TAG".into()),
                    sub_version: s.sub_version,
                })
                .collect(),
        };
        if broker.consumers.register(reg, &task.responder) {
            broker.consumer_ids_changed(&c.group_name);
        }
    }
    for p in data.producer_data_set {
        broker.consumers.register_producer(&p.group_name, peer);
    }
    // Registered, then checked: a connection that ended before the check is closed again here
    // (doChannelCloseEvent is idempotent); one that ends after it is closed by its read loop,
    // which marks it ended before closing. Either way no dead connection stays registered.
    if task.responder.ended() {
        broker.channel_closed(peer);
    }
    let r = response(profile, req, ResponseCode::SUCCESS, None);
    if profile.is_4x() {
        r
    } else {
        r.with_ext_fields(BTreeMap::from([
            ("IS_SUPPORT_HEART_BEAT_V2".to_owned(), "true".to_owned()),
            ("IS_SUB_CHANGE".to_owned(), "true".to_owned()),
        ]))
    }
}

fn unregister(broker: &Broker, task: &RequestTask) -> RemotingCommand {
    let req = &task.request;
    let h = match req.header::<UnregisterClientRequestHeader>() {
        Ok(h) => h,
        Err(e) => return header_error(broker, req, &e),
    };
    let peer = task.responder.peer();
    if let Some(p) = h.producer_group.as_deref() {
        broker.consumers.unregister_producer(p, peer);
    }
    if let Some(g) = h.consumer_group.as_deref() {
        // findSubscriptionGroupConfig runs here too (and may create the group).
        let _ = broker.find_group(g);
        if broker.consumers.unregister(g, peer) {
            broker.consumer_ids_changed(g);
        }
    }
    response(broker.config.profile, req, ResponseCode::SUCCESS, None)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use remoting::RemotingCommand;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::{
        config::BrokerConfig,
        dispatch::{ProcessorKind, Responder},
        store::MessageStore,
    };

    /// Apache's C++ client 0.4.4's push-consumer heartbeat, as captured by the interop run.
    const HEARTBEAT: &[u8] = include_bytes!(
        "../../tests/fixtures/client-bodies/cpp-rocketmq-0.4.4/heart_beat-push-consumer.json"
    );

    fn group_of(body: &[u8]) -> String {
        let data: HeartbeatData = fastjson::from_slice(body).unwrap();
        data.consumer_data_set[0].group_name.clone()
    }

    #[test]
    fn a_heartbeat_served_after_its_connection_closed_leaves_no_member() {
        let dir = tempfile::tempdir().unwrap();
        // 4.9 registers a group it has no config for; the rule is the same on every profile.
        let config =
            BrokerConfig::for_test(dir.path(), &[("brokerVersionProfile", "4.9")]).unwrap();
        let host: std::net::SocketAddr = "127.0.0.1:10911".parse().unwrap();
        let store = MessageStore::open(config.store_config(host)).unwrap();
        let broker = Arc::new(Broker::new(config, store, host));
        let group = group_of(HEARTBEAT);
        let task = |peer: &str| {
            let (tx, _rx) = tokio::sync::mpsc::channel(4);
            RequestTask {
                request: RemotingCommand::request(RequestCode::HEART_BEAT, 1)
                    .with_body(HEARTBEAT.to_vec()),
                responder: Responder::new(tx, CancellationToken::new(), peer.parse().unwrap()),
                processor: ProcessorKind::Heartbeat,
                created: Instant::now(),
                created_epoch_ms: 0,
            }
        };
        let live = task("127.0.0.1:40001");
        let dead = task("127.0.0.1:40002");
        // The read loop saw the FIN (and ran its close) before the queued heartbeat was served.
        dead.responder.end();
        broker.channel_closed(dead.responder.peer());
        for t in [&live, &dead] {
            assert_eq!(process(&broker, t).code, ResponseCode::SUCCESS.as_i32());
        }
        assert_eq!(
            broker.consumers.client_ids(&group).map(|ids| ids.len()),
            Some(1),
            "only the live connection is a member"
        );
    }
}
