//! Everything one load needs at run time: the schedule ([`harness_model::schedule`]) with the
//! broker address, the shard, the shared start and the trackers the job parts hand in.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::consumer::SendTracking;

use crate::fault::OutcomeLog;
use harness_model::profile::Workload;
use harness_model::schedule::{plan, Pacing, Phase};
use harness_model::shard::{Shard, StartAt};

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
