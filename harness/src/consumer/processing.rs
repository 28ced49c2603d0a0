//! The processing-time model: how long the listener takes per message (the seed's "slow SQL"),
//! plus injected stalls: one message in N takes `stall_time`, and all processing pauses for
//! `pause_for` every `pause_every`.

use std::time::{Duration, Instant};

use harness_model::profile::{Consumer, PercentilePoint, Processing};

/// The model of one consumer run.
#[derive(Debug, Clone)]
pub struct ProcessingModel {
    kind: Processing,
    time: Duration,
    points: Vec<(f64, Duration)>,
    stall_every: u64,
    stall_time: Duration,
    pause_every: Duration,
    pause_for: Duration,
    /// The pause schedule's origin.
    origin: Instant,
}

impl ProcessingModel {
    pub fn new(c: &Consumer, origin: Instant) -> ProcessingModel {
        ProcessingModel {
            kind: c.processing,
            time: c.processing_time.duration(),
            points: c
                .processing_percentiles
                .iter()
                .map(|PercentilePoint { p, time }| (*p, time.duration()))
                .collect(),
            stall_every: c.stall_every,
            stall_time: c.stall_time.duration(),
            pause_every: c.pause_every.duration(),
            pause_for: c.pause_for.duration(),
            origin,
        }
    }

    /// The time message number `n` of the run (0-based, counted over every instance) takes.
    pub fn service_time(&self, n: u64, rng: &mut fastrand::Rng) -> Duration {
        let base = match self.kind {
            Processing::Constant => self.time,
            Processing::Exponential => {
                // Inverse transform; 1 - u is in (0, 1].
                let u = 1.0 - rng.f64();
                self.time.mul_f64(-u.ln())
            }
            Processing::Percentiles => self.percentile_time(rng.f64() * 100.0),
        };
        if self.stall_every > 0 && n % self.stall_every == self.stall_every - 1 {
            base + self.stall_time
        } else {
            base
        }
    }

    /// Whether every message takes no time and nothing pauses: a consume request is over the
    /// moment it starts.
    pub fn is_instant(&self) -> bool {
        self.kind == Processing::Constant
            && self.time.is_zero()
            && (self.stall_every == 0 || self.stall_time.is_zero())
            && (self.pause_every.is_zero() || self.pause_for.is_zero())
    }

    /// The time messages `n .. n + count` take together: [`ProcessingModel::service_time`]
    /// summed, each message's draw in order. A constant time without stalls is one
    /// multiplication: a loop of `count` calls per consume request was 2% of a consumer's
    /// instructions per message in `make floor` (processing time 0).
    pub fn batch_time(&self, n: u64, count: u64, rng: &mut fastrand::Rng) -> Duration {
        if self.kind == Processing::Constant && self.stall_every == 0 {
            return self
                .time
                .saturating_mul(count.min(u64::from(u32::MAX)) as u32);
        }
        (n..n + count).map(|i| self.service_time(i, rng)).sum()
    }

    fn percentile_time(&self, p: f64) -> Duration {
        let Some(&(p0, t0)) = self.points.first() else {
            return self.time;
        };
        if p <= p0 {
            return t0;
        }
        for w in self.points.windows(2) {
            let ((pa, ta), (pb, tb)) = (w[0], w[1]);
            if p <= pb {
                let f = (p - pa) / (pb - pa);
                return ta + (tb - ta).mul_f64(f);
            }
        }
        self.points.last().map_or(self.time, |x| x.1)
    }

    /// How long a message that starts processing at `now` first waits for a global pause.
    pub fn pause_left(&self, now: Instant) -> Duration {
        if self.pause_every.is_zero() {
            return Duration::ZERO;
        }
        let since = now.saturating_duration_since(self.origin);
        let every = self.pause_every.as_nanos();
        let phase = Duration::from_nanos((since.as_nanos() % every) as u64);
        // The pause sits at the end of each period, so the first comes after a full period.
        let quiet = self.pause_every - self.pause_for;
        if phase < quiet {
            Duration::ZERO
        } else {
            self.pause_every - phase
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_model::profile::Secs;

    #[test]
    fn stalls_pauses_and_distributions() {
        let origin = Instant::now();
        let c = Consumer {
            processing_time: Secs(0.002),
            stall_every: 1000,
            stall_time: Secs(10.0),
            pause_every: Secs(10.0),
            pause_for: Secs(2.0),
            ..Consumer::default()
        };
        assert!(ProcessingModel::new(&Consumer::default(), origin).is_instant());
        assert!(!ProcessingModel::new(&c, origin).is_instant());
        let flat = ProcessingModel::new(
            &Consumer {
                processing_time: Secs(0.002),
                ..Consumer::default()
            },
            origin,
        );
        let mut rng = fastrand::Rng::with_seed(7);
        assert_eq!(flat.batch_time(5, 32, &mut rng), Duration::from_millis(64));
        let m = ProcessingModel::new(&c, origin);
        assert_eq!(m.service_time(0, &mut rng), Duration::from_millis(2));
        assert_eq!(m.service_time(999, &mut rng), Duration::from_millis(10_002));
        assert_eq!(m.service_time(1000, &mut rng), Duration::from_millis(2));
        assert_eq!(
            m.batch_time(998, 3, &mut rng),
            Duration::from_millis(2 + 10_002 + 2),
            "the stall of message 999 is in the batch"
        );
        assert_eq!(
            m.pause_left(origin + Duration::from_secs(3)),
            Duration::ZERO
        );
        assert_eq!(
            m.pause_left(origin + Duration::from_millis(8500)),
            Duration::from_millis(1500)
        );
        assert_eq!(
            m.pause_left(origin + Duration::from_millis(18_000)),
            Duration::from_secs(2)
        );

        let e = Consumer {
            processing: Processing::Exponential,
            processing_time: Secs(0.01),
            ..Consumer::default()
        };
        let m = ProcessingModel::new(&e, origin);
        let (mut a, mut b) = (fastrand::Rng::with_seed(3), fastrand::Rng::with_seed(3));
        let summed: Duration = (40..72).map(|n| m.service_time(n, &mut a)).sum();
        assert_eq!(
            m.batch_time(40, 32, &mut b),
            summed,
            "the same draws in order"
        );
        let mean: f64 = (0..20_000)
            .map(|n| m.service_time(n, &mut rng).as_secs_f64())
            .sum::<f64>()
            / 20_000.0;
        assert!((0.009..0.011).contains(&mean), "exponential mean {mean}");

        let p = Consumer {
            processing: Processing::Percentiles,
            processing_percentiles: vec![
                PercentilePoint {
                    p: 50.0,
                    time: Secs(0.001),
                },
                PercentilePoint {
                    p: 100.0,
                    time: Secs(0.101),
                },
            ],
            ..Consumer::default()
        };
        let m = ProcessingModel::new(&p, origin);
        assert_eq!(m.percentile_time(10.0), Duration::from_millis(1));
        assert_eq!(m.percentile_time(75.0), Duration::from_millis(51));
        assert_eq!(m.percentile_time(100.0), Duration::from_millis(101));
    }
}
