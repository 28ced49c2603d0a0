//! The registration settings, read from the broker's keys (name-server reference §8).

use std::{net::SocketAddr, time::Duration};

use super::addr::name_servers;
use crate::config::BrokerConfig;

/// Where and how often to register; `None` from [`Settings::from_config`] when `namesrvAddr`
/// is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `namesrvAddr`, split on `;`.
    pub name_servers: Vec<String>,
    /// `registerNameServerPeriod`.
    pub period: Duration,
    /// `registerBrokerTimeoutMills`: connect and answer budget of one call.
    pub timeout: Duration,
}

impl Settings {
    /// `Err` carries RocketMQ's own message for a malformed `namesrvAddr`.
    pub fn from_config(config: &BrokerConfig) -> Result<Option<Settings>, String> {
        let get = |k: &str| config.effective.get(k).map(String::as_str).unwrap_or("");
        let raw = get("namesrvAddr").trim();
        if raw.is_empty() {
            return Ok(None);
        }
        let name_servers = name_servers(raw)?;
        let ms = |k: &str| Duration::from_millis(get(k).parse().unwrap_or(30_000));
        Ok(Some(Settings {
            name_servers,
            period: ms("registerNameServerPeriod"),
            timeout: ms("registerBrokerTimeoutMills"),
        }))
    }
}

/// The address a name server is reached at (a host name is resolved on every connect).
pub fn resolve(ns: &str) -> std::io::Result<SocketAddr> {
    use std::net::ToSocketAddrs;
    ns.to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("{ns} resolves to no address")))
}
