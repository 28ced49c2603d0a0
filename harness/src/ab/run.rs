//! `harness ab`: both sides resolved (built if revisions), then the capacity pass and the
//! latency pass, each `rounds` rounds of one A job and one B job in ABBA order (A,B then B,A,
//! ...), so that a drift of the machine during the run hits both sides alike. Every job is a
//! one-cell `harness run` with a fresh broker of its side and the profile's pinning. The
//! folder is rewritten after every job; at the end the paired verdict decides the exit code.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::exit;
use crate::provenance::{utc, Provenance};
use crate::report::write_atomic;
use crate::runner::{check_broker_profile, run_profile, RunOptions};
use harness_model::matrix;
use harness_model::profile::{Model, Profile};
use harness_results::read as load;

use super::args::AbArgs;
use super::build::{resolve_sides, BuildPlaces, SideBinary};
use super::hook::gate_ab;
use super::output::{write_summary, write_timeseries, AbRow};
use super::paired::median;
use super::verdict::{judge, needs_latency_pass, table, CAPACITY_PASS, LATENCY_PASS};

const SIDES: [&str; 2] = ["a", "b"];

/// The profile of one side: the common profile plus that side's `--set-a` / `--set-b`.
fn side_profile(base: &Profile, sets: &[String]) -> anyhow::Result<Profile> {
    let mut p = base.clone();
    for s in sets {
        p.apply_set(s).map_err(exit::invalid)?;
    }
    p.repetitions = 1;
    Ok(p)
}

/// The latency pass of a side's profile: the same workload, open loop at `rate`.
fn latency_profile(p: &Profile, rate: f64, duration: Option<f64>) -> anyhow::Result<Profile> {
    let mut p = p.clone();
    p.apply_set("workload.model=open")
        .and_then(|()| p.apply_set(&format!("workload.rate={rate:.1}")))
        .map_err(exit::invalid)?;
    if let Some(d) = duration {
        p.apply_set(&format!("workload.duration={d}"))
            .map_err(exit::invalid)?;
    }
    Ok(p)
}

fn check_profile(p: &Profile) -> anyhow::Result<()> {
    let cells = matrix::expand(p).map_err(|m| exit::invalid(anyhow::anyhow!(m)))?;
    if cells.len() != 1 {
        return Err(exit::invalid(anyhow::anyhow!(
            "{}: `harness ab` compares two builds on one configuration, and this profile has {} cells; remove the [matrix] axes or pin each with --set",
            p.path.display(),
            cells.len()
        )));
    }
    if p.workload.model != Model::Closed {
        return Err(exit::invalid(anyhow::anyhow!(
            "{}: the capacity pass needs a closed-loop workload; write `model = \"closed\"` and a `concurrency` in [workload] (the latency pass is derived from it)",
            p.path.display()
        )));
    }
    Ok(())
}

/// Runs `harness ab` and returns the gate's exit code.
pub fn run_ab(args: &AbArgs) -> anyhow::Result<ExitCode> {
    if !args.profile.is_file() {
        return Err(exit::invalid(anyhow::anyhow!(
            "no profile {}{}",
            args.profile.display(),
            harness_model::locate::closest_profile(&args.profile).map_or(
                String::new(),
                |p| format!("; did you mean {}?", p.display())
            )
        )));
    }
    let base = Profile::load(&args.profile, &args.set).map_err(exit::invalid)?;
    check_profile(&base)?;
    let rounds = args.rounds.unwrap_or(base.repetitions);
    if rounds == 0 {
        return Err(exit::invalid(anyhow::anyhow!(
            "--rounds must be at least 1"
        )));
    }
    let settings = base.ab.clone().unwrap_or_default();
    let profiles = [
        side_profile(&base, &args.set_a)?,
        side_profile(&base, &args.set_b)?,
    ];
    for p in &profiles {
        check_profile(p)?;
    }
    let places = BuildPlaces {
        repo: args.repo.clone(),
        build_dir: args.build_dir.clone(),
        cargo_target_dir: args
            .cargo_target_dir
            .clone()
            .unwrap_or_else(|| args.build_dir.join("cargo")),
    };
    let sides = resolve_sides([("a", &args.a), ("b", &args.b)], &places, args.quiet)
        .map_err(exit::invalid)?;
    // Each side's keys against its own binary before the first job: a typo in `--set-b`, or a
    // key the base revision does not know yet, is refused now and not after side A's first job.
    for (side, profile) in sides.iter().zip(&profiles) {
        check_broker_profile(&side.bin, profile)
            .with_context(|| format!("side {} ({})", side.side, side.spec))?;
    }

    let started = SystemTime::now();
    let (stamp, started_iso) = utc(started);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("{}-ab-{stamp}", base.name)));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let cancel = CancellationToken::new();
    let done = CancellationToken::new();
    let signals = crate::interrupt::watch_ctrl_c("ab-signal", &cancel, &done)?;
    let mut state = AbState {
        args,
        cpus: crate::proc::pin::process_cpus().to_vec(),
        out: &out,
        sides: &sides,
        settings_fraction: settings.latency_fraction,
        started_iso,
        rows: Vec::new(),
        latency_rate: None,
        cancel,
    };
    // The latency pass only when a judged metric needs it (a capacity-only gate is half as long).
    let latency = needs_latency_pass(&settings.metrics);
    let result = state.run_passes(
        &profiles,
        rounds,
        latency.then_some(settings.latency_duration.map(|d| d.0)),
    );
    done.cancel();
    let _ = signals.join();
    let interrupted = result?;
    state.write_record(
        if interrupted {
            "interrupted"
        } else {
            "finished"
        },
        rounds,
    )?;
    write_timeseries(&out, &state.rows).context("writing timeseries.csv")?;
    if interrupted {
        eprintln!("interrupted: finished jobs were kept in {}", out.display());
        return Ok(ExitCode::from(exit::INTERRUPTED));
    }
    let run = load::load(&out).map_err(exit::invalid)?;
    print!("\n{}", table(&judge(&run, &settings, 0x5eed)));
    println!("results: {}", out.display());
    // The same verdict as `harness gate --candidate OUT --rules PROFILE`.
    let code = gate_ab(&out, None, Some(&args.profile), None, None, false)?
        .context("the A/B folder just written does not read as one")?;
    Ok(ExitCode::from(code))
}

struct AbState<'a> {
    args: &'a AbArgs,
    /// The CPUs this process may use, taken before the first job: every job of `harness run`
    /// pins the calling thread to the generator's half, and the next job would then see only
    /// that half, split nothing, and run its broker unpinned on the generator's core.
    cpus: Vec<usize>,
    out: &'a Path,
    sides: &'a [SideBinary; 2],
    settings_fraction: f64,
    started_iso: String,
    rows: Vec<AbRow>,
    latency_rate: Option<f64>,
    cancel: CancellationToken,
}

impl AbState<'_> {
    /// The capacity pass, then the latency pass when `latency` is Some (with its duration
    /// when that is Some); Ok(true) when interrupted.
    fn run_passes(
        &mut self,
        profiles: &[Profile; 2],
        rounds: u32,
        latency: Option<Option<f64>>,
    ) -> anyhow::Result<bool> {
        self.write_record("running", rounds)?;
        let passes: &[&'static str] = match latency {
            Some(_) => &[CAPACITY_PASS, LATENCY_PASS],
            None => &[CAPACITY_PASS],
        };
        let latency_duration = latency.flatten();
        for &pass in passes {
            let pass_profiles = if pass == LATENCY_PASS {
                let rate = self.latency_rate()?;
                self.latency_rate = Some(rate);
                if !self.args.quiet {
                    eprintln!(
                        "ab: latency pass at {rate:.0}/s ({} x side A's median capacity)",
                        self.settings_fraction
                    );
                }
                [
                    latency_profile(&profiles[0], rate, latency_duration)?,
                    latency_profile(&profiles[1], rate, latency_duration)?,
                ]
            } else {
                profiles.clone()
            };
            for round in 1..=rounds {
                let order = if round % 2 == 1 { [0, 1] } else { [1, 0] };
                for s in order {
                    if self.cancel.is_cancelled() {
                        return Ok(true);
                    }
                    let interrupted = self.run_job(&pass_profiles[s], s, round, pass)?;
                    self.write_record("running", rounds)?;
                    if interrupted {
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }

    /// `latency_fraction` of side A's median capacity over its valid rounds.
    fn latency_rate(&self) -> anyhow::Result<f64> {
        let capacities: Vec<f64> = self
            .rows
            .iter()
            .filter(|r| r.pass == CAPACITY_PASS && r.side == "a" && r.row.valid)
            .map(|r| r.row.ok_rate())
            .filter(|c| *c > 0.0)
            .collect();
        let cap = median(&capacities).with_context(|| {
            format!(
                "no valid capacity round on side A (see {}/jobs/*/broker.log and summary.csv)",
                self.out.display()
            )
        })?;
        Ok((cap * self.settings_fraction).max(1.0))
    }

    /// One job; Ok(true) when it was interrupted.
    fn run_job(
        &mut self,
        profile: &Profile,
        side: usize,
        round: u32,
        pass: &'static str,
    ) -> anyhow::Result<bool> {
        let dir = format!("jobs/{pass}-r{round}-{}", SIDES[side]);
        let opts = RunOptions {
            target: None,
            out: Some(self.out.join(&dir)),
            broker_pid: None,
            broker_bin: Some(self.sides[side].bin.clone()),
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
            cancel: self.cancel.clone(),
            stop_after_jobs: None,
            quiet: true,
            ..Default::default()
        };
        crate::proc::pin::pin_current_thread(&self.cpus)
            .context("restoring the CPU set before a job")?;
        let outcome = run_profile(profile, &opts)
            .with_context(|| format!("side {} ({}), {dir}", SIDES[side], self.sides[side].spec))?;
        for mut row in outcome.rows {
            row.repetition = round;
            row.params.clear();
            let r = AbRow {
                side: SIDES[side],
                round,
                pass,
                row,
                dir: dir.clone(),
            };
            if !self.args.quiet {
                eprintln!(
                    "ab: {pass:<8} round {round:>2} side {}: ok {:>9.1}/s  p50 {:>8.3} ms  p99 {:>8.3} ms  cpu {:>8} s/1k{}",
                    r.side,
                    r.row.ok_rate(),
                    r.row.seg.latency_us[0] as f64 / 1000.0,
                    r.row.seg.latency_us[2] as f64 / 1000.0,
                    r.cpu_s_per_1k().map_or("-".into(), |c| format!("{c:.4}")),
                    if r.row.valid {
                        String::new()
                    } else {
                        format!("  INVALID: {}", r.row.invalid_reason)
                    }
                );
            }
            self.rows.push(r);
        }
        write_summary(self.out, &self.rows).context("writing summary.csv")?;
        Ok(outcome.interrupted)
    }

    fn write_record(&self, status: &str, rounds: u32) -> anyhow::Result<()> {
        let p = Provenance::gather();
        let ended = (status != "running").then(|| utc(SystemTime::now()).1);
        let sets = [&self.args.set_a, &self.args.set_b];
        let sides: Vec<serde_json::Value> = self
            .sides
            .iter()
            .zip(sets)
            .map(|(s, set)| {
                serde_json::json!({
                    "side": s.side, "spec": s.spec, "revision": s.revision,
                    "binary": s.bin, "binary_fnv1a64": crate::provenance::file_hash(&s.bin), "set": set,
                })
            })
            .collect();
        let record = serde_json::json!({
            "kind": "ab",
            "status": status,
            "start": self.started_iso,
            "end": ended,
            "command_line": std::env::args().collect::<Vec<_>>().join(" "),
            "harness_revision": p.harness_revision,
            "harness_tree": p.harness_tree.as_json(),
            "harness_bin_fnv1a64": p.harness_bin_hash,
            "host": p.host,
            "kernel": p.kernel,
            "profile": self.args.profile,
            "profile_text": crate::auth::redact(&std::fs::read_to_string(&self.args.profile).unwrap_or_default()),
            "set": self.args.set,
            "rounds": rounds,
            "order": "ABBA: odd rounds A then B, even rounds B then A; capacity pass, then latency pass",
            "latency_fraction": self.settings_fraction,
            "latency_rate": self.latency_rate,
            "sides": sides,
            "jobs": self.rows.iter().map(|r| &r.dir).collect::<Vec<_>>(),
        });
        write_atomic(
            &self.out.join("run.json"),
            serde_json::to_string_pretty(&record)?.as_bytes(),
        )
        .context("writing run.json")
    }
}
