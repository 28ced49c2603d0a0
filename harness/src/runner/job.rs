//! One job (a cell's repetition): a fresh broker, the load with sampling (which streams the time
//! series and interval log), the broker stopped, then its summary rows. Problems never fail the run: they
//! become invalid rows with a reason.

use std::net::SocketAddr;
use std::time::Duration;

use crate::cluster::JobCluster;
use crate::kind::{Lifecycle, Member, MemberSpec, StartError};
use crate::part::{Brokers, JobColumns, JobParts, Stopped};
use crate::report::{SegmentFigures, SummaryRow};
use crate::runner::context::{effective_conf, Ctx};
use crate::runner::job_error::JobError;
use crate::runner::parts::{job_parts, JobSetup};
use crate::runner::plan::LoadConfig;
use crate::runner::sample::segment_resources;
use crate::runner::sampler::{drive, JobBrokers, JobOutput};
use crate::runner::validity::validity_problem;
use harness_model::matrix::Cell;
use harness_model::profile::Model;
use harness_model::schedule::Phase;
use harness_results::{Invalid, InvalidKind};

/// Starts the cell's broker (the run's kind) with its broker.conf in `job_dir` (a fresh store
/// there).
pub(crate) fn start_broker(
    ctx: &Ctx,
    cell: &Cell,
    job_dir: &std::path::Path,
) -> Result<Box<dyn Member>, StartError> {
    let conf = effective_conf(cell, &job_dir.join("store"));
    let cpus = ctx.pinning.as_ref().map(|(b, _)| b.as_slice());
    let spec = MemberSpec::new("broker", job_dir, &conf).pinned(cpus);
    ctx.kind.start_broker(&spec)
}

/// Why the rows of a job on a kept broker are not scored when that broker exited during it
/// (`what`: "the probe", "the job").
pub(crate) fn kept_broker_exited(st: std::process::ExitStatus, what: &str) -> Invalid {
    Invalid::new(
        InvalidKind::BrokerExited,
        format!("broker exited during {what} ({st}); see broker.log"),
    )
}

/// Stops a broker kept across several jobs of a cell (a knee search's, a warmed cell's) once
/// its rows are made: a JVM beside the next cell's start, unless the run was interrupted.
pub(crate) fn stop_kept(
    ctx: &mut Ctx,
    cell: &Cell,
    p: Box<dyn Member>,
    job_dir: &std::path::Path,
    interrupted: bool,
) {
    let store = job_dir.join("store");
    let stop = move || {
        let _ = p.discard(Duration::from_secs(10));
        let _ = std::fs::remove_dir_all(store);
    };
    if ctx.kind.stops_in_background() && !interrupted {
        ctx.reaper.defer(&cell.id, stop);
    } else {
        stop();
    }
}

/// The stop [`run_job`] leaves to `ctx.reaper`: the job's rows are made by then, so a stop
/// that is not clean is a warning (the JVM's own log says more), then the store goes.
fn stop_in_background(member: Box<dyn Member>, store: Option<std::path::PathBuf>) {
    let addr = member.addr();
    if let Some(st) = member.discard(Duration::from_secs(10)) {
        if !st.success() {
            eprintln!("warning: the broker {addr} exited with {st} at its stop, after its job");
        }
    }
    if let Some(store) = store {
        let _ = std::fs::remove_dir_all(store);
    }
}

/// One job: broker up, load, sampling, broker down. Never fails: problems become invalid rows.
pub fn run_job(ctx: &mut Ctx, cell: &Cell, repetition: u32) -> (Vec<SummaryRow>, bool) {
    let profile = ctx.profile;
    let job_dir = match ctx.probe {
        // A knee probe with its own broker keeps its own broker.conf and log.
        Some(p) if p.broker.is_none() => ctx
            .out_dir
            .join(format!("{}-r{repetition}-p{}", cell.id, p.index)),
        _ => ctx.out_dir.join(format!("{}-r{repetition}", cell.id)),
    };
    let cfg_probe = LoadConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)), &cell.workload);
    // The first reason the job's rows are not scored, with its kind.
    let mut invalid: Option<Invalid> = None;
    let mut out = JobOutput::new(cfg_probe.segments());
    // The job's parts (`crate::part`), kept until its rows are made.
    let mut parts = JobParts::default();
    ctx.progress.line(&format!(
        "cell {} rep {repetition}: {}",
        cell.id, cell.label
    ));

    let result: Result<(), JobError> = (|| {
        std::fs::create_dir_all(&job_dir).map_err(|source| JobError::JobDir {
            path: job_dir.clone(),
            source,
        })?;
        let store = job_dir.join("store");
        // `store_tmpfs`: the store on a disk of its own, mounted before the broker starts and
        // unmounted when this closure ends, after the broker stopped and the parts read its
        // store (declared first, so dropped last), also when the job ends early.
        let _tmpfs = match crate::tmpfs::cell_tmpfs(cell) {
            Some(bytes) => Some(crate::tmpfs::TmpfsMount::mount(&store, bytes)?),
            None => None,
        };
        let mut cluster = JobCluster::start(
            ctx.opts.namesrv,
            profile
                .cluster
                .as_ref()
                .filter(|_| ctx.opts.target.is_none()),
            ctx.kind.as_ref(),
            cell,
            &job_dir,
            ctx.pinning.as_ref().map(|(b, _)| b.as_slice()),
        )?;
        let first = cluster.as_ref().map(|c| c.first_broker());
        // A knee search that keeps one broker per cell runs its probes against it.
        let shared = ctx.probe.and_then(|p| p.broker);
        let conf = effective_conf(cell, &store);
        let owned = ctx.kind.lifecycle() == Lifecycle::Owned;
        let own_broker = match (&cluster, shared, owned) {
            (None, None, true) => Some((&ctx.kind, &conf)),
            _ => None,
        };
        let job = JobSetup {
            cluster: cluster.as_ref(),
            own_conf: own_broker.map(|(_, conf)| conf),
            owned,
            job_dir: &job_dir,
            sends: cfg_probe.scheduled_sends().unwrap_or(0),
        };
        parts = job_parts(ctx, cell, repetition, job);
        let (addr, mut process, pid) = match (first, shared) {
            (Some(Some((addr, pid))), _) => (addr, None, pid),
            (Some(None), _) => (
                cluster.as_ref().map_or(addr0(), |c| c.namesrv),
                None,
                ctx.opts.broker_pid,
            ),
            (None, Some((addr, pid))) => (addr, None, pid),
            (None, None) => {
                let p = start_broker(ctx, cell, &job_dir)?;
                let (addr, pid) = (p.addr(), p.pid());
                // Only a broker the harness owns is the job's to kill, restart and stop.
                (addr, owned.then_some(p), pid)
            }
        };
        // A cluster's CPU and memory are every broker's, summed.
        let broker_pids = match cluster.as_ref().map(JobCluster::broker_pids) {
            Some(pids) if !pids.is_empty() => pids,
            _ => pid.into_iter().collect(),
        };
        // The store folders of the broker(s) this job started.
        let own_stores = cluster.is_some() || process.is_some();
        let brokers = JobBrokers {
            addr,
            process: process.as_mut(),
            cluster: cluster.as_mut(),
            pids: &broker_pids,
            store_dirs: own_stores.then_some(job_dir.as_path()),
        };
        // The previous job's broker, if it is still stopping, is gone before this load.
        ctx.reaper.settle();
        let outcome = drive(ctx, cell, repetition, brokers, &mut parts, &mut out);
        let interrupted = out.interrupted;
        // Parts that read the brokers still running (the faults' reconciliation of a broker
        // that is up), before any stop.
        let mut running = Brokers {
            process: process.as_mut(),
            cluster: cluster.as_mut(),
        };
        for e in parts.before_stop(&mut running, interrupted || outcome.is_err()) {
            invalid.get_or_insert(e.invalid());
        }
        // A broker that is slow to stop (a JVM) stops beside the next job's start when
        // nothing after this point reads its store: not a store on the cell's own tmpfs
        // (unmounted when this job ends), not a fault's reconciliation.
        let background = ctx.kind.stops_in_background()
            && !interrupted
            && _tmpfs.is_none()
            && !parts.reads_stopped_store();
        let mut remove_store = own_broker.is_some();
        if let Some(mut p) = process {
            let killed_for_good = parts.board.down.is_some();
            if background && p.exited().is_none() {
                let store = remove_store.then(|| store.clone());
                remove_store = false;
                ctx.reaper
                    .defer(&cell.id, move || stop_in_background(p, store));
            } else {
                match p.stop(Duration::from_secs(10)) {
                    Some(st)
                        if !st.success() && outcome.is_ok() && !interrupted && !killed_for_good =>
                    {
                        invalid.get_or_insert(Invalid::new(
                            InvalidKind::BrokerExited,
                            format!("broker exited with {st} at shutdown"),
                        ));
                    }
                    _ => {}
                }
            }
        }
        // Columns that need the stopped brokers' stores (the faults' reconciliation).
        let stopped = Stopped {
            cluster: cluster.as_mut(),
            outcome_ok: outcome.is_ok(),
            interrupted,
        };
        let cols = JobColumns {
            res: &mut out.res,
            order: &mut out.order,
            consumer: &mut out.consumer,
            fault: &mut out.fault,
        };
        for e in parts.after_stop(stopped, cols) {
            invalid.get_or_insert(e.invalid());
        }
        if remove_store {
            let _ = std::fs::remove_dir_all(&store);
        }
        match cluster {
            // As a lone JVM broker's (`Member::discard`): 25-30 s of clean stops for a
            // master, its slave and their name server, whose statuses say nothing here.
            Some(c) if background => c.discard(Duration::from_secs(10)),
            Some(c) => {
                // Its reason is a member that did not exit cleanly.
                if let Some(reason) = c.stop(Duration::from_secs(10)) {
                    if outcome.is_ok() && !interrupted {
                        invalid.get_or_insert(Invalid::new(
                            InvalidKind::BrokerExited,
                            reason.to_string(),
                        ));
                    }
                }
            }
            None => {}
        }
        outcome
    })();
    if let Err(e) = result {
        invalid.get_or_insert(e.invalid());
    }
    let JobOutput {
        broker_names,
        samples,
        recorder,
        res,
        interrupted,
        consumer,
        order: order_cols,
        fault: fault_cols,
    } = out;
    if interrupted {
        invalid = Some(Invalid::new(InvalidKind::Interrupted, "interrupted"));
    }
    for r in parts.invalid_reasons() {
        invalid.get_or_insert(r);
    }

    // Summary rows: one per measured segment.
    let measured: Vec<&Phase> = cfg_probe.phases.iter().filter(|p| p.segment > 0).collect();
    let params: Vec<String> = ctx
        .axis_keys
        .iter()
        .map(|k| {
            cell.params
                .iter()
                .find(|(pk, _)| pk == k)
                .map_or(String::new(), |(_, v)| v.clone())
        })
        .collect();
    let mut rows = Vec::new();
    for ph in measured {
        let seg = &recorder.segments[ph.segment];
        let mut figs = SegmentFigures::from_segment(seg);
        figs.broker_names = broker_names.clone();
        figs.write_blocks = recorder.write_blocks.iter().map(|b| b.figures()).collect();
        let step = (cell.workload.model == Model::Steps).then(|| ph.segment - 1);
        let target_rate =
            (cell.workload.model != Model::Closed).then_some(ctx.opts.spread.shard.share(ph.rate));
        let mut row = SummaryRow {
            profile: profile.name.clone(),
            cell_id: cell.id.clone(),
            label: cell.label.clone(),
            repetition,
            step,
            params: params.clone(),
            target_rate,
            duration_s: ph.duration.as_secs_f64(),
            seg: figs,
            res: segment_resources(&samples, ph.segment, &res),
            valid: true,
            invalid_reason: String::new(),
            invalid_kinds: Vec::new(),
            consumer: consumer.clone(),
            fault: fault_cols.clone(),
            knee: Default::default(),
            order: order_cols.clone(),
        };
        let reason = invalid
            .clone()
            .or_else(|| validity_problem(&profile.validity, &row));
        if let Some(r) = reason {
            row.invalidate(r);
        }
        rows.push(row);
    }
    for r in &rows {
        ctx.progress.line(&format!(
            "  done: achieved {:.0}/s ok {:.0}/s busy {} ({:.2}%) p99 {:.3} ms lag p50/p99 {}/{} µs{}",
            r.achieved_rate(),
            r.ok_rate(),
            r.seg.busy_total(),
            r.busy_rate() * 100.0,
            r.seg.latency_us[2] as f64 / 1000.0,
            r.seg.lag_us[0],
            r.seg.lag_us[1],
            if r.valid { String::new() } else { format!("  INVALID: {}", r.invalid_reason) }
        ));
    }
    for line in parts.progress_lines() {
        ctx.progress.line(&line);
    }
    (rows, interrupted)
}

/// A placeholder address for a job whose brokers come from a name server.
fn addr0() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}
