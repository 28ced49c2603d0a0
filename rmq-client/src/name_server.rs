//! What a client asks a name server (name-server reference §9): a topic's route
//! (GET_ROUTEINFO_BY_TOPIC, 105) and the cluster's brokers (GET_BROKER_CLUSTER_INFO, 106), over
//! one blocking connection per call.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use remoting::headers::GetRouteInfoRequestHeader;
use remoting::route::{ClusterInfo, TopicRouteData};
use remoting::{RemotingCommand, RequestCode, ResponseCode};

use crate::admin::{AdminConn, ClientError};

/// A name-server call that failed; each names the server.
#[derive(Debug, thiserror::Error)]
pub enum NameServerError {
    #[error("name server {namesrv}: {what}: {source}")]
    Call {
        namesrv: SocketAddr,
        what: String,
        source: ClientError,
    },
    #[error("name server {namesrv}: {what}: code {code}: {remark}")]
    Refused {
        namesrv: SocketAddr,
        what: String,
        code: i32,
        remark: String,
    },
    #[error("name server {namesrv}: {what}: bad body: {reason}")]
    Body {
        namesrv: SocketAddr,
        what: String,
        reason: String,
    },
    #[error("broker address {addr}: {reason}")]
    Address { addr: String, reason: String },
}

/// Calls to the name server wait this long (`mqClientApiTimeout`).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(3);

fn call(
    namesrv: SocketAddr,
    what: &str,
    cmd: RemotingCommand,
) -> Result<RemotingCommand, NameServerError> {
    let fail = |source| NameServerError::Call {
        namesrv,
        what: what.to_owned(),
        source,
    };
    let mut c = AdminConn::connect(namesrv, CALL_TIMEOUT).map_err(fail)?;
    c.call(cmd, CALL_TIMEOUT).map_err(fail)
}

/// GET_ROUTEINFO_BY_TOPIC; `Ok(None)` for TOPIC_NOT_EXIST.
pub fn fetch_route(
    namesrv: SocketAddr,
    topic: &str,
) -> Result<Option<TopicRouteData>, NameServerError> {
    let what = format!("route of {topic}");
    let answer = call(
        namesrv,
        &what,
        RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, 0).with_header(
            &GetRouteInfoRequestHeader {
                topic: topic.to_owned(),
                accept_standard_json_only: None,
            },
        ),
    )?;
    match answer.code {
        0 => TopicRouteData::decode(&answer.body)
            .map(Some)
            .map_err(|e| NameServerError::Body {
                namesrv,
                what,
                reason: e.to_string(),
            }),
        c if c == ResponseCode::TOPIC_NOT_EXIST as i32 => Ok(None),
        code => Err(NameServerError::Refused {
            namesrv,
            what,
            code,
            remark: answer.remark.unwrap_or_default(),
        }),
    }
}

/// GET_BROKER_CLUSTER_INFO: the cluster as the name server holds it.
pub fn cluster_info(namesrv: SocketAddr) -> Result<ClusterInfo, NameServerError> {
    let what = "cluster info".to_owned();
    let answer = call(
        namesrv,
        &what,
        RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO, 0),
    )?;
    if answer.code != 0 {
        return Err(NameServerError::Refused {
            namesrv,
            what,
            code: answer.code,
            remark: answer.remark.unwrap_or_default(),
        });
    }
    ClusterInfo::decode(&answer.body).map_err(|e| NameServerError::Body {
        namesrv,
        what,
        reason: e.to_string(),
    })
}

/// Every master's address (where a topic is created), by broker name.
pub fn master_addrs(namesrv: SocketAddr) -> Result<Vec<(String, SocketAddr)>, NameServerError> {
    cluster_info(namesrv)?
        .broker_addr_table
        .values()
        .filter_map(|b| {
            b.master_addr()
                .map(|a| (b.broker_name.clone(), a.to_owned()))
        })
        .map(|(name, a)| resolve(&a).map(|addr| (name, addr)))
        .collect()
}

/// A broker address as the name server writes it (`host:port`), resolved.
pub fn resolve(addr: &str) -> Result<SocketAddr, NameServerError> {
    let bad = |reason: String| NameServerError::Address {
        addr: addr.to_owned(),
        reason,
    };
    addr.to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("resolves to nothing".into()))
}
