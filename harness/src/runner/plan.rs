//! The schedule of a workload: warm-up then the measured phases, and how they are paced.

use std::net::SocketAddr;
use std::time::Duration;

use crate::profile::{Model, Workload};

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

/// Everything the loop needs.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub addr: SocketAddr,
    pub workload: Workload,
    pub pacing: Pacing,
    pub phases: Vec<Phase>,
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
            cluster: None,
        }
    }

    pub fn segments(&self) -> usize {
        self.phases.iter().map(|p| p.segment).max().unwrap_or(0) + 1
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
