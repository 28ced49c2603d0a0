//! `namesrvAddr`'s syntax, a leaf: the registrar's settings read it, and the config's
//! validation rejects a malformed one at load time without knowing the registrar.

/// The name servers of a non-empty `namesrvAddr` (split on `;`); `Err` carries RocketMQ's own
/// message for a malformed one (4.9.8 BrokerStartup.createBrokerController, which reads each
/// part with RemotingUtil.string2SocketAddress).
pub fn name_servers(raw: &str) -> Result<Vec<String>, String> {
    let name_servers: Vec<String> = raw
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    for ns in &name_servers {
        let ok = ns
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !ok {
            return Err(format!(
                "The Name Server Address[{raw}] illegal, please set it as follows, \
                 \"127.0.0.1:9876;192.168.0.1:9876\""
            ));
        }
    }
    Ok(name_servers)
}
