//! What the rest of the machine used during a run (`other_cpu`, `other_cpu_max`), against a
//! process the test starts beside it: a shell spinning in a loop uses all of a core the
//! scheduler gives it, and the run's broker and harness are not counted.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use harness::runner::run_profile;
use harness_model::profile::Profile;

mod common;
use common::options;

const PROFILE: &str = r#"
name = "other-cpu"
[workload]
rate = 200
warmup = "0.5s"
duration = "3s"
connections = 1
message_size = 128
"#;

/// Kills the spinner however the test ends.
struct Spinner(Child);

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_process_spinning_beside_the_run_is_the_rest_of_the_machine() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::parse(PROFILE, "p.toml", Path::new("p.toml"), &[]).unwrap();
    // Read before the run: it pins this thread to the generator's CPUs, and the count follows
    // the thread's CPU mask.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let spinner = Spinner(
        Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .stdout(Stdio::null())
            .spawn()
            .expect("sh"),
    );
    let outcome = run_profile(&profile, &options(dir.path())).unwrap();
    drop(spinner);
    let row = &outcome.rows[0];
    let other = row
        .res
        .other_cpu_max
        .expect("the harness started the broker");
    // The spinner alone is up to 100% of a core; with two cores shared by the broker, the
    // harness and it, it gets well over a third of one in its busiest second. Other tests of
    // this binary only add to it; the machine's cores bound it.
    assert!(
        other > 35.0,
        "other_cpu_max {other} with a spinning process"
    );
    assert!(other <= cores * 100.0 + 5.0, "{other} > {cores} cores");
    // The per-second column too.
    let series = std::fs::read_to_string(dir.path().join("timeseries.csv")).unwrap();
    let header: Vec<&str> = series.lines().next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "other_cpu").unwrap();
    let seconds: Vec<f64> = series
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(at)?.parse().ok())
        .collect();
    assert!(seconds.len() >= 3, "{series}");
}
