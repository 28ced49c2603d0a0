//! The schedule of a workload: warm-up then the measured phases, how they are paced, and how
//! long a job's slot on a shared `--start-at` timeline is. Pure: the load's runtime
//! configuration (addresses, trackers) is the harness's `runner::plan::LoadConfig`.

use std::time::Duration;

use crate::profile::{Model, Workload};
use crate::shard::SLOT_MARGIN;

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
    pub fn count(&self) -> u64 {
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
