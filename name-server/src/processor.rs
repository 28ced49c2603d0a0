//! Request code → handler (name-server reference §2–§6). Every answer is computed under the
//! route lock without I/O, so the connection task answers inline.

use std::time::{Duration, Instant};

use remoting::{
    headers::{
        GetRouteInfoRequestHeader, RegisterBrokerRequestHeader, RegisterBrokerResponseHeader,
        UnregisterBrokerRequestHeader,
    },
    route::{RegisterBrokerBody, TopicConfigWrapper},
    RemotingCommand, RequestCode, ResponseCode,
};
use tokio_util::sync::CancellationToken;

pub use remoting::route::body_crc32;

use crate::{
    compressed,
    routes::{Registration, RouteInfo},
};

/// The oldest `version` (V3_0_11) whose registration body is a `RegisterBrokerBody`.
const V3_0_11: i32 = 37;
/// V4_9_4: from here on routes are answered in standard JSON.
const V4_9_4: i32 = 401;

/// 5.3's FAQ link, appended to TOPIC_NOT_EXIST.
const FAQ: &str = "https://rocketmq.apache.org/docs/bestPractice/06FAQ";

/// The connection a request came on.
pub struct Channel {
    pub id: u64,
    pub close: CancellationToken,
}

/// Answers one request; `None` for a oneway request.
pub fn process(
    routes: &RouteInfo,
    cmd: &RemotingCommand,
    channel: &Channel,
) -> Option<RemotingCommand> {
    let answer = match RequestCode::from_i32(cmd.code) {
        Some(RequestCode::REGISTER_BROKER) => register(routes, cmd, channel),
        Some(RequestCode::UNREGISTER_BROKER) => unregister(routes, cmd),
        Some(RequestCode::GET_ROUTEINFO_BY_TOPIC) => route(routes, cmd),
        Some(RequestCode::GET_BROKER_CLUSTER_INFO) => {
            let body = routes.cluster_info().encode(false);
            RemotingCommand::response_to(cmd, ResponseCode::SUCCESS, None).with_body(body)
        }
        _ => RemotingCommand::response_to(
            cmd,
            ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
            Some(format!(" request type {} not supported", cmd.code)),
        ),
    };
    (!cmd.is_oneway()).then_some(answer)
}

fn error(cmd: &RemotingCommand, remark: String) -> RemotingCommand {
    RemotingCommand::response_to(cmd, ResponseCode::SYSTEM_ERROR, Some(remark))
}

fn register(routes: &RouteInfo, cmd: &RemotingCommand, channel: &Channel) -> RemotingCommand {
    let h: RegisterBrokerRequestHeader = match cmd.header() {
        Ok(h) => h,
        Err(e) => return error(cmd, format!("REGISTER_BROKER: {e}")),
    };
    let crc = h.body_crc32.unwrap_or(0);
    if crc != 0 && crc != body_crc32(&cmd.body) {
        return error(cmd, "crc32 not match".into());
    }
    let topics: Option<TopicConfigWrapper> = if cmd.body.is_empty() {
        None
    } else if h.compressed == Some(true) {
        match compressed::decode(&cmd.body) {
            Ok(w) => Some(w),
            Err(e) => return error(cmd, e.to_string()),
        }
    } else if cmd.version >= V3_0_11 {
        match RegisterBrokerBody::decode(&cmd.body) {
            Ok(b) => Some(b.topic_config_serialize_wrapper),
            Err(e) => return error(cmd, e.to_string()),
        }
    } else {
        match remoting::route::decode_json(&cmd.body, "TopicConfigSerializeWrapper") {
            Ok(w) => Some(w),
            Err(e) => return error(cmd, e.to_string()),
        }
    };
    let reg = Registration {
        cluster_name: h.cluster_name,
        broker_name: h.broker_name,
        broker_addr: h.broker_addr,
        broker_id: h.broker_id,
        ha_server_addr: h.ha_server_addr,
        heartbeat_timeout: h
            .heartbeat_timeout_millis
            .filter(|ms| *ms > 0)
            .map(|ms| Duration::from_millis(ms as u64)),
        enable_acting_master: h.enable_acting_master,
        channel: channel.id,
        close: channel.close.clone(),
    };
    match routes.register(reg, topics.as_ref(), Instant::now()) {
        Ok(r) => RemotingCommand::response_to(cmd, ResponseCode::SUCCESS, None).with_header(
            &RegisterBrokerResponseHeader {
                ha_server_addr: r.ha_server_addr,
                master_addr: r.master_addr,
            },
        ),
        Err(e) => error(cmd, e.to_string()),
    }
}

fn unregister(routes: &RouteInfo, cmd: &RemotingCommand) -> RemotingCommand {
    match cmd.header::<UnregisterBrokerRequestHeader>() {
        Ok(h) => {
            routes.unregister(&h.cluster_name, &h.broker_name, &h.broker_addr);
            routes.log.line(format_args!(
                "broker {} ({}) unregistered",
                h.broker_name, h.broker_addr
            ));
            RemotingCommand::response_to(cmd, ResponseCode::SUCCESS, None)
        }
        Err(e) => error(cmd, format!("UNREGISTER_BROKER: {e}")),
    }
}

fn route(routes: &RouteInfo, cmd: &RemotingCommand) -> RemotingCommand {
    let h: GetRouteInfoRequestHeader = match cmd.header() {
        Ok(h) => h,
        Err(e) => return error(cmd, format!("GET_ROUTEINFO_BY_TOPIC: {e}")),
    };
    match routes.route(&h.topic) {
        Some(r) => {
            let quoted = cmd.version >= V4_9_4 || h.accept_standard_json_only == Some(true);
            RemotingCommand::response_to(cmd, ResponseCode::SUCCESS, None)
                .with_body(r.encode(quoted))
        }
        None => RemotingCommand::response_to(
            cmd,
            ResponseCode::TOPIC_NOT_EXIST,
            Some(format!(
                "No topic route info in name server for the topic: {}\nSee {FAQ} for further details.",
                h.topic
            )),
        ),
    }
}
