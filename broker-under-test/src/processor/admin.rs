//! The default processor (AdminBrokerProcessor): UPDATE_AND_CREATE_TOPIC (17),
//! GET_BROKER_CONFIG (26), GET_BROKER_RUNTIME_INFO (28), UNREGISTER_CLIENT (35),
//! GET_BROKER_HA_STATUS (907, 5.3).

use std::{collections::BTreeMap, time::Instant};

use remoting::{headers::CreateTopicRequestHeader, RemotingCommand, RequestCode, ResponseCode};

use crate::{
    broker::{Broker, TopicConfig},
    dispatch::{response, ExecutorKind},
    namesrv::hook::TopicOrigin,
    processor::{header::header_error, send::validate_topic},
};

pub fn process(broker: &Broker, request: &RemotingCommand) -> RemotingCommand {
    let profile = broker.config.profile;
    match RequestCode::from_i32(request.code) {
        Some(RequestCode::UPDATE_AND_CREATE_TOPIC) => create_topic(broker, request),
        Some(RequestCode::GET_BROKER_CONFIG) => broker_config(broker, request),
        Some(RequestCode::GET_BROKER_RUNTIME_INFO) => {
            let table = runtime_info(broker);
            let body = serde_json::json!({ "table": table }).to_string();
            response(profile, request, ResponseCode::SUCCESS, None).with_body(body.into_bytes())
        }
        Some(RequestCode::GET_BROKER_HA_STATUS) => {
            let info = crate::ha::status::runtime_info(
                &broker.ha,
                &broker.config.ha,
                broker.store.commit_log_max_offset(),
            );
            let body = serde_json::to_vec(&info).unwrap_or_default();
            response(profile, request, ResponseCode::SUCCESS, None).with_body(body)
        }
        _ => response(profile, request, ResponseCode::SUCCESS, None),
    }
}

/// Every effective key as `key=value` lines, the DataVersion of the configuration in the
/// `version` header (4.9.8 AdminBrokerProcessor.getBrokerConfig l.552-575, over
/// Configuration.getAllConfigsFormatString). Nothing here updates the configuration at run
/// time (no UPDATE_BROKER_CONFIG), so its counter stays 0 and its timestamp is the boot's, as
/// a DataVersion is when it was built.
fn broker_config(broker: &Broker, request: &RemotingCommand) -> RemotingCommand {
    let content: String = broker
        .config
        .effective
        .iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect();
    let mut version = serde_json::json!({ "counter": 0, "timestamp": broker.boot_epoch_ms });
    // DataVersion gained `stateVersion` in 5.x (5.3.3 remoting/protocol/DataVersion.java l.22).
    if !broker.config.profile.is_4x() {
        version["stateVersion"] = serde_json::json!(0);
    }
    let version = version.to_string();
    response(broker.config.profile, request, ResponseCode::SUCCESS, None)
        .with_ext_fields(BTreeMap::from([("version".to_owned(), version)]))
        .with_body(content.into_bytes())
}

fn create_topic(broker: &Broker, request: &RemotingCommand) -> RemotingCommand {
    let profile = broker.config.profile;
    let h = match request.header::<CreateTopicRequestHeader>() {
        Ok(h) => h,
        Err(e) => return header_error(broker, request, &e),
    };
    if let Err(remark) = validate_topic(&h.topic) {
        return response(profile, request, ResponseCode::SYSTEM_ERROR, Some(remark));
    }
    if h.read_queue_nums < 1 || h.write_queue_nums < 1 {
        return response(
            profile,
            request,
            ResponseCode::SYSTEM_ERROR,
            Some(format!(
                "read/write queue numbers must be positive, got {}/{}",
                h.read_queue_nums, h.write_queue_nums
            )),
        );
    }
    broker.topics.put(TopicConfig {
        topic_name: h.topic,
        read_queue_nums: h.read_queue_nums,
        write_queue_nums: h.write_queue_nums,
        perm: h.perm,
        order: h.order.unwrap_or(false),
    });
    broker.namesrv.topic_created(TopicOrigin::Admin);
    response(profile, request, ResponseCode::SUCCESS, None)
}

/// `[ D days, H hours, M minutes, S seconds ]` (StoreStatsService.getFormatRuntime).
fn format_runtime(ms: u128) -> String {
    let s = ms / 1000;
    format!(
        "[ {} days, {} hours, {} minutes, {} seconds ]",
        s / 86_400,
        (s % 86_400) / 3600,
        (s % 3600) / 60,
        s % 60
    )
}

/// The GET_BROKER_RUNTIME_INFO table (reference §10) plus our flow-control counters.
pub fn runtime_info(broker: &Broker) -> BTreeMap<String, String> {
    let mut t = broker.store.runtime_info();
    let now = Instant::now();
    let mut queue = |prefix: &str, kind: ExecutorKind, with_head: bool| {
        let q = broker.queue(kind);
        t.insert(format!("{prefix}QueueSize"), q.len().to_string());
        t.insert(format!("{prefix}QueueCapacity"), q.capacity().to_string());
        if with_head {
            t.insert(
                format!("{prefix}QueueHeadWaitTimeMills"),
                q.head_wait(now).as_millis().to_string(),
            );
        }
    };
    queue("sendThreadPool", ExecutorKind::Send, true);
    queue("pullThreadPool", ExecutorKind::Pull, true);
    let et = broker.queue(ExecutorKind::EndTransaction);
    t.insert("EndTransactionQueueSize".into(), et.len().to_string());
    t.insert(
        "EndTransactionThreadPoolQueueCapacity".into(),
        et.capacity().to_string(),
    );
    let profile = broker.config.profile;
    t.insert("brokerVersion".into(), profile.ordinal().to_string());
    t.insert("brokerVersionDesc".into(), profile.desc().into());
    t.insert("bootTimestamp".into(), broker.boot_epoch_ms.to_string());
    t.insert("startAcceptSendRequestTimeStamp".into(), "0".into());
    t.entry("runtime".into())
        .or_insert_with(|| format_runtime(broker.boot.elapsed().as_millis()));
    t.entry("pageCacheLockTimeMills".into())
        .or_insert_with(|| broker.store.lock_time_mills().to_string());
    t.entry("remainTransientStoreBufferNumbs".into())
        .or_insert_with(|| {
            broker
                .store
                .remain_transient_store_buffer_numbs()
                .to_string()
        });
    for (k, v) in broker.counters.snapshot() {
        t.insert(k, v.to_string());
    }
    t.extend(broker.consumer_runtime_info());
    t.extend(broker.ha.runtime_info(broker.store.commit_log_max_offset()));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_is_formatted_like_rocketmq() {
        assert_eq!(
            format_runtime(((86_400 + 3600 + 120 + 3) * 1000) as u128),
            "[ 1 days, 1 hours, 2 minutes, 3 seconds ]"
        );
    }
}
