//! Reads from slaves (HA reference §4.1, §4.2): the store's `suggestPullingFromSlave` and the
//! pull answer's `suggestWhichBrokerId`.

use crate::{config::BrokerRole, consumer::SubscriptionGroupConfig, keys::VersionProfile};

/// StoreUtil's fallback when the total memory cannot be read (24 GiB).
const FALLBACK_MEMORY: i64 = 24 << 30;

/// StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE.
pub fn total_physical_memory() -> i64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && size > 0 {
        // c_long is i32 on 32-bit targets.
        #[allow(clippy::unnecessary_cast)]
        let total = pages as i64 * size as i64;
        total
    } else {
        FALLBACK_MEMORY
    }
}

/// `accessMessageInMemoryMaxRatio` as the broker applies it: BrokerStartup takes 10 off on a
/// SLAVE, effective from 5.1.0 (4.x does it before reading the role: dead code).
pub fn effective_memory_ratio(configured: u64, profile: VersionProfile, role: BrokerRole) -> u64 {
    if profile == VersionProfile::V5_3 && role == BrokerRole::Slave {
        configured.saturating_sub(10)
    } else {
        configured
    }
}

/// `suggestPullingFromSlave`: the consumer reads data more than `ratio` % of the memory behind
/// the CommitLog's end (probably no longer in the page cache).
pub fn suggest_pulling_from_slave(
    max_offset: i64,
    read_offset: i64,
    memory: i64,
    ratio: u64,
) -> bool {
    max_offset - read_offset > memory / 100 * ratio as i64
}

/// The CommitLog offset of the last record in a pull body (each record: 4-byte total size,
/// physical offset at bytes 28..36), `None` for an empty or short body.
pub fn last_physical_offset(body: &[u8]) -> Option<i64> {
    let mut at = 0usize;
    let mut last = None;
    while let Some(size) = body.get(at..at + 4) {
        let size = i32::from_be_bytes(size.try_into().ok()?);
        let phy = body.get(at + 28..at + 36)?;
        last = Some(i64::from_be_bytes(phy.try_into().ok()?));
        if size <= 0 {
            break;
        }
        at += size as usize;
    }
    last
}

/// PullMessageProcessor: with `slaveReadEnable`, the group's `whichBrokerWhenConsumeSlowly` (1)
/// when the store suggested a slave, else the group's `brokerId` (0); without it, 0.
pub fn suggest_which_broker_id(
    slave_read_enable: bool,
    from_slave: bool,
    group: &SubscriptionGroupConfig,
) -> i64 {
    match (slave_read_enable, from_slave) {
        (false, _) => 0,
        (true, true) => group.which_broker_when_consume_slowly,
        (true, false) => group.broker_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suggestion_needs_slave_read_and_a_slow_consumer() {
        let g = SubscriptionGroupConfig::default();
        assert_eq!(suggest_which_broker_id(false, true, &g), 0);
        assert_eq!(suggest_which_broker_id(true, false, &g), 0);
        assert_eq!(suggest_which_broker_id(true, true, &g), 1);
        // 40 % of 64 GiB is 25.6 GiB.
        let mem = 64i64 << 30;
        assert!(!suggest_pulling_from_slave(26 << 30, 1 << 30, mem, 40));
        assert!(suggest_pulling_from_slave(28 << 30, 1 << 30, mem, 40));
        assert_eq!(
            effective_memory_ratio(40, VersionProfile::V5_3, BrokerRole::Slave),
            30
        );
        assert_eq!(
            effective_memory_ratio(40, VersionProfile::V4_9, BrokerRole::Slave),
            40
        );
        assert!(total_physical_memory() > 0);
    }

    #[test]
    fn the_last_record_offset_is_read_from_the_body() {
        let mut body = Vec::new();
        for (size, phy) in [(40i32, 100i64), (40, 140)] {
            let mut r = vec![0u8; size as usize];
            r[..4].copy_from_slice(&size.to_be_bytes());
            r[28..36].copy_from_slice(&phy.to_be_bytes());
            body.extend(r);
        }
        assert_eq!(last_physical_offset(&body), Some(140));
        assert_eq!(last_physical_offset(&[]), None);
    }
}
