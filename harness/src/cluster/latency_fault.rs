//! The Java producer's latency fault tolerance (`MQFaultStrategy`, `LatencyFaultToleranceImpl`;
//! send-path reference §11, name-server reference §10): a broker that answered slowly, with an
//! error or not at all is "not available" for a duration looked up from the latency.

use std::time::{Duration, Instant};

/// Which client's tables and update rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultVersion {
    /// 4.x: isolation counts as 30000 ms of latency; every update overwrites the item.
    V4,
    /// 5.x (5.1.4+): isolation counts as 10000 ms; an update only moves availability later.
    V5,
}

impl FaultVersion {
    /// `latencyMax` (ms) and `notAvailableDuration` (ms).
    fn tables(self) -> (&'static [u64; 7], &'static [u64; 7]) {
        match self {
            FaultVersion::V4 => (
                &[50, 100, 550, 1000, 2000, 3000, 15000],
                &[0, 0, 30000, 60000, 120000, 180000, 600000],
            ),
            FaultVersion::V5 => (
                &[50, 100, 550, 1800, 3000, 5000, 15000],
                &[0, 0, 2000, 5000, 6000, 10000, 30000],
            ),
        }
    }

    fn isolation_latency(self) -> u64 {
        match self {
            FaultVersion::V4 => 30_000,
            FaultVersion::V5 => 10_000,
        }
    }

    /// `computeNotAvailableDuration`: the duration of the largest `latencyMax` the latency
    /// reaches, else 0.
    pub fn not_available(self, latency_ms: u64) -> Duration {
        let (max, duration) = self.tables();
        let ms = max
            .iter()
            .zip(duration)
            .rev()
            .find(|(m, _)| latency_ms >= **m)
            .map_or(0, |(_, d)| *d);
        Duration::from_millis(ms)
    }
}

/// One broker's `FaultItem`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultItem {
    pub current_latency_ms: u64,
    /// Available again from this instant.
    pub start: Instant,
    /// 5.x: false after a broker error answer, true after a transport failure or success.
    pub reachable: bool,
}

impl FaultItem {
    pub fn available(&self, now: Instant) -> bool {
        now >= self.start
    }
}

/// `updateFaultItem(broker, latency, isolation[, reachable])` on `slot`.
pub fn update(
    version: FaultVersion,
    slot: &mut Option<FaultItem>,
    latency_ms: u64,
    isolation: bool,
    reachable: bool,
    now: Instant,
) {
    let effective = if isolation {
        version.isolation_latency()
    } else {
        latency_ms
    };
    let duration = version.not_available(effective);
    match version {
        FaultVersion::V4 => {
            *slot = Some(FaultItem {
                current_latency_ms: latency_ms,
                start: now + duration,
                reachable: true,
            });
        }
        FaultVersion::V5 => {
            let item = slot.get_or_insert(FaultItem {
                current_latency_ms: latency_ms,
                start: now,
                reachable,
            });
            item.current_latency_ms = latency_ms;
            item.reachable = reachable;
            if !duration.is_zero() && now + duration > item.start {
                item.start = now + duration;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_the_clients_tables() {
        let v4 = FaultVersion::V4;
        let v5 = FaultVersion::V5;
        assert_eq!(v4.not_available(10), Duration::ZERO);
        assert_eq!(v4.not_available(549), Duration::ZERO);
        assert_eq!(v4.not_available(800), Duration::from_secs(30));
        assert_eq!(v5.not_available(800), Duration::from_secs(2));
        assert_eq!(v5.not_available(2000), Duration::from_secs(5));
        assert_eq!(v4.not_available(30_000), Duration::from_secs(600));
        assert_eq!(v5.not_available(10_000), Duration::from_secs(10));
    }

    #[test]
    fn v4_overwrites_and_v5_only_extends() {
        let now = Instant::now();
        let mut s4 = None;
        update(FaultVersion::V4, &mut s4, 5, true, false, now);
        assert!(!s4.unwrap().available(now + Duration::from_secs(599)));
        // A fast success clears a 4.x isolation at once.
        update(FaultVersion::V4, &mut s4, 5, false, true, now);
        assert!(s4.unwrap().available(now));
        let mut s5 = None;
        update(FaultVersion::V5, &mut s5, 5, true, false, now);
        assert!(!s5.unwrap().reachable);
        update(FaultVersion::V5, &mut s5, 5, false, true, now);
        let item = s5.unwrap();
        assert!(!item.available(now + Duration::from_secs(9)));
        assert!(item.available(now + Duration::from_secs(10)));
        assert!(item.reachable);
    }
}
