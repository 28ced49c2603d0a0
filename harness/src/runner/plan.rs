//! The schedule of a workload: warm-up then the measured phases, and how they are paced.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::consumer::SendTracking;

use crate::fault::OutcomeLog;
use crate::profile::{Model, Workload};
use crate::runner::shard::{Shard, StartAt, SLOT_MARGIN};

/// A stretch of the schedule recorded into one segment (0 = warm-up).
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub segment: usize,
    /// Sends per second (open loop); unused in the closed loop.
    pub rate: f64,
    pub duration: Duration,
}

impl Phase {
    /// Sends scheduled in this phase (open loop).
    pub(crate) fn count(&self) -> u64 {
        (self.rate * self.duration.as_secs_f64()).ceil() as u64
    }
}

/// The pacing strategy of the worker loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// Every send has an intended time fixed in advance.
    Open,
    /// A send is issued whenever fewer than `concurrency` are outstanding.
    Closed { concurrency: usize },
}

/// The schedule of a workload: warm-up (segment 0) then the measured phases (segments 1..).
pub fn plan(w: &Workload) -> (Pacing, Vec<Phase>) {
    let mut phases = vec![Phase {
        segment: 0,
        rate: w.warmup_rate(),
        duration: w.warmup.duration(),
    }];
    match w.model {
        Model::Steps => {
            for (i, s) in w.steps.iter().enumerate() {
                phases.push(Phase {
                    segment: i + 1,
                    rate: s.rate,
                    duration: s.duration.duration(),
                });
            }
        }
        _ => phases.push(Phase {
            segment: 1,
            rate: w.rate,
            duration: w.duration.duration(),
        }),
    }
    let pacing = match w.model {
        Model::Closed => Pacing::Closed {
            concurrency: w.concurrency as usize,
        },
        _ => Pacing::Open,
    };
    (pacing, phases)
}

/// The time from one job's `--start-at` slot to the next: its schedule (warm-up included),
/// the longest drain, and [`SLOT_MARGIN`].
pub fn slot_length(w: &Workload) -> Duration {
    let schedule: Duration = plan(w).1.iter().map(|p| p.duration).sum();
    schedule + w.send_timeout.duration() + SLOT_MARGIN
}

/// Everything the loop needs.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub addr: SocketAddr,
    pub workload: Workload,
    pub pacing: Pacing,
    pub phases: Vec<Phase>,
    /// The share of every phase this generator sends ([`Shard::WHOLE`] unless `--shard`).
    pub shard: Shard,
    /// The shared start instant (`--start-at`); None = ~50 ms after connecting.
    pub start_at: Option<StartAt>,
    /// With consumers: the sends acknowledged, for lost/duplicate accounting.
    pub tracking: Option<Arc<SendTracking>>,
    /// Set by a fault experiment: every send's final outcome is kept by send number.
    pub outcomes: Option<Arc<OutcomeLog>>,
    /// Several brokers: connections to each, queues chosen by the router (`harness::cluster`).
    pub cluster: Option<std::sync::Arc<crate::cluster::router::Router>>,
}

impl LoadConfig {
    pub fn new(addr: SocketAddr, workload: &Workload) -> LoadConfig {
        let (pacing, phases) = plan(workload);
        LoadConfig {
            addr,
            workload: workload.clone(),
            pacing,
            phases,
            shard: Shard::WHOLE,
            start_at: None,
            tracking: None,
            outcomes: None,
            cluster: None,
        }
    }

    /// The same schedule, of which this generator sends `shard`'s share from `start_at`.
    pub fn spread(mut self, shard: Shard, start_at: Option<StartAt>) -> LoadConfig {
        self.shard = shard;
        self.start_at = start_at;
        self
    }

    pub fn segments(&self) -> usize {
        self.phases.iter().map(|p| p.segment).max().unwrap_or(0) + 1
    }

    /// Sends scheduled over every phase (open loop; the closed loop has no fixed count).
    pub fn scheduled_sends(&self) -> Option<u64> {
        (self.pacing == Pacing::Open).then(|| self.phases.iter().map(Phase::count).sum())
    }

    /// Total scheduled time, warm-up included.
    pub fn total(&self) -> Duration {
        self.phases.iter().map(|p| p.duration).sum()
    }

    /// The phase active `elapsed` after the start (None once the schedule is over).
    pub fn phase_at(&self, elapsed: Duration) -> Option<&Phase> {
        let mut t = Duration::ZERO;
        for p in &self.phases {
            t += p.duration;
            if elapsed < t {
                return Some(p);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Secs, Step};

    #[test]
    fn a_slot_covers_schedule_drain_and_margin() {
        let w = Workload {
            warmup: Secs(2.0),
            duration: Secs(10.0),
            send_timeout: Secs(3.0),
            ..Workload::default()
        };
        assert_eq!(slot_length(&w), Duration::from_secs(20));
        let steps = Workload {
            model: Model::Steps,
            warmup: Secs(1.0),
            steps: vec![
                Step {
                    rate: 100.0,
                    duration: Secs(2.0),
                },
                Step {
                    rate: 200.0,
                    duration: Secs(3.0),
                },
            ],
            send_timeout: Secs(0.5),
            ..Workload::default()
        };
        assert_eq!(slot_length(&steps), Duration::from_millis(11_500));
    }
}
