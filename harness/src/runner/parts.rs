//! The one place a job part registers (`crate::part`): the parts of one job, in the order
//! their hooks run. A new part is a type implementing `JobPart` beside its feature plus one
//! `parts.push(..)` line here (and, for a part that refuses some profiles before the run, a line
//! in [`problem`]); the job, its sampling loop and the run know no part by name.

use std::collections::BTreeMap;
use std::path::Path;

use crate::cluster::job::JobCluster;
use crate::cluster::job_part::ClusterRouting;
use crate::consumer::job_part::ConsumerPart;
use crate::fault::job_part::{FaultPart, FaultSetup};
use crate::ha::HaSampler;
use crate::order::hook::OrderPart;
use crate::part::JobParts;
use crate::runner::context::Ctx;
use crate::runner::options::RunOptions;
use crate::runner::retention::RetentionPart;
use harness_model::matrix::Cell;

/// What the job has decided before its broker starts.
pub struct JobSetup<'a> {
    pub cluster: Option<&'a JobCluster>,
    /// The broker.conf of the job's own broker (None for a cluster, `--target` or a broker
    /// shared by a knee search's probes).
    pub own_conf: Option<&'a BTreeMap<String, String>>,
    /// The run's kind starts (and owns) its brokers.
    pub owned: bool,
    pub job_dir: &'a Path,
    /// Sends the load schedules (0 for the closed loop).
    pub sends: u64,
}

/// Why the parts cannot run the profile's cells as asked with these options (exit 3), checked
/// before anything starts: a fault against a broker the harness did not start.
pub fn problem(cells: &[Cell], opts: &RunOptions) -> Option<String> {
    let namesrv = opts.namesrv.is_some();
    crate::fault::cluster::problem(cells, namesrv, &opts.broker_pids).or_else(|| {
        opts.target
            .and_then(|_| crate::fault::job::target_problem(cells, opts.broker_pid))
    })
}

/// The parts of one job of `cell`.
pub fn job_parts(ctx: &Ctx, cell: &Cell, repetition: u32, job: JobSetup<'_>) -> JobParts {
    let mut parts = JobParts::default();
    if job.cluster.is_some() {
        parts.push(ClusterRouting);
    }
    let faults = FaultSetup {
        cluster: job.cluster,
        kind: &ctx.kind,
        own_conf: job.own_conf,
        owned: job.owned,
        dir: job.job_dir,
        cpus: ctx.pinning.as_ref().map(|(b, _)| b.as_slice()),
        broker_pid: ctx.opts.broker_pid,
        broker_pids: &ctx.opts.broker_pids,
    };
    if let Some(f) = FaultPart::for_job(cell, job.sends, faults) {
        parts.push(f);
    }
    parts.push(HaSampler::default());
    parts.push(RetentionPart::default());
    if let Some(c) = &cell.consumer {
        let log = ctx
            .out_dir
            .join(format!("{}-r{repetition}", cell.id))
            .join("consumer.log");
        parts.push(ConsumerPart::new(c, &cell.workload, log));
    }
    parts.push(OrderPart::new(cell.consumer.as_ref().map(|c| c.mode)));
    parts
}
