//! Warm-up windows: short jobs on a broker that outlives them, run before the measured load
//! until a rule says the broker is warm, or a limit. Two users: a knee search's `[knee]
//! warm_up` (a closed loop until the rate is steady, `runner::knee_warm_up`) and a cell's
//! `[workload] jit_warmup` (its own load until the JVM's JIT is quiet, `runner::jit_job`).
//!
//! The windows' seconds stay out of the run's streams ([`ProbeStage::WarmUp`]); what they
//! measured goes to the progress lines and to the job folder's `warm-up.csv`.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use crate::proc::hsperf::Jit;
use crate::runner::context::{Ctx, Probe, ProbeStage};
use crate::runner::job::run_job;
use harness_model::matrix::Cell;
use harness_model::profile::{Secs, WARM_UP_WINDOW};

/// The part of each window that is counted; the rest lets its connections settle.
pub const COUNTED: Secs = Secs(4.0);

/// One warm-up window's counted seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// Seconds since the warm-up began, at the window's end.
    pub end_s: f64,
    pub ok_per_s: f64,
    /// The ok rate of each of its full seconds: how much the window's rate spreads.
    pub per_second: Vec<f64>,
    pub busy_pct: f64,
    pub p99_ms: f64,
    pub timeouts: u64,
    pub valid: bool,
    /// The share of the window the broker's JIT spent compiling; None for a broker without
    /// one (or whose perf data could not be read).
    pub jit_busy: Option<f64>,
}

/// How a warm-up ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarmUpEnd {
    /// The rule said the broker is warm.
    Steady,
    /// The limit ran out first: the measured load meets a broker still warming.
    Limit,
    /// A window sent nothing (the broker is gone); the measured load says why.
    NoLoad,
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

impl WarmUpEnd {
    /// The progress line's words.
    pub fn said(self, rule: &str) -> String {
        match self {
            WarmUpEnd::Steady => rule.to_owned(),
            WarmUpEnd::Limit => format!("not {rule} when the limit ran out"),
            WarmUpEnd::NoLoad => "a window sent nothing".to_owned(),
            WarmUpEnd::Interrupted => "interrupted".to_owned(),
        }
    }
}

/// What a warm-up did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WarmUp {
    pub end: WarmUpEnd,
    /// The `ok_per_s` of the last valid window that sent something; None when no window was
    /// valid (or none ran).
    pub last_ok_per_s: Option<f64>,
    /// Wall seconds from the first window's start to the last one's end.
    pub took_s: f64,
}

/// The windows to run: each one `cell` (already shaped as a window of [`WARM_UP_WINDOW`]),
/// at most `most` of them, against `broker` (its address and pid), until `warm` says so.
pub struct Windows<'a> {
    pub cell: &'a Cell,
    pub most: usize,
    pub broker: Option<(SocketAddr, Option<u32>)>,
    /// What `warm` means, for the progress lines ("steady", "JIT quiet").
    pub rule: &'a str,
    pub warm: &'a dyn Fn(&[Window]) -> bool,
}

/// The number of windows a limit allows: at least `least`.
pub fn windows_in(limit: Secs, least: usize) -> usize {
    ((limit.0 / WARM_UP_WINDOW.0).floor() as usize).max(least)
}

/// Runs the windows, writes `warm-up.csv` into `job_dir` and says how they ended.
pub fn run_windows(ctx: &mut Ctx, w: Windows<'_>, repetition: u32, job_dir: &Path) -> WarmUp {
    let began = Instant::now();
    let pid = w.broker.and_then(|(_, pid)| pid);
    let mut jit = pid.and_then(Jit::of).map(|j| (j, Instant::now()));
    let mut windows: Vec<Window> = Vec::new();
    let mut end = WarmUpEnd::Limit;
    for _ in 0..w.most {
        if ctx.opts.cancel.is_cancelled() {
            end = WarmUpEnd::Interrupted;
            break;
        }
        ctx.probe = Some(Probe {
            index: 0,
            broker: w.broker,
            stage: ProbeStage::WarmUp,
        });
        let (mut rows, interrupted) = run_job(ctx, w.cell, repetition);
        ctx.probe = None;
        let Some(mut row) = rows.pop() else {
            end = WarmUpEnd::NoLoad;
            break;
        };
        // Over the whole window, settling second included: the JIT does not pause for it.
        let now = pid.and_then(Jit::of).map(|j| (j, Instant::now()));
        let jit_busy = match (jit, now) {
            (Some((a, at)), Some((b, bt))) => {
                Some(a.busy_share(&b, bt.duration_since(at).as_secs_f64()))
            }
            _ => None,
        };
        jit = now;
        let window = Window {
            end_s: began.elapsed().as_secs_f64(),
            ok_per_s: row.ok_rate(),
            per_second: std::mem::take(&mut row.res.ok_per_second),
            busy_pct: row.busy_rate() * 100.0,
            p99_ms: row.seg.latency_us[2] as f64 / 1000.0,
            timeouts: row.seg.counts.timeouts,
            valid: row.valid,
            jit_busy,
        };
        ctx.progress.line(&format!(
            "  warm-up window {}: {:.0} ok/s, busy {:.2}%, p99 {:.1} ms{}",
            windows.len(),
            window.ok_per_s,
            window.busy_pct,
            window.p99_ms,
            window
                .jit_busy
                .map(|j| format!(", JIT compiling {:.0}% of it", j * 100.0))
                .unwrap_or_default()
        ));
        let sent = row.seg.sent;
        windows.push(window);
        if interrupted {
            end = WarmUpEnd::Interrupted;
            break;
        }
        if sent == 0 {
            end = WarmUpEnd::NoLoad;
            break;
        }
        if (w.warm)(&windows) {
            end = WarmUpEnd::Steady;
            break;
        }
    }
    let took_s = began.elapsed().as_secs_f64();
    ctx.progress.line(&format!(
        "  warm-up: {} after {took_s:.0}s ({} windows)",
        end.said(w.rule),
        windows.len()
    ));
    let path = job_dir.join("warm-up.csv");
    let written = std::fs::create_dir_all(job_dir)
        .and_then(|()| harness_results::write_atomic(&path, csv(&windows).as_bytes()));
    if let Err(e) = written {
        eprintln!("warning: writing {}: {e}", path.display());
    }
    WarmUp {
        end,
        last_ok_per_s: last_valid(&windows),
        took_s,
    }
}

/// The rate of the last valid window that sent something.
fn last_valid(windows: &[Window]) -> Option<f64> {
    windows
        .iter()
        .rev()
        .find(|w| w.valid && w.ok_per_s > 0.0)
        .map(|w| w.ok_per_s)
}

fn csv(windows: &[Window]) -> String {
    let mut out = String::from(
        "window,end_s,ok_per_s,busy_pct,p99_ms,timeouts,valid,jit_busy_pct,ok_per_second\n",
    );
    for (i, w) in windows.iter().enumerate() {
        let jit = w
            .jit_busy
            .map(|j| format!("{:.1}", j * 100.0))
            .unwrap_or_default();
        // Space-separated inside its column, so the file stays one row a window.
        let seconds: Vec<String> = w.per_second.iter().map(|r| format!("{r:.0}")).collect();
        let _ = writeln!(
            out,
            "{i},{:.1},{:.1},{:.3},{:.3},{},{},{jit},{}",
            w.end_s,
            w.ok_per_s,
            w.busy_pct,
            w.p99_ms,
            w.timeouts,
            w.valid,
            seconds.join(" ")
        );
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn w(ok: f64) -> Window {
        Window {
            end_s: 0.0,
            ok_per_s: ok,
            per_second: Vec::new(),
            busy_pct: 0.0,
            p99_ms: 0.0,
            timeouts: 0,
            valid: true,
            jit_busy: None,
        }
    }

    pub(crate) fn jvm(ok: f64, jit: f64) -> Window {
        Window {
            jit_busy: Some(jit),
            ..w(ok)
        }
    }

    #[test]
    fn the_rate_passed_on_is_the_last_valid_window() {
        let mut late = w(40_000.0);
        late.valid = false;
        assert_eq!(last_valid(&[w(9_000.0), w(31_000.0), late]), Some(31_000.0));
        assert_eq!(last_valid(&[w(0.0)]), None);
        assert_eq!(last_valid(&[]), None);
    }

    #[test]
    fn the_csv_has_a_line_per_window() {
        let text = csv(&[w(100.0), jvm(200.0, 0.125)]);
        assert_eq!(text.lines().count(), 3);
        assert!(text.lines().nth(2).unwrap().starts_with("1,0.0,200.0,"));
        assert!(text.lines().nth(2).unwrap().contains(",true,12.5,"));
    }

    #[test]
    fn a_limit_allows_whole_windows_and_at_least_the_least() {
        assert_eq!(windows_in(Secs(60.0), 2), 14);
        assert_eq!(windows_in(Secs(4.25), 2), 2);
        assert_eq!(windows_in(Secs(4.25), 1), 1);
        assert_eq!(windows_in(Secs(30.0), 1), 7);
    }
}
