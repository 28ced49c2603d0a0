//! SlaveSynchronize (audit #6, fidelity-after-wave-3): a slave copies its master's topic
//! config, consumer offsets, delay offsets and subscription groups, so that consumers that
//! move to it after the master dies resume from offsets at most one period old rather than
//! from the start of their queues.
//!
//! Where it asks: the master's broker address from the latest name-server registration answer
//! (`masterAddr`, `ha::state`); without a name server there is none, and nothing is copied,
//! as in RocketMQ. What it does with each answer (4.9.8 SlaveSynchronize.syncAll l.48-53):
//! topics and subscription groups replace the slave's whole when the master's DataVersion
//! differs; consumer offsets are laid over the slave's (`putAll`); the delay offsets are
//! written as the slave's delayOffset.json. Each is written to the slave's config files.
//!
//! When, per version: 4.3.2 BrokerController.initialize l.404-414, first after 10 s, then
//! every 60 s; 4.9.8 handleSlaveSynchronize l.1122-1138, first after 3 s, then every 10 s;
//! 5.3.3 l.717-742, a task first after 10 s, then every 3 s, that syncs when more than 60 s
//! passed since its last sync (so at 10 s, then every 63 s).

use std::sync::Arc;
use std::time::{Duration, Instant};

use remoting::{RemotingCommand, RequestCode};

use crate::broker::Broker;
use crate::keys::VersionProfile;
use crate::namesrv::client::NamesrvClient;
use crate::periodic::Periodic;

/// `BrokerOuterAPI`'s calls to the master: 3 s each.
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// The thread's first run and period, and the least time between two syncs.
pub fn schedule(profile: VersionProfile) -> (Duration, Duration, Duration) {
    match profile {
        VersionProfile::V4_3 => (secs(10), secs(60), Duration::ZERO),
        VersionProfile::V4_9 => (secs(3), secs(10), Duration::ZERO),
        // `System.currentTimeMillis() - lastSyncTimeMs > 60 * 1000`.
        VersionProfile::V5_3 => (secs(10), secs(3), Duration::from_millis(60_001)),
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Starts the slave's SlaveSynchronize thread.
pub fn start(broker: Arc<Broker>) -> std::io::Result<Periodic> {
    let (first, period, spacing) = schedule(broker.config.profile);
    let mut last: Option<Instant> = None;
    let mut client: Option<NamesrvClient> = None;
    Periodic::start("SlaveSynchronize", first, period, move || {
        if last.is_some_and(|t| t.elapsed() < spacing) {
            return;
        }
        let Some(master) = broker.ha.master_broker_address() else {
            return;
        };
        if client.as_ref().is_none_or(|c| c.addr != master) {
            client = Some(NamesrvClient::new(master));
        }
        if let Some(c) = client.as_mut() {
            sync_all(&broker, c);
            last = Some(Instant::now());
        }
    })
}

/// One syncAll: the four copies in RocketMQ's order; a failed one is logged and skipped.
pub fn sync_all(broker: &Broker, master: &mut NamesrvClient) {
    let mut ask = |code: RequestCode| -> Result<String, String> {
        let r = master
            .call(RemotingCommand::request(code, 0), CALL_TIMEOUT)
            .map_err(|e| e.to_string())?;
        if r.code != 0 {
            return Err(format!("code {} {}", r.code, r.remark.unwrap_or_default()));
        }
        String::from_utf8(r.body.to_vec()).map_err(|e| e.to_string())
    };
    let topics = ask(RequestCode::GET_ALL_TOPIC_CONFIG)
        .and_then(|b| broker.topics.replace_from_master(&b).map(|_| ()));
    let offsets = ask(RequestCode::GET_ALL_CONSUMER_OFFSET)
        .and_then(|b| broker.offsets.merge_from_master(&b).map(|_| ()));
    let delay = ask(RequestCode::GET_ALL_DELAY_OFFSET).and_then(|b| {
        broker
            .schedule
            .write_from_master(&b)
            .map_err(|e| e.to_string())
    });
    let groups = ask(RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        .and_then(|b| broker.groups.replace_from_master(&b).map(|_| ()));
    for (what, r) in [
        ("topic config", topics),
        ("consumer offset", offsets),
        ("delay offset", delay),
        ("subscription group config", groups),
    ] {
        if let Err(e) = r {
            eprintln!("SyncSlave: sync {what} from {} failed: {e}", master.addr);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_version_syncs_on_its_own_schedule() {
        assert_eq!(schedule(VersionProfile::V4_3).0, secs(10));
        assert_eq!(schedule(VersionProfile::V4_3).1, secs(60));
        assert_eq!(schedule(VersionProfile::V4_9).0, secs(3));
        assert_eq!(schedule(VersionProfile::V4_9).1, secs(10));
        let (first, tick, spacing) = schedule(VersionProfile::V5_3);
        // Ticks at 10, 13, 16, ... s; the second sync is the first tick more than 60 s after
        // the first: 73 s.
        let second = (1..)
            .map(|i| first + tick * i)
            .find(|t| *t - first >= spacing)
            .unwrap();
        assert_eq!(second, secs(73));
    }
}
