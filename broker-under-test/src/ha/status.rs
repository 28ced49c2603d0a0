//! GET_BROKER_HA_STATUS (907, 5.0.0+; HA reference §7.1): `HARuntimeInfo` as JSON, as
//! DefaultHAService.getRuntimeInfo fills it. A master lists its connections (`diff` = its
//! CommitLog end − the slave's ack, in sync while `diff < haMaxGapNotInSync`); a slave describes
//! its HA client. `transferredByteInSecond` is not measured here and is left out (readers take
//! an absent field as 0).

use serde::Serialize;

use super::state::HaState;
use crate::config::HaConfig;

#[derive(Debug, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct HaRuntimeInfo {
    pub master: bool,
    pub master_commit_log_max_offset: i64,
    pub in_sync_slave_nums: i32,
    pub ha_connection_info: Vec<ConnectionInfo>,
    pub ha_client_runtime_info: ClientInfo,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionInfo {
    pub addr: String,
    pub slave_ack_offset: i64,
    pub diff: i64,
    pub in_sync: bool,
    pub transfer_from_where: i64,
}

#[derive(Debug, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master_addr: Option<String>,
    pub max_offset: i64,
    pub last_read_timestamp: i64,
    pub last_write_timestamp: i64,
    /// Set only in controller mode: 0 under the classic service.
    pub master_flush_offset: i64,
}

/// The answer's body for this broker; `max_offset` is its CommitLog's end.
pub fn runtime_info(state: &HaState, config: &HaConfig, max_offset: i64) -> HaRuntimeInfo {
    use std::sync::atomic::Ordering;
    if config.role == crate::config::BrokerRole::Slave {
        return HaRuntimeInfo {
            master: false,
            ha_client_runtime_info: ClientInfo {
                master_addr: state.master_address(),
                max_offset,
                last_read_timestamp: state.client_last_read.load(Ordering::Acquire),
                last_write_timestamp: state.client_last_write.load(Ordering::Acquire),
                master_flush_offset: 0,
            },
            ..Default::default()
        };
    }
    let connections: Vec<ConnectionInfo> = state
        .connections()
        .into_iter()
        .map(|c| {
            let diff = max_offset - c.ack;
            ConnectionInfo {
                addr: c.peer.to_string(),
                slave_ack_offset: c.ack,
                diff,
                in_sync: diff < config.max_gap_not_in_sync,
                transfer_from_where: c.transfer_from,
            }
        })
        .collect();
    HaRuntimeInfo {
        master: true,
        master_commit_log_max_offset: max_offset,
        in_sync_slave_nums: connections.iter().filter(|c| c.in_sync).count() as i32,
        ha_connection_info: connections,
        ha_client_runtime_info: ClientInfo::default(),
    }
}
