//! Several generators on one schedule: `--shard I/N` and `--start-at`.
//!
//! Why every N-th send and not a rate of `rate/N` per shard: N independent schedules of
//! `rate/N` have their own start instants and rounding, so their union is not the arrival
//! process of the profile. Shard `I` takes the sends `I, I+N, I+2N, …` of the one schedule and
//! keeps their intended times, so the shards together send exactly the profile's sends, at
//! exactly its instants, provided they share the start instant; `--start-at` gives them that.
//!
//! Jobs after the first start in fixed slots from `--start-at`, computed from the profile
//! alone (every shard computes the same slots): a shard never waits for the others, so a
//! coordinator is never needed.

use std::fmt;
use std::time::{Duration, Instant, SystemTime};

/// Which share of the schedule this process sends: sends `index, index+count, …`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based, as Kubernetes' completion index.
    pub index: u32,
    pub count: u32,
}

/// `--shard` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("--shard {0}: expected I/N with 0 <= I < N, e.g. --shard 0/3 (indices are 0-based, like a Job's completion index)")]
    Syntax(String),
    #[error("--shard {index}/{count}: the index must be below the count (0..={max}); indices are 0-based, like a Job's completion index")]
    IndexTooLarge { index: u32, count: u32, max: u32 },
    #[error("--shard {0}: the count must be at least 1")]
    ZeroCount(String),
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

impl Shard {
    /// The whole schedule: what a run without `--shard` sends.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Parses `I/N`.
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let syntax = || ShardError::Syntax(text.to_owned());
        let (i, n) = text.trim().split_once('/').ok_or_else(syntax)?;
        let index: u32 = i.trim().parse().map_err(|_| syntax())?;
        let count: u32 = n.trim().parse().map_err(|_| syntax())?;
        if count == 0 {
            return Err(ShardError::ZeroCount(text.to_owned()));
        }
        if index >= count {
            return Err(ShardError::IndexTooLarge {
                index,
                count,
                max: count - 1,
            });
        }
        Ok(Shard { index, count })
    }

    pub fn is_whole(self) -> bool {
        self.count == 1
    }

    /// This shard's share of a rate: its target in `summary.csv` and `timeseries.csv`.
    pub fn share(self, rate: f64) -> f64 {
        rate / f64::from(self.count)
    }

    /// The sends of a phase of `total` sends that this shard writes.
    pub fn sends_of(self, total: u64) -> u64 {
        let (i, n) = (u64::from(self.index), u64::from(self.count));
        total.saturating_sub(i).div_ceil(n)
    }

    /// Producer group of this shard: each shard is its own producer, as separate machines
    /// running the Java client would be.
    pub fn producer_group(self, group: &str) -> String {
        if self.is_whole() {
            group.to_owned()
        } else {
            format!("{group}-shard{}of{}", self.index, self.count)
        }
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The shared start instant of a sharded run and how late a shard may be for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartAt {
    pub at: SystemTime,
    /// A shard more than this late refuses to start: its sends would not be on the shared
    /// timeline (the first `late × rate` of them would go out in a burst).
    pub skew: Duration,
}

/// `--start-at` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--start-at {text}: {reason}; write a UTC time like 2026-11-30T14:00:00Z")]
pub struct StartAtError {
    pub text: String,
    pub reason: String,
}

/// A shard reached its start instant too late.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("this shard is {late_ms} ms late for its start at {at} (allowed skew {skew_ms} ms): its sends would not be on the shared timeline; choose a later --start-at (every shard must get the same value), check the clocks (NTP), or allow more with --start-skew")]
pub struct Late {
    pub at: String,
    pub late_ms: u128,
    pub skew_ms: u128,
}

impl StartAt {
    /// Parses an RFC 3339 UTC time (`2026-11-30T14:00:00Z`).
    pub fn parse(text: &str, skew: Duration) -> Result<StartAt, StartAtError> {
        let at = humantime::parse_rfc3339_weak(text.trim()).map_err(|e| StartAtError {
            text: text.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(StartAt { at, skew })
    }

    /// The same start, `offset` later (the slot of a later job).
    pub fn plus(self, offset: Duration) -> StartAt {
        StartAt {
            at: self.at + offset,
            skew: self.skew,
        }
    }

    /// The start as an [`Instant`], or [`Late`] when it passed more than the skew ago.
    pub fn instant(&self) -> Result<Instant, Late> {
        let now_wall = SystemTime::now();
        let now = Instant::now();
        match self.at.duration_since(now_wall) {
            Ok(ahead) => Ok(now + ahead),
            Err(e) if e.duration() <= self.skew => Ok(now.checked_sub(e.duration()).unwrap_or(now)),
            Err(e) => Err(Late {
                at: humantime::format_rfc3339_millis(self.at).to_string(),
                late_ms: e.duration().as_millis(),
                skew_ms: self.skew.as_millis(),
            }),
        }
    }
}

/// Room between a job's schedule and the next job's slot: the drain (up to the send timeout
/// plus 0.5 s), a broker stop and start, topic creation and the runtime-info reads.
pub const SLOT_MARGIN: Duration = Duration::from_secs(5);

/// How a run is spread over several generators; the default is one generator, no shared start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spread {
    pub shard: Shard,
    pub start_at: Option<StartAt>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_schedule() {
        for total in [0u64, 1, 2, 7, 1000, 1001] {
            for n in 1..=5u32 {
                let sum: u64 = (0..n)
                    .map(|i| Shard { index: i, count: n }.sends_of(total))
                    .sum();
                assert_eq!(sum, total, "{n} shards of {total}");
                for i in 0..n {
                    let s = Shard { index: i, count: n };
                    let by_hand = (0..total)
                        .filter(|j| j % u64::from(n) == u64::from(i))
                        .count();
                    assert_eq!(s.sends_of(total), by_hand as u64);
                }
            }
        }
    }

    #[test]
    fn parse_names_the_mistake() {
        assert_eq!(Shard::parse("1/3"), Ok(Shard { index: 1, count: 3 }));
        assert!(Shard::parse("3/3")
            .unwrap_err()
            .to_string()
            .contains("0..=2"));
        assert!(matches!(Shard::parse("1/0"), Err(ShardError::ZeroCount(_))));
        assert!(matches!(Shard::parse("x"), Err(ShardError::Syntax(_))));
        assert!(matches!(Shard::parse("-1/3"), Err(ShardError::Syntax(_))));
        assert_eq!(Shard::parse("0/1").unwrap().producer_group("g"), "g");
        assert_eq!(
            Shard::parse("2/3").unwrap().producer_group("g"),
            "g-shard2of3"
        );
    }

    #[test]
    fn late_start_is_refused_with_the_lateness() {
        let skew = Duration::from_millis(200);
        let past = StartAt {
            at: SystemTime::now() - Duration::from_secs(5),
            skew,
        };
        let late = past.instant().unwrap_err();
        assert!(late.late_ms >= 5000, "{late}");
        assert!(late.to_string().contains("allowed skew 200 ms"), "{late}");
        let within = StartAt {
            at: SystemTime::now() - Duration::from_millis(50),
            skew: Duration::from_secs(5),
        };
        assert!(within.instant().unwrap() <= Instant::now());
        let ahead = StartAt {
            at: SystemTime::now() + Duration::from_secs(3),
            skew,
        };
        let t = ahead.instant().unwrap();
        let wait = t.saturating_duration_since(Instant::now());
        assert!(wait > Duration::from_secs(2) && wait <= Duration::from_secs(3));
        assert!(StartAt::parse("yesterday", skew).is_err());
        assert!(StartAt::parse("2026-11-30T14:00:00Z", skew).is_ok());
    }
}
