//! Runs a profile: the cells in schedule order, one job each, every output rewritten after
//! each job so an interrupted run keeps what it measured.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use anyhow::Context;
use parking_lot::Mutex;

use crate::kind::in_tree::InTree;
use crate::kind::select::{self, Source};
use crate::kind::BrokerKind;
use crate::proc::pin;
use crate::provenance::{utc, Provenance};
use crate::report::run_json::{cell_json, RunRecord, RunStatus};
use crate::report::{self, HlogWriter, SummaryRow, TimeseriesWriter};
use crate::runner::context::{effective_conf, Ctx, Streams};
use crate::runner::jit_job::run_warmed_job;
use crate::runner::knee_job::{capacity_table, run_knee_job};
use crate::runner::options::{RunOptions, RunOutcome};
use crate::runner::parts;
use crate::runner::progress::Progress;
use crate::runner::reaper::Reaper;
use crate::runner::shard;
use harness_model::matrix;
use harness_model::profile::{higher_is_better, Model, Profile};

/// Runs every cell and repetition of `profile`, writing outputs after each.
pub fn run_profile(profile: &Profile, opts: &RunOptions) -> anyhow::Result<RunOutcome> {
    if opts.target.is_some() || opts.namesrv.is_some() {
        let axes = profile.broker_axes();
        if !axes.is_empty() {
            return Err(crate::exit::invalid(anyhow::anyhow!(
                "--target / --namesrv drive existing brokers, so the broker axes {} cannot be varied; remove them from [matrix] or run without them",
                axes.join(", ")
            )));
        }
    }
    if opts.target.is_some() && profile.cluster.is_some() {
        return Err(crate::exit::invalid(anyhow::anyhow!(
            "--target drives one broker, but the profile has [cluster]; drop --target (the harness starts the cluster) or use --namesrv HOST:PORT for an existing one"
        )));
    }
    if opts.target.is_some() && !profile.broker.is_empty() && !opts.quiet {
        eprintln!(
            "warning: --target drives an existing broker; the profile's [broker] keys ({}) are recorded in run.json but not applied",
            profile.broker.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let cells = matrix::expand(profile).map_err(anyhow::Error::msg)?;
    shard::check_cells(&opts.spread, &cells)?;
    // ACL: sign every request of this run (crate::auth); the environment wins over [auth].
    let signing = crate::auth::install_for_run(profile.auth.as_ref())
        .map_err(|e| crate::exit::invalid(anyhow::anyhow!(e)))?;
    if let (Some(access_key), false) = (signing, opts.quiet) {
        eprintln!("ACL: every request is signed with access key {access_key}");
    }
    if let Some(why) = parts::problem(&cells, opts) {
        return Err(crate::exit::invalid(anyhow::anyhow!(why)));
    }
    // `store_tmpfs`: refused now (exit 3, or 4 without root or a working mount), not per cell.
    crate::tmpfs::check_cells(
        profile,
        &cells,
        opts.target.is_some() || opts.namesrv.is_some(),
    )?;
    let jobs = matrix::schedule(
        cells.len(),
        profile.repetitions,
        profile.order,
        profile.seed,
    );
    // Every broker key and every cell's configuration is checked before anything is written
    // or started: a bad 7th cell fails the run now, not after six cells.
    let source = Source {
        target: opts.target,
        target_pid: opts.broker_pid,
        namesrv: opts.namesrv,
        broker_bin: opts.broker_bin.as_deref(),
        cache: opts.kinds.as_deref(),
    };
    let kinds = select::for_cells(source, profile, &cells)?;
    // A shard already too late for the shared start refuses before it writes anything.
    if let Some(at) = &opts.spread.start_at {
        at.instant()?;
    }
    let started = SystemTime::now();
    let (stamp, started_iso) = utc(started);
    let out_dir = opts
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("{}-{stamp}", profile.name)));
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;

    let cpus = pin::process_cpus();
    let pinning = if profile.pin {
        pin::split_cpus(cpus)
    } else {
        None
    };
    // Unpinned, the harness (and every broker it starts, which inherits its mask) gets back
    // the whole set an earlier run in this process narrowed.
    let harness_cpus = pinning.as_ref().map_or(cpus, |(_, h)| h.as_slice());
    pin::pin_current_thread(harness_cpus).context("pinning the harness")?;
    let mut ctx = Ctx {
        profile,
        opts,
        out_dir: out_dir.clone(),
        axis_keys: matrix::axis_keys(profile),
        pinning,
        kind: kinds[0].clone(),
        streams: Mutex::new(Streams {
            hlog: HlogWriter::create(&out_dir.join("latency.hlog"), started)
                .context("creating latency.hlog")?,
            series: TimeseriesWriter::create(&out_dir.join("timeseries.csv"))
                .context("creating timeseries.csv")?,
        }),
        run_start: Instant::now(),
        run_start_wall: started,
        progress: Progress::new(jobs.len(), opts.quiet),
        job_start: None,
        probe: None,
        reaper: Reaper::default(),
    };
    let mut rows: Vec<SummaryRow> = Vec::new();
    let mut interrupted = false;
    let mut cell_meta = Vec::new();
    for cell in &cells {
        let conf = effective_conf(cell, Path::new("<cell dir>/store"));
        cell_meta.push(cell_json(cell, &conf));
    }
    let provenance = Provenance::gather();
    let kind_records = select::records(&kinds);
    // broker_bin / broker_bin_fnv1a64 stay what they were: broker-under-test's binary.
    let in_tree = kind_records.iter().find(|r| r.kind == "in-tree");
    let brokers: Vec<serde_json::Value> = kind_records
        .iter()
        .map(|r| {
            serde_json::json!({
                "kind": r.kind, "version": r.version, "program": r.binary.as_ref().map(|p| p.display().to_string()),
                "checksum": r.checksum, "runtime": r.runtime,
            })
        })
        .collect();
    // The copy in run.json keeps no secret.
    let profile_text =
        crate::auth::redact(&std::fs::read_to_string(&profile.path).unwrap_or_default());
    let write_record = |ctx: &Ctx, jobs_done: usize, status: RunStatus| -> anyhow::Result<()> {
        let ended = (status != RunStatus::Running).then(|| utc(SystemTime::now()).1);
        let record = RunRecord {
            provenance: &provenance,
            cores: cpus.len(),
            start: &started_iso,
            end: ended.as_deref(),
            command_line: &opts.command_line,
            target: opts.target,
            broker_bin: in_tree.and_then(|r| r.binary.as_deref()),
            broker_bin_hash: in_tree.and_then(|r| r.checksum.as_deref()),
            brokers: &brokers,
            pinning: ctx.pinning.as_ref(),
            profile,
            profile_text: &profile_text,
            cells: &cell_meta,
            jobs_planned: jobs.len(),
            jobs_done,
            status,
            spread: &opts.spread,
        };
        report::write_atomic(&ctx.out_dir.join("run.json"), record.to_json()?.as_bytes())
            .context("writing run.json")
    };
    write_record(&ctx, 0, RunStatus::Running)?;
    let mut jobs_done = 0;
    let mut slot = std::time::Duration::ZERO;
    for (n, job) in jobs.iter().enumerate() {
        if opts.cancel.is_cancelled() || opts.stop_after_jobs.is_some_and(|k| n >= k) {
            interrupted = true;
            break;
        }
        let cell = &cells[job.cell];
        ctx.kind = kinds[job.cell].clone();
        ctx.job_start = opts.spread.start_at.map(|at| at.plus(slot));
        slot += harness_model::schedule::slot_length(&cell.workload);
        let (mut r, was_interrupted) = if cell.workload.model == Model::Knee {
            run_knee_job(&mut ctx, cell, job.repetition)
        } else {
            run_warmed_job(&mut ctx, cell, job.repetition)
        };
        rows.append(&mut r);
        jobs_done += 1;
        write_summary(&ctx, &rows).context("writing summary.csv")?;
        write_record(&ctx, jobs_done, RunStatus::Running)?;
        if let Some(b) = &ctx.progress.overall {
            b.inc(1);
        }
        if was_interrupted {
            interrupted = true;
            break;
        }
    }
    if let Some(b) = &ctx.progress.overall {
        b.finish_and_clear();
    }
    let status = if interrupted {
        RunStatus::Interrupted
    } else {
        RunStatus::Finished
    };
    write_record(&ctx, jobs_done, status)?;
    let mut table = report::table(
        &rows,
        &profile.key_metric,
        higher_is_better(&profile.key_metric),
    );
    table.push_str(&capacity_table(&rows));
    Ok(RunOutcome {
        out_dir,
        rows,
        interrupted,
        table,
    })
}

/// The broker-key checks of a run ([`BrokerKind::check_cells`]) for a caller that runs the
/// profile later, job by job (`harness ab` checks both sides before its first job: a typo in
/// `--set-b` must not cost side A's jobs).
/// Every cell's broker keys checked by its kind, as a run does before cell 1, running nothing.
pub fn check_cells(profile: &Profile, broker_bin: Option<&Path>) -> anyhow::Result<()> {
    let cells = matrix::expand(profile).map_err(|e| crate::exit::invalid(anyhow::anyhow!(e)))?;
    let source = Source {
        target: None,
        target_pid: None,
        namesrv: None,
        broker_bin,
        cache: None,
    };
    select::for_cells(source, profile, &cells).map(|_| ())
}

pub fn check_broker_profile(bin: &Path, profile: &Profile) -> anyhow::Result<()> {
    let cells = matrix::expand(profile).map_err(|e| crate::exit::invalid(anyhow::anyhow!(e)))?;
    InTree::new(bin.to_owned()).check_cells(profile, &cells)
}

fn write_summary(ctx: &Ctx, rows: &[SummaryRow]) -> std::io::Result<()> {
    report::write_atomic(
        &ctx.out_dir.join("summary.csv"),
        &report::summary_csv(&ctx.axis_keys, rows)?,
    )
}
