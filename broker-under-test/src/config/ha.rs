//! The typed replication settings, read from the key table's values (`keys/ha.rs`), and the
//! per-profile rules that depend on them: which port to bind, whether and how a put waits for
//! the slave (HA reference §1.2, §3.1–§3.4, §8).

use std::{collections::BTreeMap, time::Duration};

use super::{error::ConfigError, role::BrokerRole};
use crate::{
    keys::{Reader, VersionProfile},
    store::FlushThenReplica,
};

/// A `haMasterAddress` shorter than this is ignored (BrokerController: `length() >= 6`).
const MIN_MASTER_ADDRESS_LEN: usize = 6;

/// The replication settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaConfig {
    pub profile: VersionProfile,
    pub role: BrokerRole,
    /// `brokerId`: 0 for a master (forced), > 0 for a slave.
    pub broker_id: i64,
    /// `haListenPort` as configured; see [`HaConfig::ha_port`].
    pub ha_listen_port: u16,
    /// `haMasterAddress` when usable (at least 6 characters).
    pub master_address: Option<String>,
    /// `haSendHeartbeatInterval`. Default: 5000 ms.
    pub heartbeat_interval: Duration,
    /// `haHousekeepingInterval`. Default: 20000 ms.
    pub housekeeping_interval: Duration,
    /// `haTransferBatchSize`. Default: 32768.
    pub transfer_batch_size: usize,
    /// `haSlaveFallbehindMax`. Default: 256 MiB.
    pub slave_fallbehind_max: i64,
    /// `haMaxGapNotInSync` (5.3, GET_BROKER_HA_STATUS). Default: 256 MiB.
    pub max_gap_not_in_sync: i64,
    /// `syncFlushTimeout`: 4.3's replica wait. Default: 5000 ms.
    pub sync_flush_timeout: Duration,
    /// `slaveTimeout`: 4.9 and 5.3's replica wait. Default: 3000 ms.
    pub slave_timeout: Duration,
    /// `inSyncReplicas` (5.3). Default: 1.
    pub in_sync_replicas: u32,
    /// `slaveReadEnable`. Default: false.
    pub slave_read_enable: bool,
}

/// How a SYNC_MASTER's put waits for its slave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Past this the answer is FLUSH_SLAVE_TIMEOUT.
    pub timeout: Duration,
    /// 4.x `isSlaveOK`: without a connection, or with the fastest slave at least
    /// `haSlaveFallbehindMax` behind, answer SLAVE_NOT_AVAILABLE at once.
    pub slave_not_available: bool,
    /// Acknowledgements needed, the master's own included (5.3 `needAckNums`; 4.x: 2 with the
    /// master-wide maximum of every slave's report standing for the slaves).
    pub acks: u32,
    pub ordering: FlushThenReplica,
    /// How GroupTransferService waits for the acknowledgement.
    pub steps: WaitSteps,
}

/// GroupTransferService's wait loop per version (audit #5, fidelity-after-wave-3): the
/// requests of one swap are taken in order, each waiting on `notifyTransferObject`, which a
/// slave report wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitSteps {
    /// 5.3.3 GroupTransferService.doWaitTransfer l.81-89: 1-ms waits, so a request ends at
    /// its deadline.
    AtDeadline,
    /// 4.9.8 HAService.GroupTransferService.doWaitTransfer l.286-301: 1-s waits while the
    /// deadline has not passed, so with a silent slave FLUSH_SLAVE_TIMEOUT comes at the first
    /// whole second after the deadline, counted from when the request's turn came.
    OneSecondWaits,
    /// 4.3.2 l.278-298: at most five waits of up to 1 s each (a report ends one early), no
    /// deadline; the send thread's latch (`syncFlushTimeout`) answers its client
    /// FLUSH_SLAVE_TIMEOUT at the deadline if the service is not done by then.
    FiveWaits,
}

impl HaConfig {
    /// Reads the keys; fails like BrokerStartup on a SLAVE without an id > 0, forces a
    /// master's id to 0.
    pub fn from_effective(
        profile: VersionProfile,
        role: BrokerRole,
        map: &BTreeMap<String, String>,
    ) -> Result<Self, ConfigError> {
        let r = Reader { map };
        let mut broker_id: i64 = r.get("brokerId")?;
        match role {
            BrokerRole::Slave if broker_id <= 0 => {
                return Err(ConfigError::Contradiction(
                    "Slave's brokerId must be > 0".into(),
                ))
            }
            BrokerRole::Slave => {}
            BrokerRole::AsyncMaster | BrokerRole::SyncMaster => broker_id = 0,
        }
        let master_address = Some(r.raw("haMasterAddress").trim().to_owned())
            .filter(|a| a.len() >= MIN_MASTER_ADDRESS_LEN);
        Ok(HaConfig {
            profile,
            role,
            broker_id,
            ha_listen_port: r.get("haListenPort")?,
            master_address,
            heartbeat_interval: r.millis("haSendHeartbeatInterval")?,
            housekeeping_interval: r.millis("haHousekeepingInterval")?,
            transfer_batch_size: r.get("haTransferBatchSize")?,
            slave_fallbehind_max: r.get("haSlaveFallbehindMax")?,
            max_gap_not_in_sync: r.get("haMaxGapNotInSync")?,
            sync_flush_timeout: r.millis("syncFlushTimeout")?,
            slave_timeout: r.millis("slaveTimeout")?,
            in_sync_replicas: r.get("inSyncReplicas")?,
            slave_read_enable: r.bool("slaveReadEnable")?,
        })
    }

    /// The HA port for a broker listening on `listen_port` (the configured one, 0 = ephemeral):
    /// 4.x ignores `haListenPort` (always listenPort + 1), 5.1.1+ honours a value > 0. With an
    /// ephemeral listen port (tests) the configured value is used, 0 being ephemeral too.
    pub fn ha_port(&self, configured_listen_port: u16, bound_listen_port: u16) -> u16 {
        if configured_listen_port == 0 {
            return self.ha_listen_port;
        }
        if !self.profile.is_4x() && self.ha_listen_port > 0 {
            return self.ha_listen_port;
        }
        bound_listen_port.wrapping_add(1)
    }

    /// Whether [`Self::ha_port`] is listenPort + 1 rather than a port the configuration named.
    pub fn ha_port_is_derived(&self, configured_listen_port: u16) -> bool {
        configured_listen_port != 0 && (self.profile.is_4x() || self.ha_listen_port == 0)
    }

    /// How a put waits for the slave, or `None` when it does not (HA reference §3.2).
    pub fn wait_policy(&self) -> Option<WaitPolicy> {
        if self.role != BrokerRole::SyncMaster {
            return None;
        }
        match self.profile {
            VersionProfile::V4_3 => Some(WaitPolicy {
                timeout: self.sync_flush_timeout,
                slave_not_available: true,
                acks: 2,
                ordering: FlushThenReplica::Sequential,
                steps: WaitSteps::FiveWaits,
            }),
            VersionProfile::V4_9 => Some(WaitPolicy {
                timeout: self.slave_timeout,
                slave_not_available: true,
                acks: 2,
                ordering: FlushThenReplica::Parallel,
                steps: WaitSteps::OneSecondWaits,
            }),
            // 5.x: handleHA returns PUT_OK at once unless needAckNums (inSyncReplicas) ≥ 2.
            VersionProfile::V5_3 if self.in_sync_replicas >= 2 => Some(WaitPolicy {
                timeout: self.slave_timeout,
                slave_not_available: false,
                acks: self.in_sync_replicas,
                ordering: FlushThenReplica::Parallel,
                steps: WaitSteps::AtDeadline,
            }),
            VersionProfile::V5_3 => None,
        }
    }

    /// Settings that are legal but do nothing here: one warning each.
    pub fn sanitize(&self, listen_port: u16) -> Vec<String> {
        let mut w = Vec::new();
        if self.profile.is_4x() && self.ha_listen_port > 0 && listen_port != 0 {
            w.push(format!(
                "haListenPort={} is ignored by brokerVersionProfile={}: the HA port is listenPort + 1",
                self.ha_listen_port, self.profile
            ));
        }
        if self.role == BrokerRole::SyncMaster
            && self.profile == VersionProfile::V5_3
            && self.in_sync_replicas < 2
        {
            w.push(
                "brokerRole=SYNC_MASTER with inSyncReplicas=1: 5.3 answers puts without waiting \
                 for a slave (set inSyncReplicas=2 for 4.x's behaviour)"
                    .into(),
            );
        }
        if self.role != BrokerRole::Slave && self.master_address.is_some() {
            w.push("haMasterAddress is only used by a SLAVE".into());
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys;

    fn ha(profile: VersionProfile, role: BrokerRole, set: &[(&str, &str)]) -> HaConfig {
        let mut m = keys::defaults(profile, None);
        for (k, v) in set {
            m.insert((*k).into(), (*v).into());
        }
        HaConfig::from_effective(profile, role, &m).expect("valid")
    }

    #[test]
    fn defaults_are_rocketmqs() {
        let c = ha(VersionProfile::V4_9, BrokerRole::AsyncMaster, &[]);
        assert_eq!(c.broker_id, 0);
        assert_eq!(c.heartbeat_interval, Duration::from_millis(5000));
        assert_eq!(c.housekeeping_interval, Duration::from_millis(20000));
        assert_eq!(c.transfer_batch_size, 32 * 1024);
        assert_eq!(c.slave_fallbehind_max, 256 << 20);
        assert_eq!(c.master_address, None);
        assert!(!c.slave_read_enable);
        assert_eq!(c.wait_policy(), None);
    }

    #[test]
    fn a_slave_needs_an_id_and_a_master_is_forced_to_zero() {
        let mut m = keys::defaults(VersionProfile::V5_3, None);
        let e = HaConfig::from_effective(VersionProfile::V5_3, BrokerRole::Slave, &m);
        assert!(format!("{}", e.unwrap_err()).contains("Slave's brokerId must be > 0"));
        m.insert("brokerId".into(), "3".into());
        let c = HaConfig::from_effective(VersionProfile::V5_3, BrokerRole::SyncMaster, &m);
        assert_eq!(c.unwrap().broker_id, 0);
    }

    #[test]
    fn short_master_addresses_are_ignored() {
        let c = ha(
            VersionProfile::V4_3,
            BrokerRole::Slave,
            &[("brokerId", "1"), ("haMasterAddress", "a:1")],
        );
        assert_eq!(c.master_address, None);
    }

    #[test]
    fn ha_port_follows_the_profile() {
        let c = ha(
            VersionProfile::V4_3,
            BrokerRole::AsyncMaster,
            &[("haListenPort", "7000")],
        );
        assert_eq!(c.ha_port(10911, 10911), 10912);
        assert_eq!(c.ha_port(0, 40000), 7000);
        assert!(c.ha_port_is_derived(10911) && !c.ha_port_is_derived(0));
        let c = ha(
            VersionProfile::V5_3,
            BrokerRole::AsyncMaster,
            &[("haListenPort", "7000")],
        );
        assert_eq!(c.ha_port(10911, 10911), 7000);
        assert!(!c.ha_port_is_derived(10911), "named by haListenPort");
        let c = ha(VersionProfile::V5_3, BrokerRole::AsyncMaster, &[]);
        assert_eq!(c.ha_port(10911, 10911), 10912);
        assert_eq!(c.ha_port(0, 40000), 0);
        assert!(c.ha_port_is_derived(10911));
    }

    #[test]
    fn the_wait_follows_the_profile() {
        let p43 = ha(VersionProfile::V4_3, BrokerRole::SyncMaster, &[])
            .wait_policy()
            .unwrap();
        assert_eq!(p43.timeout, Duration::from_millis(5000));
        assert!(p43.slave_not_available);
        assert_eq!(p43.ordering, FlushThenReplica::Sequential);
        let p49 = ha(VersionProfile::V4_9, BrokerRole::SyncMaster, &[])
            .wait_policy()
            .unwrap();
        assert_eq!(p49.timeout, Duration::from_millis(3000));
        assert_eq!(p49.ordering, FlushThenReplica::Parallel);
        assert_eq!(
            ha(VersionProfile::V5_3, BrokerRole::SyncMaster, &[]).wait_policy(),
            None
        );
        let p53 = ha(
            VersionProfile::V5_3,
            BrokerRole::SyncMaster,
            &[("inSyncReplicas", "2")],
        )
        .wait_policy()
        .unwrap();
        assert!(!p53.slave_not_available);
        assert_eq!(p53.acks, 2);
        assert_eq!(
            ha(VersionProfile::V4_9, BrokerRole::AsyncMaster, &[]).wait_policy(),
            None
        );
    }
}
