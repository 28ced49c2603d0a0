//! Runs a profile: cells in order, one fresh broker each, the load, sampling and outputs.

pub mod client;
pub mod load;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::broker::{self, BrokerProcess, ProcSampler};
use crate::matrix::{self, Cell};
use crate::profile::{higher_is_better, Model, Profile};
use crate::recorder::{BusyClass, Interval, Recorder};
use crate::report::{self, HlogBuffer, Resources, SegmentFigures, SummaryRow, TimeseriesRow};
use client::AdminConn;
use load::{LoadConfig, LoadHandle};

/// What `harness run` needs besides the profile.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub target: Option<SocketAddr>,
    pub out: Option<PathBuf>,
    pub broker_pid: Option<u32>,
    pub broker_bin: Option<PathBuf>,
    pub command_line: String,
    pub cancel: CancellationToken,
    /// Test hook: behave as if interrupted once this many jobs have finished.
    pub stop_after_jobs: Option<usize>,
    /// Print nothing but errors (tests).
    pub quiet: bool,
}

/// The result of a run.
#[derive(Debug)]
pub struct RunOutcome {
    pub out_dir: PathBuf,
    pub rows: Vec<SummaryRow>,
    pub interrupted: bool,
    pub table: String,
}

/// UTC `YYYYMMDDTHHMMSSZ` and ISO forms of a time.
pub fn utc(t: SystemTime) -> (String, String) {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days → civil date.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (hh, mm, ss) = (rem / 3600, rem % 3600 / 60, rem % 60);
    (
        format!("{y:04}{m:02}{d:02}T{hh:02}{mm:02}{ss:02}Z"),
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z"),
    )
}

fn fnv_hex(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn git_revision() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

struct Progress {
    multi: Option<MultiProgress>,
    overall: Option<ProgressBar>,
    quiet: bool,
}

impl Progress {
    fn new(jobs: usize, quiet: bool) -> Progress {
        if quiet || !std::io::stdout().is_terminal() {
            return Progress {
                multi: None,
                overall: None,
                quiet,
            };
        }
        let multi = MultiProgress::new();
        let overall = multi.add(ProgressBar::new(jobs as u64));
        overall.set_style(
            ProgressStyle::with_template(
                "matrix [{bar:30}] {pos}/{len} cells  {elapsed_precise} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress {
            multi: Some(multi),
            overall: Some(overall),
            quiet,
        }
    }

    fn cell_bar(&self, label: &str, secs: u64) -> Option<ProgressBar> {
        let multi = self.multi.as_ref()?;
        let bar = multi.add(ProgressBar::new(secs.max(1)));
        bar.set_style(
            ProgressStyle::with_template("{prefix:.bold} [{bar:30}] {pos}/{len}s {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_prefix(label.to_owned());
        Some(bar)
    }

    fn line(&self, text: &str) {
        if self.quiet {
            return;
        }
        match &self.multi {
            Some(m) => {
                let _ = m.println(text);
            }
            None => println!("{text}"),
        }
    }
}

/// Per-run context shared by the jobs.
struct Ctx<'a> {
    profile: &'a Profile,
    opts: &'a RunOptions,
    out_dir: PathBuf,
    axis_keys: Vec<String>,
    pinning: Option<(Vec<usize>, Vec<usize>)>,
    broker_bin: Option<PathBuf>,
    hlog: HlogBuffer,
    run_start: Instant,
    progress: Progress,
}

/// Runs every cell and repetition of `profile`, writing outputs after each.
pub fn run_profile(profile: &Profile, opts: &RunOptions) -> anyhow::Result<RunOutcome> {
    if opts.target.is_some() {
        let axes = profile.broker_axes();
        if !axes.is_empty() {
            anyhow::bail!(
                "--target drives an existing broker, so the broker axes {} cannot be varied; remove them from [matrix] or run without --target",
                axes.join(", ")
            );
        }
    }
    if opts.target.is_some() && !profile.broker.is_empty() && !opts.quiet {
        eprintln!(
            "warning: --target drives an existing broker; the profile's [broker] keys ({}) are recorded in run.json but not applied",
            profile.broker.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let cells = matrix::expand(profile).map_err(anyhow::Error::msg)?;
    let jobs = matrix::schedule(
        cells.len(),
        profile.repetitions,
        profile.order,
        profile.seed,
    );
    let started = SystemTime::now();
    let (stamp, started_iso) = utc(started);
    let out_dir = opts
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("{}-{stamp}", profile.name)));
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;

    let cpus = broker::allowed_cpus();
    let pinning = if profile.pin {
        broker::split_cpus(&cpus)
    } else {
        None
    };
    if let Some((_, harness_cpus)) = &pinning {
        broker::pin_current_thread(harness_cpus).context("pinning the harness")?;
    }
    let broker_bin = match opts.target {
        Some(_) => None,
        None => Some(broker::locate_or_build(opts.broker_bin.as_deref())?),
    };
    let mut ctx = Ctx {
        profile,
        opts,
        out_dir: out_dir.clone(),
        axis_keys: matrix::axis_keys(profile),
        pinning,
        broker_bin,
        hlog: HlogBuffer::new(started),
        run_start: Instant::now(),
        progress: Progress::new(jobs.len(), opts.quiet),
    };
    let mut rows: Vec<SummaryRow> = Vec::new();
    let mut series: Vec<TimeseriesRow> = Vec::new();
    let mut interrupted = false;
    let mut cell_meta = Vec::new();
    for cell in &cells {
        let conf = effective_conf(cell, Path::new("<cell dir>/store"));
        let text: String = conf.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        cell_meta.push(json!({
            "cell_id": cell.id, "label": cell.label, "params": cell.params.iter().cloned().collect::<BTreeMap<_, _>>(),
            "workload": cell.workload, "broker_conf": conf, "broker_conf_hash": fnv_hex(&text),
        }));
    }
    for (n, job) in jobs.iter().enumerate() {
        if opts.cancel.is_cancelled() || opts.stop_after_jobs.is_some_and(|k| n >= k) {
            interrupted = true;
            break;
        }
        let cell = &cells[job.cell];
        let (mut r, mut s, was_interrupted) = run_job(&mut ctx, cell, job.repetition);
        rows.append(&mut r);
        series.append(&mut s);
        write_outputs(&ctx, &rows, &series).context("writing results")?;
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
    let (_, ended_iso) = utc(SystemTime::now());
    let run_json = json!({
        "harness_revision": git_revision(),
        "host": read_trim("/proc/sys/kernel/hostname"),
        "cores": cpus.len(),
        "kernel": read_trim("/proc/sys/kernel/osrelease"),
        "start": started_iso,
        "end": ended_iso,
        "command_line": opts.command_line,
        "target": opts.target.map(|a| a.to_string()),
        "broker_bin": ctx.broker_bin.as_ref().map(|p| p.display().to_string()),
        "pinning": ctx.pinning.as_ref().map(|(b, h)| json!({"broker_cpus": b, "harness_cpus": h})),
        "pin_requested": profile.pin,
        "profile": {
            "name": profile.name, "path": profile.path.display().to_string(), "description": profile.description,
            "repetitions": profile.repetitions, "order": profile.order, "seed": profile.seed, "key_metric": profile.key_metric,
            "validity": profile.validity, "text": std::fs::read_to_string(&profile.path).unwrap_or_default(),
        },
        "cells": cell_meta,
        "jobs_planned": jobs.len(),
        "interrupted": interrupted,
    });
    report::write_atomic(
        &out_dir.join("run.json"),
        serde_json::to_string_pretty(&run_json)?.as_bytes(),
    )?;
    let table = report::table(
        &rows,
        &profile.key_metric,
        higher_is_better(&profile.key_metric),
    );
    Ok(RunOutcome {
        out_dir,
        rows,
        interrupted,
        table,
    })
}

fn write_outputs(ctx: &Ctx, rows: &[SummaryRow], series: &[TimeseriesRow]) -> std::io::Result<()> {
    let header = report::summary_header(&ctx.axis_keys);
    let recs: Vec<Vec<String>> = rows.iter().map(SummaryRow::record).collect();
    report::write_atomic(
        &ctx.out_dir.join("summary.csv"),
        &report::csv_bytes(&header, &recs)?,
    )?;
    let ts_header: Vec<String> = report::TIMESERIES_COLUMNS
        .iter()
        .map(|s| s.to_string())
        .collect();
    report::write_atomic(
        &ctx.out_dir.join("timeseries.csv"),
        &report::csv_bytes(&ts_header, series)?,
    )?;
    report::write_atomic(&ctx.out_dir.join("latency.hlog"), ctx.hlog.bytes())
}

/// The broker.conf of a cell: its keys, an ephemeral port and a fresh store unless given.
fn effective_conf(cell: &Cell, store: &Path) -> BTreeMap<String, String> {
    let mut conf = cell.broker.clone();
    conf.insert("listenPort".into(), "0".into());
    conf.entry("storePathRootDir".into())
        .or_insert_with(|| store.display().to_string());
    conf
}

struct Sample {
    /// When the interval ended.
    at: Instant,
    /// A short last interval (the drain after the schedule): too short for CPU figures.
    partial: bool,
    /// Taken after the schedule ended: only answers to sends already written arrive. Kept
    /// apart in timeseries.csv so per-second statistics never read it as a measured second.
    drain: bool,
    second: u64,
    interval: Interval,
    segment: Option<usize>,
    broker: Option<(f64, f64)>,
    harness_cpu: f64,
    info: Option<BTreeMap<String, String>>,
}

fn counter(info: &BTreeMap<String, String>, key: &str) -> Option<u64> {
    info.get(key).and_then(|v| v.trim().parse().ok())
}

/// One job: broker up, load, sampling, broker down. Never fails: problems become invalid rows.
fn run_job(
    ctx: &mut Ctx,
    cell: &Cell,
    repetition: u32,
) -> (Vec<SummaryRow>, Vec<TimeseriesRow>, bool) {
    let profile = ctx.profile;
    let job_dir = ctx.out_dir.join(format!("{}-r{repetition}", cell.id));
    let cfg_probe = LoadConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)), &cell.workload);
    let mut invalid: Option<String> = None;
    let mut interrupted = false;
    let mut samples: Vec<Sample> = Vec::new();
    let mut recorder = Recorder::new(cfg_probe.segments());
    let mut res = Resources::default();
    let harness_cpus = ctx
        .pinning
        .as_ref()
        .map_or_else(|| broker::allowed_cpus().len(), |(_, h)| h.len())
        .max(1) as f64;
    ctx.progress.line(&format!(
        "cell {} rep {repetition}: {}",
        cell.id, cell.label
    ));

    let result: Result<(), String> = (|| {
        std::fs::create_dir_all(&job_dir)
            .map_err(|e| format!("creating {}: {e}", job_dir.display()))?;
        let store = job_dir.join("store");
        let (addr, mut process, pid) = match (ctx.opts.target, &ctx.broker_bin) {
            (Some(addr), _) => (addr, None, ctx.opts.broker_pid),
            (None, Some(bin)) => {
                let conf = effective_conf(cell, &store);
                let conf_path = job_dir.join("broker.conf");
                broker::write_conf(&conf_path, &conf)
                    .map_err(|e| format!("writing broker.conf: {e}"))?;
                let cpus = ctx.pinning.as_ref().map(|(b, _)| b.as_slice());
                let p = BrokerProcess::start(
                    bin,
                    &conf_path,
                    &job_dir.join("broker.log"),
                    cpus,
                    Duration::from_secs(20),
                )
                .map_err(|e| {
                    // The broker's last words are usually the reason (a config error).
                    let log =
                        std::fs::read_to_string(job_dir.join("broker.log")).unwrap_or_default();
                    match log.lines().rev().find(|l| !l.trim().is_empty()) {
                        Some(last) => format!("{e}: {}", last.trim()),
                        None => e.to_string(),
                    }
                })?;
                let (addr, pid) = (p.addr, p.pid);
                (addr, Some(p), Some(pid))
            }
            (None, None) => return Err("no broker binary and no --target".into()),
        };
        let outcome = drive(
            ctx,
            cell,
            repetition,
            addr,
            process.as_mut(),
            pid,
            harness_cpus,
            &mut samples,
            &mut recorder,
            &mut res,
            &mut interrupted,
        );
        if let Some(p) = process {
            match p.stop(Duration::from_secs(10)) {
                Some(st) if !st.success() && outcome.is_ok() && !interrupted => {
                    invalid.get_or_insert(format!("broker exited with {st} at shutdown"));
                }
                _ => {}
            }
            let _ = std::fs::remove_dir_all(&store);
        }
        outcome
    })();
    if let Err(reason) = result {
        invalid.get_or_insert(reason);
    }
    if interrupted {
        invalid = Some("interrupted".into());
    }

    // Time series and hlog.
    let tag_base = format!("{}/r{repetition}", cell.id);
    let mut series = Vec::new();
    for s in &samples {
        let phase = match s.segment {
            _ if s.drain => "drain",
            Some(0) | None => "warmup",
            _ => "measure",
        };
        let step = match (cell.workload.model, s.segment) {
            (Model::Steps, Some(seg)) if seg > 0 => (seg - 1).to_string(),
            _ => String::new(),
        };
        let target = match cell.workload.model {
            Model::Closed => String::new(),
            _ => s
                .segment
                .and_then(|seg| cfg_probe.phases.iter().find(|p| p.segment == seg))
                .map_or(String::new(), |p| format!("{:.1}", p.rate)),
        };
        let i = &s.interval;
        let q = |h: &hdrhistogram::Histogram<u64>, p: f64| {
            if h.is_empty() {
                String::new()
            } else {
                format!("{:.3}", h.value_at_quantile(p) as f64 / 1000.0)
            }
        };
        let info_ms = |k: &str| {
            s.info
                .as_ref()
                .and_then(|m| m.get(k))
                .map_or(String::new(), |v| v.trim().to_owned())
        };
        let mut row = vec![
            profile.name.clone(),
            cell.id.clone(),
            repetition.to_string(),
            step,
            s.second.to_string(),
            phase.to_owned(),
            target,
            i.written.to_string(),
        ];
        row.push(i.counts.ok.to_string());
        row.push(i.counts.busy_total().to_string());
        row.extend(
            BusyClass::ALL
                .iter()
                .map(|c| i.counts.busy[c.index()].to_string()),
        );
        row.push(i.counts.errors().to_string());
        row.push(i.counts.timeouts.to_string());
        row.push(i.counts.dropped.to_string());
        row.push(q(&i.latency, 0.5));
        row.push(q(&i.latency, 0.99));
        row.push(q(&i.latency, 1.0));
        row.push(s.broker.map_or(String::new(), |b| format!("{:.1}", b.0)));
        row.push(s.broker.map_or(String::new(), |b| format!("{:.1}", b.1)));
        row.push(format!("{:.1}", s.harness_cpu));
        row.push(info_ms("sendThreadPoolQueueSize"));
        row.push(info_ms("sendThreadPoolQueueHeadWaitTimeMills"));
        row.push(info_ms("pageCacheLockTimeMills"));
        series.push(row);
        let start = s.at.saturating_duration_since(ctx.run_start).as_secs_f64() - 1.0;
        for (name, h) in [
            ("latency", &i.latency),
            ("service", &i.service),
            ("lag", &i.lag),
            ("busy_latency", &i.busy_latency),
        ] {
            if !h.is_empty() {
                ctx.hlog.push(&format!("{tag_base}/{name}"), start, 1.0, h);
            }
        }
    }

    // Summary rows: one per measured segment.
    let measured: Vec<&load::Phase> = cfg_probe.phases.iter().filter(|p| p.segment > 0).collect();
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
        let figs = SegmentFigures::from_segment(seg);
        let step = (cell.workload.model == Model::Steps).then(|| ph.segment - 1);
        let target_rate = (cell.workload.model != Model::Closed).then_some(ph.rate);
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
        };
        let reason = invalid.clone().or_else(|| validity_problem(profile, &row));
        if let Some(r) = reason {
            row.valid = false;
            row.invalid_reason = r;
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
    (rows, series, interrupted)
}

/// Broker and harness figures over the seconds of one measured segment (a stair in steps
/// mode); the counter comparison stays cell-wide.
fn segment_resources(samples: &[Sample], segment: usize, cell: &Resources) -> Resources {
    let seconds: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.segment == Some(segment) && !s.partial)
        .collect();
    let cpus: Vec<f64> = seconds
        .iter()
        .filter_map(|s| s.broker.map(|b| b.0))
        .collect();
    let mut res = cell.clone();
    if !seconds.is_empty() {
        res.broker_cpu_avg =
            (!cpus.is_empty()).then(|| cpus.iter().sum::<f64>() / cpus.len() as f64);
        res.broker_cpu_max = cpus.iter().copied().reduce(f64::max);
        res.harness_cpu_max = seconds.iter().map(|s| s.harness_cpu).reduce(f64::max);
    }
    res
}

fn validity_problem(profile: &Profile, row: &SummaryRow) -> Option<String> {
    let v = &profile.validity;
    let lag_p99 = row.seg.lag_us[1] as f64;
    if lag_p99 > v.max_lag_p99_us {
        return Some(format!(
            "lag p99 {lag_p99:.0} µs > {:.0} µs (generator late or max_in_flight exhausted)",
            v.max_lag_p99_us
        ));
    }
    if let Some(cpu) = row.res.harness_cpu_max {
        if cpu > v.max_harness_cpu {
            return Some(format!("harness CPU {cpu:.0}% > {:.0}%", v.max_harness_cpu));
        }
    }
    if let Some(target) = row.target_rate {
        let explained = row.seg.dropped + row.seg.timeouts + row.seg.connection_errors > 0;
        if row.achieved_rate() < v.min_achieved_ratio * target && !explained {
            return Some(format!(
                "achieved {:.0}/s < {:.0}% of target {target:.0}/s with no errors to explain it",
                row.achieved_rate(),
                v.min_achieved_ratio * 100.0
            ));
        }
    }
    None
}

/// Topic, baseline counters, the load with per-second sampling, final counters.
#[allow(clippy::too_many_arguments)]
fn drive(
    ctx: &Ctx,
    cell: &Cell,
    repetition: u32,
    addr: SocketAddr,
    mut process: Option<&mut BrokerProcess>,
    pid: Option<u32>,
    harness_cpus: f64,
    samples: &mut Vec<Sample>,
    recorder: &mut Recorder,
    res: &mut Resources,
    interrupted: &mut bool,
) -> Result<(), String> {
    let w = &cell.workload;
    let mut admin = AdminConn::connect(addr, Duration::from_secs(2))
        .map_err(|e| format!("admin connection: {e}"))?;
    if w.create_topic {
        admin
            .create_topic(&w.topic, w.queues, Duration::from_secs(5))
            .map_err(|e| format!("creating topic {}: {e}", w.topic))?;
    }
    let info_timeout = Duration::from_millis(300);
    let baseline = admin.runtime_info(info_timeout).ok();
    let mut sampler = pid.map(ProcSampler::new);
    let cfg = LoadConfig::new(addr, w);
    let total_secs = cfg.total().as_secs();
    let bar = ctx
        .progress
        .cell_bar(&format!("{} r{repetition}", cell.id), total_secs);
    let load = LoadHandle::start(cfg.clone()).map_err(|e| e.to_string())?;
    let mut crashed = None;
    let mut last_cpu = broker::self_cpu_time();
    let mut last_spin = 0u64;
    let mut last_t = Instant::now();
    let mut second = 0u64;
    let mut next = load.start + Duration::from_secs(1);
    loop {
        let finished = load.is_finished();
        if !finished && Instant::now() < next {
            std::thread::sleep(Duration::from_millis(20));
            if ctx.opts.cancel.is_cancelled() && !*interrupted {
                *interrupted = true;
                load.stop();
            }
            if crashed.is_none() {
                if let Some(st) = process.as_mut().and_then(|p| p.exited()) {
                    crashed = Some(format!("broker exited mid-cell ({st}); see broker.log"));
                    load.stop();
                }
            }
            continue;
        }
        next += Duration::from_secs(1);
        second += 1;
        let interval = load.take_interval();
        let now = Instant::now();
        let cpu = broker::self_cpu_time();
        let spin = load.spin_ns();
        let wall = (now - last_t).as_secs_f64().max(1e-3);
        let busy_cpu =
            (cpu.saturating_sub(last_cpu).as_secs_f64() - (spin - last_spin) as f64 / 1e9).max(0.0);
        let harness_cpu = busy_cpu / wall / harness_cpus * 100.0;
        let interval_start = last_t;
        (last_cpu, last_spin, last_t) = (cpu, spin, now);
        let elapsed = now
            .saturating_duration_since(load.start)
            .saturating_sub(Duration::from_millis(500));
        let segment =
            cfg.phase_at(elapsed)
                .map(|p| p.segment)
                .or(if finished { None } else { Some(0) });
        let broker_sample = sampler.as_mut().and_then(ProcSampler::sample);
        let info = admin.runtime_info(info_timeout).ok();
        let p99 = if interval.latency.is_empty() {
            0.0
        } else {
            interval.latency.value_at_quantile(0.99) as f64 / 1000.0
        };
        let msg = format!(
            "rate {}/s ok {} busy {} tmo {} drop {} p99 {p99:.3} ms lag p99 {} µs",
            interval.written,
            interval.counts.ok,
            interval.counts.busy_total(),
            interval.counts.timeouts,
            interval.counts.dropped,
            if interval.lag.is_empty() {
                0
            } else {
                interval.lag.value_at_quantile(0.99)
            }
        );
        match &bar {
            Some(b) => {
                b.set_position(second.min(total_secs));
                b.set_message(msg);
            }
            None => ctx
                .progress
                .line(&format!("  [{} r{repetition} {second}s] {msg}", cell.id)),
        }
        samples.push(Sample {
            at: now,
            partial: wall < 0.5,
            drain: finished && interval_start >= load.start + cfg.total(),
            second,
            interval,
            segment: segment.or(Some(cfg.phases.last().map_or(0, |p| p.segment))),
            broker: broker_sample,
            harness_cpu,
            info,
        });
        if finished {
            break;
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    *recorder = load.join();

    // Resources over the measured seconds.
    let measured: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.segment.is_some_and(|g| g > 0) && !s.partial)
        .collect();
    let cpus: Vec<f64> = measured
        .iter()
        .filter_map(|s| s.broker.map(|b| b.0))
        .collect();
    if !cpus.is_empty() {
        res.broker_cpu_avg = Some(cpus.iter().sum::<f64>() / cpus.len() as f64);
        res.broker_cpu_max = cpus.iter().copied().reduce(f64::max);
    }
    res.broker_rss_max_mb = samples
        .iter()
        .filter_map(|s| s.broker.map(|b| b.1))
        .reduce(f64::max);
    res.harness_cpu_max = measured.iter().map(|s| s.harness_cpu).reduce(f64::max);

    // The broker's own busy counters against ours, over the whole job (warm-up included).
    let last = admin.runtime_info(Duration::from_secs(2)).ok();
    if let (Some(b), Some(l)) = (&baseline, &last) {
        let delta = |k: &str| Some(counter(l, k)?.saturating_sub(counter(b, k).unwrap_or(0)));
        res.broker_flow_control_total = delta("flowControlTotal");
        let mut all = true;
        let mut known = false;
        for class in BusyClass::ALL {
            if class == BusyClass::Other {
                continue;
            }
            let ours: u64 = recorder
                .segments
                .iter()
                .map(|s| s.attempt_busy[class.index()])
                .sum();
            let theirs: Option<u64> = class.broker_counters().iter().map(|k| delta(k)).sum();
            if let Some(t) = theirs {
                known = true;
                all &= t == ours;
            }
        }
        res.broker_counters_match = known.then_some(all);
    }
    match crashed {
        Some(c) => Err(c),
        None => Ok(()),
    }
}
