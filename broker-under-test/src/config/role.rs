//! `brokerRole`.

use std::str::FromStr;

/// `brokerRole`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerRole {
    AsyncMaster,
    SyncMaster,
    Slave,
}

impl FromStr for BrokerRole {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ASYNC_MASTER" => Ok(BrokerRole::AsyncMaster),
            "SYNC_MASTER" => Ok(BrokerRole::SyncMaster),
            "SLAVE" => Ok(BrokerRole::Slave),
            _ => Err("expected ASYNC_MASTER, SYNC_MASTER or SLAVE".into()),
        }
    }
}
