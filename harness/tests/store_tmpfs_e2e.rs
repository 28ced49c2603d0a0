//! `[broker] store_tmpfs`: the job's store is a tmpfs while its broker runs, and no mount is
//! left once the run ends, normally or by Ctrl-C (the cancel token, as `interrupt.rs` sets it).
//!
//! Mounting needs root. CI runs as root, so these run there; as any other user each test writes
//! `SKIPPED <name>: not root` to the terminal (past the output capture) and passes (the refusal itself is unit-tested in `tmpfs.rs`).

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use harness::runner::run_profile;
use harness_model::profile::Profile;

const PROFILE: &str = r#"
name = "store-tmpfs-e2e"
pin = false
[workload]
rate = 300
warmup = "0.5s"
duration = "DURATION"
connections = 1
message_size = 256
[broker]
store_tmpfs = "16MiB"
mappedFileSizeCommitLog = 8388608
[validity]
max_lag_p99_us = 1e9
max_harness_cpu = 1000
"#;

/// True as root; otherwise says on the terminal that `test` was skipped (written to stderr
/// directly, past the test harness's capture of `eprintln!`, so a skip is seen).
fn root_or_skip(test: &str) -> bool {
    use std::io::Write;
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: not root");
    false
}

fn profile(dir: &Path, duration: &str) -> Profile {
    let path = dir.join("p.toml");
    std::fs::write(&path, PROFILE.replace("DURATION", duration)).unwrap();
    Profile::load(&path, &[]).unwrap()
}

/// The tmpfs mount points under `dir`, from this process's mount table.
fn tmpfs_under(dir: &Path) -> Vec<PathBuf> {
    let prefix = dir.display().to_string();
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let (kind, at) = (f.next()?, f.next()?);
            (kind == "tmpfs" && at.starts_with(&prefix)).then(|| PathBuf::from(at))
        })
        .collect()
}

/// Waits (up to `within`, and while the run has not ended) until a tmpfs is mounted under
/// `dir`; its mount point.
fn wait_mounted<T>(
    dir: &Path,
    within: Duration,
    run: &std::thread::JoinHandle<T>,
) -> Option<PathBuf> {
    let end = Instant::now() + within;
    while Instant::now() < end && !run.is_finished() {
        if let Some(m) = tmpfs_under(dir).into_iter().next() {
            return Some(m);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn the_store_is_a_tmpfs_while_the_broker_runs_and_unmounted_after() {
    if !root_or_skip("the_store_is_a_tmpfs_while_the_broker_runs_and_unmounted_after") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let p = profile(dir.path(), "2s");
    let opts = common::options(&out);
    let run = std::thread::spawn(move || run_profile(&p, &opts).map(|o| o.rows));
    let Some(mounted) = wait_mounted(&out, Duration::from_secs(60), &run) else {
        panic!("no tmpfs under the run: {:?}", run.join().unwrap().err());
    };
    assert!(mounted.ends_with("store"), "{}", mounted.display());
    let rows = run.join().unwrap().unwrap();
    assert!(tmpfs_under(&out).is_empty(), "{:?}", tmpfs_under(&out));
    assert!(!mounted.exists(), "the emptied mount point is removed");
    let row = &rows[0];
    assert!(row.seg.counts.ok > 0, "{row:?}");
    // The broker read its disk: a 16 MiB tmpfs with a few hundred KiB on it, not the host's.
    let ratio = row
        .res
        .retention
        .disk_ratio_max
        .as_ref()
        .expect("commitLogDiskRatio")
        .0;
    assert!((0.0..0.5).contains(&ratio), "{ratio}");
}

#[test]
fn ctrl_c_unmounts_the_store_of_the_job_it_stops() {
    if !root_or_skip("ctrl_c_unmounts_the_store_of_the_job_it_stops") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let p = profile(dir.path(), "60s");
    let opts = common::options(&out);
    let cancel = opts.cancel.clone();
    let run = std::thread::spawn(move || run_profile(&p, &opts).map(|o| o.interrupted));
    if wait_mounted(&out, Duration::from_secs(60), &run).is_none() {
        panic!("no tmpfs under the run: {:?}", run.join().unwrap().err());
    }
    cancel.cancel();
    let interrupted = run.join().unwrap().unwrap();
    assert!(interrupted);
    assert!(tmpfs_under(&out).is_empty(), "{:?}", tmpfs_under(&out));
}
