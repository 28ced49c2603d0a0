//! `[workload] jit_warmup` (`runner::jit_job`): a JVM broker takes the cell's own load in
//! windows until its JIT is quiet, then the cell's job runs on that same broker; a broker
//! without a JIT runs its job at once; the profile refuses it where the job must start its own
//! brokers. The Apache test is `#[ignore]`d without a JDK (build.rs sets `no_jdk`), so
//! `make test` counts it as skipped; under CI it always runs.

use std::path::Path;
use std::process::{Command, Output};

mod common;

fn run(dir: &Path, text: &str) -> (Output, String) {
    let profile = dir.join("p.toml");
    std::fs::write(&profile, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["run", profile.to_str().unwrap(), "--out"])
        .arg(dir.join("out"))
        .env("BROKER_UNDER_TEST_BIN", common::broker_bin())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

/// `summary.csv`'s one row, by column name.
fn summary_row(dir: &Path) -> std::collections::BTreeMap<String, String> {
    let text = std::fs::read_to_string(dir.join("out/summary.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 1, "{text}");
    header
        .iter()
        .zip(rows[0].split(','))
        .map(|(h, v)| (h.to_string(), v.to_string()))
        .collect()
}

// The profiles' lag limit is 20 s: these tests run beside the other tests of the binary (a JVM
// compiling among them), where a debug generator's lag p99 reached 110 ms under CI; what they
// check is the warm-up, not the generator's punctuality.

/// The seconds `timeseries.csv` holds.
fn series_seconds(dir: &Path) -> usize {
    let text = std::fs::read_to_string(dir.join("out/timeseries.csv")).unwrap();
    text.lines().count() - 1
}

#[test]
fn a_broker_without_a_jit_runs_its_job_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (out, text) = run(
        dir.path(),
        "name = \"p\"\n[workload]\nrate = 200\nwarmup = \"1s\"\nduration = \"2s\"\njit_warmup = \"30s\"\n[validity]\nmax_lag_p99_us = 20000000\n",
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("the broker has no JIT to wait for"), "{text}");
    let row = summary_row(dir.path());
    assert_eq!(row["valid"], "true", "{row:?}");
    assert_eq!(row["jit_warmup_s"], "", "no warm-up ran");
    assert_eq!(row["step"], "", "a warmed cell's row is no knee probe");
    assert_eq!(row["sent"], "400", "2 s at 200/s measured");
    let cell_dir = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    assert!(!cell_dir.join("warm-up.csv").exists());
    // 1 s of warm-up, 2 measured, the drain: nothing before them.
    assert!(
        series_seconds(dir.path()) <= 5,
        "{}",
        series_seconds(dir.path())
    );
}

#[test]
fn a_profile_with_a_fault_refuses_it_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let (out, text) = run(
        dir.path(),
        "name = \"p\"\n[workload]\nrate = 200\njit_warmup = \"30s\"\n[fault]\nkill = \"1s\"\n",
    );
    assert_eq!(
        out.status.code(),
        Some(harness::exit::INVALID_INPUT as i32),
        "{text}"
    );
    assert!(
        text.contains("p.toml:4"),
        "names the line of jit_warmup: {text}"
    );
    assert!(
        text.contains("remove `jit_warmup`, or run without [fault]"),
        "{text}"
    );
    let (out, text) = run(
        dir.path(),
        "name = \"p\"\n[workload]\nmodel = \"closed\"\njit_warmup = \"2s\"\n",
    );
    assert_eq!(
        out.status.code(),
        Some(harness::exit::INVALID_INPUT as i32),
        "{text}"
    );
    assert!(
        text.contains("at least one window, 4.25s (got 2s)"),
        "{text}"
    );
}

/// Apache 5.3.3 a few seconds old compiles for most of every second; its warm-up windows run
/// until one compiled under 10% of itself (or 40 s ran out), and the job's measured window,
/// on the same JVM, compiles less than the first window did. The windows' seconds stay out of
/// `timeseries.csv`, and the JVM is gone after the run.
#[test]
#[cfg_attr(
    no_jdk,
    ignore = "no JDK: install openjdk-17-jdk-headless (apt-get) to start Apache RocketMQ"
)]
fn a_jvm_s_job_runs_after_its_jit_went_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let (out, text) = run(
        dir.path(),
        "name = \"p\"\n[workload]\nmodel = \"closed\"\nconcurrency = 16\nwarmup = \"1s\"\nduration = \"3s\"\njit_warmup = \"40s\"\n[broker]\nkind = \"apache\"\nversion = \"5.3.3\"\n[validity]\nmax_lag_p99_us = 20000000\n",
    );
    assert!(out.status.success(), "{text}");
    let row = summary_row(dir.path());
    assert_eq!(row["valid"], "true", "{row:?}");
    assert_eq!(row["step"], "");
    let took: f64 = row["jit_warmup_s"].parse().expect("a warm-up ran");
    let cell_dir = dir
        .path()
        .join("out")
        .join(format!("{}-r1", row["cell_id"]));
    let windows = std::fs::read_to_string(cell_dir.join("warm-up.csv")).unwrap();
    let header: Vec<&str> = windows.lines().next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "jit_busy_pct").unwrap();
    let jit: Vec<f64> = windows
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(at).unwrap().parse().unwrap())
        .collect();
    assert!(!jit.is_empty() && jit.len() <= 9, "{windows}");
    // Each window is 4.25 s and its job's own set-up; the limit lets 9 run.
    assert!(
        took >= 4.0 * jit.len() as f64 && took < 5.0 * 9.0 + 20.0,
        "{took} s for {} windows",
        jit.len()
    );
    let quiet = *jit.last().unwrap() < 10.0;
    assert_eq!(
        text.contains("warm-up: JIT quiet after"),
        quiet,
        "the last window's JIT {jit:?}: {text}"
    );
    let measured: f64 = row["broker_jit_pct"].parse().unwrap();
    assert!(
        jit[0] > 30.0 && measured < jit[0],
        "a fresh JVM compiles most of its first window ({jit:?}), less in the job's ({measured})"
    );
    // 1 s of warm-up, 3 measured and the drain: the windows' seconds are not in the file.
    assert!(
        series_seconds(dir.path()) <= 7,
        "{}",
        series_seconds(dir.path())
    );
    common::assert_no_jvm_under(dir.path());
}
