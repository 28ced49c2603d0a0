//! The failure keys of `[consumer]` (retention-retry reference B6, B7): which deliveries the
//! listener fails, the retry limit, and the orderly suspend time, as the client reads them
//! (used by `consumer::failure`). Their range checks run with the other `[consumer]` checks.

use std::time::Duration;

use super::consumer::{ConsumeMode, Consumer};

/// The Java client's concurrent default for `maxReconsumeTimes = -1`.
pub const DEFAULT_MAX_RECONSUME_TIMES: i32 = 16;

impl Consumer {
    /// `getMaxReconsumeTimes()`: −1 → 16 concurrently, `Integer.MAX_VALUE` orderly.
    pub fn max_reconsume(&self) -> i32 {
        match (self.max_reconsume_times, self.mode) {
            (-1, ConsumeMode::Concurrently) => DEFAULT_MAX_RECONSUME_TIMES,
            (-1, ConsumeMode::Orderly) => i32::MAX,
            (m, _) => m,
        }
    }

    /// Whether any delivery can fail.
    pub fn fails(&self) -> bool {
        self.fail_ratio > 0.0 || self.fail_every > 0 || self.fail_until > 0
    }

    /// `suspendCurrentQueueTimeMillis`, clamped to [10 ms, 30 s] as the orderly service does.
    pub fn suspend_time(&self) -> Duration {
        self.suspend_current_queue_time
            .duration()
            .clamp(Duration::from_millis(10), Duration::from_secs(30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_java_defaults_and_the_checks() {
        let c = Consumer::default();
        assert_eq!(c.max_reconsume(), 16);
        assert!(!c.fails());
        assert_eq!(c.suspend_time(), Duration::from_secs(1));
        let orderly = Consumer {
            mode: ConsumeMode::Orderly,
            ..Consumer::default()
        };
        assert_eq!(orderly.max_reconsume(), i32::MAX);
        let t: toml::Table = toml::from_str("").unwrap();
        let e = super::super::consumer::consumer_with(&t, "fail_ratio", &toml::Value::Float(1.5))
            .unwrap_err()
            .to_string();
        assert!(e.contains("fail_ratio"), "{e}");
        let e = super::super::consumer::consumer_with(
            &t,
            "max_reconsume_times",
            &toml::Value::Integer(-2),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("max_reconsume_times"), "{e}");
        let short = Consumer {
            suspend_current_queue_time: super::super::secs::Secs(0.001),
            ..Consumer::default()
        };
        assert_eq!(short.suspend_time(), Duration::from_millis(10));
    }
}
