//! `[knee] warm_up`: closed-loop load on a knee search's broker before its first probe, until
//! the broker's rate stops growing. A JVM broker answers a fraction of its steady rate in its
//! first seconds (Apache 5.3.3 on this machine: 0.7k/s after 1 s, 32k/s from about 45 s), so a
//! search that starts on a cold JVM measures the JIT: the same cell's knee came out 3,364,
//! 6,727 and 13,454 sends/s in three runs that differed only in how long the first probe had
//! settled. A closed loop (a fixed number of sends in flight) cannot overload the cold broker
//! the way an open loop at a fixed rate does, so the warm-up itself cannot push it into the
//! metastable collapse `docs/src/apache.md` shows.
//!
//! A JVM broker's rate climbs in steps (Apache 5.3.3: a plateau near 11-13k/s at 15-20 s, then
//! 17-24k/s at 35-45 s), so a steady rate alone can end its warm-up on a plateau. A broker that
//! publishes HotSpot perf data ([`crate::proc::hsperf`]) is steady only once its JIT, too, has
//! gone quiet: it compiled for less than [`WARM_UP_JIT_QUIET`] of the window.
//!
//! The windows are jobs on the search's broker ([`crate::runner::warm_up`]).

use std::net::SocketAddr;
use std::path::Path;

use statrs::statistics::Statistics;

use crate::runner::context::Ctx;
use crate::runner::warm_up::{
    run_windows, windows_in, WarmUp, WarmUpEnd, Window, Windows, COUNTED,
};
use harness_model::matrix::Cell;
use harness_model::profile::{
    Knee, Model, Secs, WARM_UP_JIT_QUIET, WARM_UP_NOISE_Z, WARM_UP_STEADY, WARM_UP_WINDOW,
};

/// Runs the warm-up against the search's broker (`broker`: the shared one, or None when the
/// kind drives an existing broker), writes `warm-up.csv` into `job_dir` and says how it ended.
pub fn warm_up(
    ctx: &mut Ctx,
    cell: &Cell,
    repetition: u32,
    broker: Option<(SocketAddr, Option<u32>)>,
    job_dir: &Path,
) -> WarmUp {
    let knee = &ctx.profile.knee;
    let Some(limit) = knee.warm_up else {
        return WarmUp {
            end: WarmUpEnd::Steady,
            last_ok_per_s: None,
            took_s: 0.0,
        };
    };
    let window = window_cell(cell, knee);
    ctx.progress.line(&format!(
        "  warm-up: {} sends in flight, {}-s windows, at most {}s",
        knee.warm_up_concurrency, WARM_UP_WINDOW.0, limit.0
    ));
    // The profile refuses a limit below two windows.
    let windows = Windows {
        cell: &window,
        most: windows_in(limit, 2),
        broker,
        rule: "steady",
        warm: &steady,
    };
    run_windows(ctx, windows, repetition, job_dir)
}

/// The cell as one warm-up window: a closed loop, no consumers, no fault.
fn window_cell(cell: &Cell, knee: &Knee) -> Cell {
    let mut c = cell.clone();
    c.workload.model = Model::Closed;
    c.workload.concurrency = knee.warm_up_concurrency;
    c.workload.warmup = Secs(WARM_UP_WINDOW.0 - COUNTED.0);
    c.workload.duration = COUNTED;
    c.consumer = None;
    c.fault = None;
    c
}

/// Whether the last window is within [`WARM_UP_STEADY`] of the one before it, either way:
/// neither climbing (a JIT) nor falling (a dip: on 5 December a 5.3.3 JVM ran 12.8k then
/// 10.3k/s at 16 and 21 s, still climbing; or the model's fresh store, 76.7k/s in its first
/// window, 52.7k then 54.2k/s in its fourth and fifth, 6 December). Measured against the best
/// window instead, the model's early peak kept it warming for the whole limit.
/// Where the two windows' seconds spread more than that, the bound is [`WARM_UP_NOISE_Z`]
/// standard errors of the difference of their means instead: a step inside the windows' own
/// noise is no climb and no fall.
/// On a JVM the last window's JIT must also have been quiet ([`WARM_UP_JIT_QUIET`]).
fn steady(windows: &[Window]) -> bool {
    let [.., before, last] = windows else {
        return false;
    };
    let bound = (before.ok_per_s * WARM_UP_STEADY).max(WARM_UP_NOISE_Z * noise(before, last));
    before.ok_per_s > 0.0
        && (last.ok_per_s - before.ok_per_s).abs() < bound
        && last.jit_busy.is_none_or(|j| j < WARM_UP_JIT_QUIET)
}

/// The standard error of the difference of two windows' mean rates, from the spread of each
/// one's seconds (Welch's); 0 when either has fewer than two seconds.
fn noise(a: &Window, b: &Window) -> f64 {
    // statrs's `variance` is the sample variance (n - 1).
    fn var_of_mean(s: &[f64]) -> Option<f64> {
        (s.len() >= 2).then(|| s.variance() / s.len() as f64)
    }
    match (var_of_mean(&a.per_second), var_of_mean(&b.per_second)) {
        (Some(va), Some(vb)) => (va + vb).sqrt(),
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::runner::warm_up::tests::{jvm, w};

    #[test]
    fn steady_once_a_window_is_within_five_percent_of_the_one_before_it() {
        // Apache 5.3.3's climb (5 December): 5-s windows near 15k, 22k, 28k, 30k, 31k/s.
        assert!(!steady(&[w(15_000.0)]));
        assert!(!steady(&[w(15_000.0), w(22_000.0)]));
        assert!(!steady(&[w(28_000.0), w(30_000.0)]));
        assert!(steady(&[w(30_000.0), w(31_000.0)]));
        // A dip is not steady, nor the climb back out of it.
        assert!(!steady(&[w(12_754.0), w(10_340.0)]));
        assert!(!steady(&[w(12_754.0), w(10_340.0), w(12_900.0)]));
        // The model's fresh store (6 December): a fall, then level.
        let fall = [76_702.0, 68_718.0, 60_403.0, 52_684.0, 54_169.0].map(w);
        assert!(!steady(&fall[..4]));
        assert!(steady(&fall));
    }

    fn seconds(per_second: &[f64]) -> Window {
        Window {
            per_second: per_second.to_vec(),
            ..w(per_second.iter().sum::<f64>() / per_second.len() as f64)
        }
    }

    #[test]
    fn a_step_inside_the_windows_own_noise_is_steady() {
        // The model (5.3, spin lock, 2 send threads) under a closed loop of 64, its seconds
        // from `timeseries.csv` (7 December 15:05, a 256 MiB CommitLog): two windows 6% apart
        // whose seconds spread by 5-6k/s each: no climb, though more than 5%.
        let a = seconds(&[59_315.0, 47_269.0, 47_890.0, 54_524.0]);
        let b = seconds(&[62_725.0, 55_722.0, 52_531.0, 50_234.0]);
        assert!(b.ok_per_s > a.ok_per_s * (1.0 + WARM_UP_STEADY));
        assert!(steady(&[a, b]));
        // The same broker switching from its fast regime to its slow one (1 GiB CommitLog):
        // seconds spread by 4-5k/s, means 29k/s apart, is a fall.
        let fast = seconds(&[88_501.0, 85_478.0, 82_562.0, 79_604.0]);
        let slow = seconds(&[61_235.0, 55_031.0, 50_433.0, 55_675.0]);
        assert!(!steady(&[fast.clone(), slow.clone()]));
        assert!(!steady(&[slow, fast]));
        // One second each tells nothing about the spread: the 5% bound alone.
        assert!(!steady(&[seconds(&[52_000.0]), seconds(&[56_000.0])]));
    }

    #[test]
    fn a_jvm_is_steady_only_once_its_jit_is_quiet() {
        // Apache 5.3.3's plateau at 15-20 s (7 December 00:49): level, but the JIT still busy.
        assert!(!steady(&[jvm(11_761.0, 0.9), jvm(11_442.0, 0.8)]));
        assert!(!steady(&[jvm(11_761.0, 0.1), jvm(11_442.0, 0.1)]));
        assert!(steady(&[jvm(23_066.0, 0.2), jvm(24_141.0, 0.05)]));
        // Quiet but still climbing is not steady either.
        assert!(!steady(&[jvm(17_441.0, 0.0), jvm(23_066.0, 0.0)]));
    }

    #[test]
    fn a_window_is_a_closed_loop_without_consumers_or_faults() {
        let text = "name = \"k\"\n[workload]\nmodel = \"knee\"\nrate = 1000\n[knee]\nwarm_up = \"60s\"\nwarm_up_concurrency = 32\n[slo]\nterms = [\"p99_ms <= 100\"]\n";
        let profile = harness_model::profile::Profile::parse(
            text,
            "k.toml",
            std::path::Path::new("k.toml"),
            &[],
        )
        .unwrap();
        let cell = &harness_model::matrix::expand(&profile).unwrap()[0];
        let c = window_cell(cell, &profile.knee);
        assert_eq!(c.workload.model, Model::Closed);
        assert_eq!(c.workload.concurrency, 32);
        assert_eq!(
            c.workload.warmup.0 + c.workload.duration.0,
            WARM_UP_WINDOW.0
        );
        assert!(c.consumer.is_none() && c.fault.is_none());
    }
}
