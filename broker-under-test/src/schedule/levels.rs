//! `messageDelayLevel` (reference B4.1): space-separated tokens, each an integer followed by one
//! unit letter `s`, `m`, `h` or `d`; token i is level i + 1. Parsed as
//! `ScheduleMessageService.parseDelayLevel` does: the last character is the unit, the rest a
//! Java long, so `100ms` is refused (its number part `100m` is not a long), as RocketMQ refuses
//! it at start-up.

use std::time::Duration;

/// TopicValidator.RMQ_SYS_SCHEDULE_TOPIC.
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";

/// MessageStoreConfig.messageDelayLevel's default.
pub const DEFAULT_MESSAGE_DELAY_LEVEL: &str =
    "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";

/// The delay of each level, level 1 first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayLevels {
    millis: Vec<i64>,
}

impl Default for DelayLevels {
    fn default() -> Self {
        Self::parse(DEFAULT_MESSAGE_DELAY_LEVEL).expect("the default string parses")
    }
}

impl DelayLevels {
    /// Parses a `messageDelayLevel` value; `Err` says which token is wrong.
    pub fn parse(s: &str) -> Result<Self, String> {
        // Java's String.split drops trailing empty strings only.
        let mut tokens: Vec<&str> = s.split(' ').collect();
        while tokens.last() == Some(&"") {
            tokens.pop();
        }
        if tokens.is_empty() {
            return Err("no delay level".into());
        }
        let mut millis = Vec::with_capacity(tokens.len());
        for (i, t) in tokens.iter().enumerate() {
            let bad = || {
                format!(
                    "level {}: {t:?} is not a number followed by s, m, h or d",
                    i + 1
                )
            };
            let unit = match t.chars().last() {
                Some('s') => 1_000,
                Some('m') => 60_000,
                Some('h') => 3_600_000,
                Some('d') => 86_400_000,
                _ => return Err(bad()),
            };
            let num: i64 = t[..t.len() - 1].parse().map_err(|_| bad())?;
            millis.push(num.checked_mul(unit).ok_or_else(bad)?);
        }
        Ok(DelayLevels { millis })
    }

    /// `maxDelayLevel`: the number of levels.
    pub fn max_level(&self) -> i32 {
        self.millis.len() as i32
    }

    /// The delay of `level` in ms; `None` outside `1..=max_level`.
    pub fn delay_millis(&self, level: i32) -> Option<i64> {
        usize::try_from(level - 1)
            .ok()
            .and_then(|i| self.millis.get(i))
            .copied()
    }

    /// `computeDeliverTimestamp`: store time + the level's delay; an unknown level + 1000 ms.
    pub fn deliver_timestamp(&self, level: i32, store_timestamp: i64) -> i64 {
        store_timestamp + self.delay_millis(level).unwrap_or(1000)
    }

    /// The delay of `level` as a duration (negative delays count as none).
    pub fn delay(&self, level: i32) -> Option<Duration> {
        self.delay_millis(level)
            .map(|ms| Duration::from_millis(ms.max(0) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_string_has_rocketmq_s_18_levels() {
        let l = DelayLevels::default();
        assert_eq!(l.max_level(), 18);
        assert_eq!(l.delay_millis(1), Some(1_000));
        assert_eq!(l.delay_millis(3), Some(10_000));
        assert_eq!(l.delay_millis(18), Some(7_200_000));
        assert_eq!(l.delay_millis(0), None);
        assert_eq!(l.delay_millis(19), None);
        assert_eq!(l.deliver_timestamp(19, 5), 1_005);
        // B4.6: 16 retries from level 3 on add up to 17,140 s.
        let total: i64 = (3..=18).map(|lv| l.delay_millis(lv).unwrap()).sum();
        assert_eq!(total, 17_140_000);
    }

    #[test]
    fn tokens_parse_as_rocketmq_parses_them() {
        assert_eq!(
            DelayLevels::parse("1s 2d ").unwrap().delay_millis(2),
            Some(172_800_000)
        );
        assert!(DelayLevels::parse("100ms").is_err(), "RocketMQ refuses ms");
        assert!(DelayLevels::parse("1s  5s").is_err(), "an empty token");
        assert!(DelayLevels::parse("1x").is_err());
        assert!(DelayLevels::parse("").is_err());
        assert!(DelayLevels::parse("s").is_err());
    }
}
