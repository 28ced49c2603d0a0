//! One cell and repetition with `[workload] jit_warmup`: its broker is started first and takes
//! the cell's own load in warm-up windows until its JIT has gone quiet, then the cell's job
//! runs on that same broker, its schedule (warm-up included) unchanged.
//!
//! Why: a JVM compiles for its first minute of load, and a cell of a few seconds measured that
//! instead of the broker: the fidelity runs of 7 December read Apache's JIT busy for 30-109%
//! of its short cells' windows (`broker_jit_pct`), and the same cell's rate moved by up to 2x
//! from run to run with it. A production broker has been up for days. The knee search's closed
//! loop warm-up (`[knee] warm_up`) is not enough here: the first open-loop load after it found
//! the JIT busy again (24.8-109%), since a new rate and busy answers take new paths. So the
//! windows here are the cell's own load: its rate (every stair, for steps), its consumers,
//! its message size; never its fault (the profile refuses `jit_warmup` with a fault or a
//! cluster, whose brokers the job starts itself).

use crate::kind::Lifecycle;
use crate::proc::hsperf::Jit;
use crate::report::SummaryRow;
use crate::runner::context::{Ctx, Probe, ProbeStage};
use crate::runner::job::{kept_broker_exited, run_job, start_broker, stop_kept};
use crate::runner::warm_up::{run_windows, windows_in, WarmUpEnd, Window, Windows, COUNTED};
use harness_model::matrix::Cell;
use harness_model::profile::{Model, Secs, WARM_UP_JIT_QUIET, WARM_UP_WINDOW};

/// Runs the cell's job after its JIT warm-up (or without one, saying why, where the cell's
/// broker cannot outlive a warm-up). Like `run_job`, never fails.
pub fn run_warmed_job(ctx: &mut Ctx, cell: &Cell, repetition: u32) -> (Vec<SummaryRow>, bool) {
    let Some(limit) = cell.workload.jit_warmup else {
        return run_job(ctx, cell, repetition);
    };
    if let Some(why) = cannot_keep(ctx, cell) {
        ctx.progress.line(&format!("  JIT warm-up skipped: {why}"));
        return run_job(ctx, cell, repetition);
    }
    let job_dir = ctx.out_dir.join(format!("{}-r{repetition}", cell.id));
    // A broker that does not start here is started again by the job, whose row says why.
    let Some(mut broker) = std::fs::create_dir_all(&job_dir)
        .ok()
        .and_then(|()| start_broker(ctx, cell, &job_dir).ok())
    else {
        return run_job(ctx, cell, repetition);
    };
    let kept = Some((broker.addr(), broker.pid()));
    let (took_s, interrupted) = match broker.pid().and_then(Jit::of) {
        None => {
            ctx.progress
                .line("  JIT warm-up: the broker has no JIT to wait for");
            (None, false)
        }
        Some(_) => {
            ctx.progress.line(&format!(
                "  JIT warm-up: the cell's load in {}-s windows until its JIT is quiet, at most {}s",
                WARM_UP_WINDOW.0, limit.0
            ));
            let window = window_cell(cell);
            let done = run_windows(
                ctx,
                Windows {
                    cell: &window,
                    most: windows_in(limit, 1),
                    broker: kept,
                    rule: "JIT quiet",
                    warm: &jit_quiet,
                },
                repetition,
                &job_dir,
            );
            (Some(done.took_s), done.end == WarmUpEnd::Interrupted)
        }
    };
    let (mut rows, interrupted) = if interrupted || ctx.opts.cancel.is_cancelled() {
        (Vec::new(), true)
    } else {
        ctx.probe = Some(Probe {
            index: 0,
            broker: kept,
            stage: ProbeStage::Warmed,
        });
        let job = run_job(ctx, cell, repetition);
        ctx.probe = None;
        job
    };
    let exited = broker.exited();
    for row in &mut rows {
        row.res.jit_warmup_s = took_s;
        if let Some(st) = exited {
            row.invalidate(kept_broker_exited(st, "the job"));
        }
    }
    stop_kept(ctx, cell, broker, &job_dir, interrupted);
    (rows, interrupted)
}

/// Why the cell's broker cannot be kept across a warm-up, if it cannot.
fn cannot_keep(ctx: &Ctx, cell: &Cell) -> Option<&'static str> {
    if ctx.kind.lifecycle() != Lifecycle::Owned {
        Some("the broker runs already (`--target`)")
    } else if ctx.profile.cluster.is_some() || ctx.opts.namesrv.is_some() {
        Some("a cluster's brokers are started by the job")
    } else if cell.fault.is_some() {
        Some("a fault's broker is the job's own")
    } else if crate::tmpfs::cell_tmpfs(cell).is_some() {
        Some("a store on its own tmpfs is mounted by the job")
    } else {
        None
    }
}

/// The cell as one warm-up window: its own load without its fault; for steps, every stair
/// in turn, each for its share of the stairs' time. Warming at the first stair's rate alone
/// left row 3's overload stair to be compiled in the measured window (fidelity, 7 December
/// 22:40: Apache's JIT at 28-49% of those windows after 35 s of warm-up, 94-99% without).
fn window_cell(cell: &Cell) -> Cell {
    let mut c = cell.clone();
    let total: f64 = c.workload.steps.iter().map(|s| s.duration.0).sum();
    if c.workload.model == Model::Steps && total > 0.0 {
        for step in &mut c.workload.steps {
            step.duration = Secs(COUNTED.0 * step.duration.0 / total);
        }
    }
    c.workload.warmup = Secs(WARM_UP_WINDOW.0 - COUNTED.0);
    c.workload.duration = COUNTED;
    c.workload.jit_warmup = None;
    c.fault = None;
    c
}

/// Warm once the last window's JIT compiled for less than [`WARM_UP_JIT_QUIET`] of it (or
/// could not be read).
fn jit_quiet(windows: &[Window]) -> bool {
    windows
        .last()
        .is_some_and(|w| w.jit_busy.is_none_or(|j| j < WARM_UP_JIT_QUIET))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::warm_up::tests::{jvm, w};

    fn cell(text: &str) -> Cell {
        let profile = harness_model::profile::Profile::parse(
            text,
            "c.toml",
            std::path::Path::new("c.toml"),
            &[],
        )
        .unwrap();
        harness_model::matrix::expand(&profile).unwrap().remove(0)
    }

    #[test]
    fn warm_once_a_window_compiled_for_under_a_tenth_of_it() {
        assert!(!jit_quiet(&[]));
        // Apache 5.3.3's first windows after its start, then a quiet one.
        assert!(!jit_quiet(&[jvm(9_000.0, 1.04)]));
        assert!(!jit_quiet(&[jvm(9_000.0, 1.04), jvm(20_000.0, 0.1)]));
        assert!(jit_quiet(&[jvm(9_000.0, 1.04), jvm(20_000.0, 0.09)]));
        // No perf data to read: nothing to wait for.
        assert!(jit_quiet(&[w(20_000.0)]));
    }

    #[test]
    fn a_window_is_the_cells_own_load_without_its_fault() {
        let c = cell(
            "name = \"c\"\n[workload]\nmodel = \"closed\"\nconcurrency = 32\nmessage_size = 256\nwarmup = \"8s\"\nduration = \"8s\"\njit_warmup = \"40s\"\n[consumer]\nconsume_threads = 4\n",
        );
        let win = window_cell(&c);
        assert_eq!(win.workload.model, Model::Closed);
        assert_eq!(win.workload.concurrency, 32);
        assert_eq!(win.workload.message_size, 256);
        assert_eq!(
            win.workload.warmup.0 + win.workload.duration.0,
            WARM_UP_WINDOW.0
        );
        assert_eq!(win.workload.jit_warmup, None);
        assert!(win.consumer.is_some(), "the consumers' paths warm too");
    }

    #[test]
    fn steps_warm_on_every_stair_in_one_window() {
        let c = cell(
            "name = \"c\"\n[workload]\nmodel = \"steps\"\nsteps = [{ rate = 2000, duration = \"10s\" }, { rate = 6000, duration = \"30s\" }]\njit_warmup = \"20s\"\n",
        );
        let win = window_cell(&c);
        assert_eq!(win.workload.model, Model::Steps);
        let stairs: Vec<(f64, f64)> = win
            .workload
            .steps
            .iter()
            .map(|s| (s.rate, s.duration.0))
            .collect();
        assert_eq!(stairs, vec![(2000.0, 1.0), (6000.0, 3.0)]);
        let schedule: f64 = harness_model::schedule::plan(&win.workload)
            .1
            .iter()
            .map(|p| p.duration.as_secs_f64())
            .sum();
        assert!((schedule - WARM_UP_WINDOW.0).abs() < 1e-9, "{schedule}");
    }
}
