//! Every documented exit code, produced by running the binary (the book's "Exit codes" table
//! names, for each code and subcommand, the test that produces it; those not here are in
//! compare_cli.rs, ab.rs, shards.rs and e2e_broker.rs).

use std::path::{Path, PathBuf};
use std::process::Command;

use harness::exit;

mod common;

fn harness(args: &[&str]) -> (u8, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
        .output()
        .expect("run the harness binary");
    let code = out.status.code().expect("exited, not killed") as u8;
    (code, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Writes `text` as `<dir>/<name>.toml` and runs it with `extra` arguments and `--out <dir>/out`.
fn run_profile(dir: &Path, name: &str, text: &str, extra: &[&str]) -> (u8, String) {
    let profile = dir.join(format!("{name}.toml"));
    std::fs::write(&profile, text).unwrap();
    let out = dir.join("out");
    let mut args = vec![
        "run",
        profile.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    harness(&args)
}

#[test]
fn help_and_version_succeed() {
    assert_eq!(harness(&["--help"]).0, exit::SUCCESS);
    assert_eq!(harness(&["--version"]).0, exit::SUCCESS);
}

#[test]
fn a_command_line_error_is_a_usage_error_not_inconclusive() {
    let (code, err) = harness(&["run"]);
    assert_eq!(code, exit::USAGE, "{err}");
    let (code, err) = harness(&["gate", "--no-such-flag"]);
    assert_eq!(code, exit::USAGE, "{err}");
    assert_ne!(exit::USAGE, exit::INCONCLUSIVE);
}

#[test]
fn wrong_input_is_invalid_input() {
    let (code, err) = harness(&["run", "profiles/no-such-profile.toml"]);
    assert_eq!(code, exit::INVALID_INPUT, "{err}");
    let (code, err) = harness(&["run", "profiles/smok.toml"]);
    assert_eq!(code, exit::INVALID_INPUT, "{err}");
    assert!(err.contains("did you mean profiles/smoke.toml?"), "{err}");
    let (code, err) = harness(&["compare", "results/no-such-run", "results/no-such-run-2"]);
    assert_eq!(code, exit::INVALID_INPUT, "{err}");
    let (code, err) = harness(&["recipe", "pc-synchronised"]);
    assert_eq!(code, exit::INVALID_INPUT, "{err}");
    assert!(err.contains("did you mean `pc-synchronized`"), "{err}");
    // Broker axes cannot be varied on a broker the harness did not start.
    let (code, err) = harness(&["run", "profiles/smoke.toml", "--target", "127.0.0.1:9"]);
    assert_eq!(code, exit::INVALID_INPUT, "{err}");
}

#[test]
fn a_failure_while_running_is_run_failed() {
    // Nothing listens on port 9 of loopback (discard is not running here): the connection fails.
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = run_profile(
        dir.path(),
        "p",
        "name = \"p\"\n[workload]\nrate = 10\nduration = \"1s\"\nwarmup = \"0s\"\n",
        &["--target", "127.0.0.1:9"],
    );
    assert_eq!(code, exit::RUN_FAILED, "{err}");
}

#[test]
fn gate_keeps_its_verdict_codes() {
    let base = "results/baselines/smoke.csv";
    let (code, err) = harness(&[
        "gate",
        "--baseline",
        base,
        "--candidate",
        base,
        "--rules",
        "profiles/smoke.toml",
    ]);
    assert_eq!(code, exit::SUCCESS, "{err}");
}

/// A misspelled matrix axis or an invalid 2nd cell fails before the first cell runs, with the
/// file, the line and a suggestion, and writes no result folder.
#[test]
fn bad_broker_keys_fail_before_the_first_cell() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = run_profile(
        dir.path(),
        "typo",
        "name = \"typo\"\n[workload]\nrate = 10\nduration = \"1s\"\n[matrix]\n\"broker.waitTimeMillsInSendQueu\" = [100, 200]\n",
        &[],
    );
    let out = dir.path().join("out");
    assert_eq!(code, exit::INVALID_INPUT, "{err}");
    assert!(
        err.contains("typo.toml:6:1: unknown broker key `waitTimeMillsInSendQueu`"),
        "{err}"
    );
    assert!(
        err.contains("did you mean `waitTimeMillsInSendQueue`?"),
        "{err}"
    );
    assert!(
        !out.exists(),
        "nothing may be written for a refused profile"
    );

    // Every key is known, but the second cell's value contradicts another key.
    let (code, err) = run_profile(
        dir.path(),
        "typo",
        "name = \"typo\"\n[workload]\nrate = 10\nduration = \"1s\"\n[broker]\nmappedFileSizeCommitLog = 1048576\n[matrix]\n\"broker.maxMessageSize\" = [65536, 4194304]\n",
        &[],
    );
    assert_eq!(code, exit::INVALID_INPUT, "{err}");
    assert!(err.contains("cell 2 (maxMessageSize=4194304)"), "{err}");
    assert!(!err.contains("cell 1 "), "{err}");
    assert!(!out.exists());
}

/// What does not compose is refused before anything starts (exit 3), naming the pair, instead
/// of wrong figures: a fault on a broker the cluster does not have, and a fault or a knee search
/// split over shards. (Consumers, faults and knee searches run on a cluster: `cluster_consumer.rs`,
/// `cluster_fault.rs`.)
#[test]
fn features_that_do_not_compose_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = "name = \"c\"\n[cluster]\nbrokers = 2\n[workload]\nduration = \"2s\"\n";
    let cases = [
        (
            format!(
                "{cluster}[fault]
pause = \"1s for 200ms\"
broker = 2
"
            ),
            vec![],
            "`fault.broker` = 2",
        ),
        (
            "name = \"c\"
[workload]
duration = \"2s\"
[fault]
pause = \"1s for 200ms\"
"
            .to_string(),
            vec!["--shard", "1/2"],
            "[fault]",
        ),
        (
            "name = \"c\"
[workload]
model = \"knee\"
"
            .to_string(),
            vec!["--shard", "1/2"],
            "knee",
        ),
    ];
    for (text, args, names) in cases {
        let (code, err) = run_profile(dir.path(), "c", &text, &args);
        assert_eq!(code, exit::INVALID_INPUT, "{err}");
        assert!(err.contains(names), "{names}: {err}");
        assert!(!dir.path().join("out").exists(), "nothing written: {err}");
    }
}

/// A copy of the committed smoke run whose harness RSS rises by 20 MiB a second when `grow`.
fn smoke_run(dir: &Path, grow: bool) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/report/smoke");
    let run = dir.join(if grow { "grew" } else { "flat" });
    std::fs::create_dir_all(&run).unwrap();
    for f in ["summary.csv", "run.json", "latency.hlog"] {
        std::fs::copy(src.join(f), run.join(f)).unwrap();
    }
    let text = std::fs::read_to_string(src.join("timeseries.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let rss = header
        .split(',')
        .position(|c| c == "harness_rss_mb")
        .unwrap();
    let mut out = format!("{header}\n");
    for (i, line) in lines.enumerate() {
        let mut fields: Vec<String> = line.split(',').map(str::to_owned).collect();
        if grow {
            fields[rss] = format!("{}", 10 + 20 * i);
        }
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    std::fs::write(run.join("timeseries.csv"), out).unwrap();
    run
}

#[test]
fn drift_says_no_when_the_harness_grew_and_refuses_what_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let limit = ["--max-harness-rss-growth-mb", "5", "--window", "1s"];
    let flat = smoke_run(dir.path(), false);
    let (code, err) = harness(&[&["drift", flat.to_str().unwrap()], &limit[..]].concat());
    assert_eq!(code, exit::SUCCESS, "{err}");
    let grew = smoke_run(dir.path(), true);
    let (code, err) = harness(&[&["drift", grew.to_str().unwrap()], &limit[..]].concat());
    assert_eq!(code, exit::VERDICT_NO, "{err}");
    let missing = dir.path().join("no-such-run");
    let (code, err) = harness(&[&["drift", missing.to_str().unwrap()], &limit[..]].concat());
    assert_eq!(code, exit::INVALID_INPUT, "{err}");
}

/// A recipe whose promised answer does not come says no (exit 1): the broker is wrapped so that
/// BrokerFastFailure is off, so `timeout-clean-queue`'s queued sends are stored, not failed.
#[test]
fn a_recipe_whose_answer_does_not_come_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("broker-without-fast-failure");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec '{}' \"$@\" --set brokerFastFailureEnable=false\n",
            common::broker_bin().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, err) = harness(&[
        "recipe",
        "timeout-clean-queue",
        "--broker-bin",
        wrapper.to_str().unwrap(),
    ]);
    assert_eq!(code, exit::VERDICT_NO, "{err}");
}
