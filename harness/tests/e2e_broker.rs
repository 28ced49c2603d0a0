//! End to end against the real `broker-under-test` binary.
//!
//! The binary is `$BROKER_UNDER_TEST_BIN` if set, else the tests run
//! `cargo build -p broker-under-test` once into their own target dir (a no-op when it is
//! fresh), so `cargo test -p harness` alone works and never picks up a stale binary.

use std::path::Path;

use harness::runner::{run_profile, RunOptions};
use harness_model::profile::Profile;

mod common;
use common::{broker_bin, options};

const STALL_MATRIX: &str = r#"
name = "e2e"
[workload]
rate = 800
warmup = "0.5s"
duration = "2.5s"
connections = 2
message_size = 128
[broker]
mappedFileSizeCommitLog = 16777216
injectPutStallMillis = 400
injectPutStallIntervalMillis = 1000
[matrix]
"broker.waitTimeMillsInSendQueue" = [200, 3000]
"broker.sendMessageThreadPoolNums" = [1, 2]
"#;

/// A 2×2 matrix with an injected put stall: 4 rows with the right parameters, busy answers
/// only at 200 ms, and per-class counts equal to the broker's own counters.
#[test]
fn stall_matrix_matches_broker_counters() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::parse(STALL_MATRIX, "e2e.toml", Path::new("e2e.toml"), &[]).unwrap();
    let outcome = run_profile(&profile, &options(dir.path())).unwrap();
    assert!(!outcome.interrupted);
    assert_eq!(outcome.rows.len(), 4);
    let mut seen = Vec::new();
    for row in &outcome.rows {
        // params are in axis order: sendMessageThreadPoolNums, waitTimeMillsInSendQueue.
        let (threads, wait) = (row.params[0].clone(), row.params[1].clone());
        seen.push((threads.clone(), wait.clone()));
        let s = &row.seg;
        let total = s.counts.ok
            + s.busy_total()
            + s.counts.system_error
            + s.counts.flush_disk_timeout
            + s.counts.message_illegal
            + s.counts.other_codes
            + s.counts.not_available.iter().sum::<u64>()
            + s.counts.timeouts
            + s.counts.dropped
            + s.counts.connection_errors;
        assert_eq!(s.sent, total, "{row:?}");
        assert_eq!(
            row.res.broker_counters_match,
            Some(true),
            "harness and broker busy counts differ: {row:?}"
        );
        if wait == "200" {
            assert!(
                s.counts.busy[1] > 0,
                "expected [TIMEOUT_CLEAN_QUEUE] at wait 200: {row:?}"
            );
        } else {
            assert_eq!(
                s.busy_total(),
                0,
                "no busy answers expected at wait 3000: {row:?}"
            );
        }
    }
    seen.sort();
    let want: Vec<(String, String)> = [("1", "200"), ("1", "3000"), ("2", "200"), ("2", "3000")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(seen, want);
    let summary = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    assert_eq!(summary.lines().count(), 5);
    assert!(summary
        .lines()
        .next()
        .unwrap()
        .contains("param_broker.sendMessageThreadPoolNums,param_broker.waitTimeMillsInSendQueue"));
    for f in ["timeseries.csv", "latency.hlog", "run.json"] {
        assert!(dir.path().join(f).is_file(), "{f} missing");
    }
    // Per cell the phases run warmup, then measure, then at most one drain second: per-second
    // statistics read only `measure`, so the drain must never be tagged as a measured second.
    let series = std::fs::read_to_string(dir.path().join("timeseries.csv")).unwrap();
    let phase_col = series
        .lines()
        .next()
        .unwrap()
        .split(',')
        .position(|c| c == "phase")
        .unwrap();
    let mut phases = std::collections::BTreeMap::<String, Vec<String>>::new();
    for line in series.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        phases
            .entry(fields[1].to_owned())
            .or_default()
            .push(fields[phase_col].to_owned());
    }
    assert_eq!(phases.len(), 4);
    for (cell, seq) in &phases {
        let rank = |p: &str| match p {
            "warmup" => 0,
            "measure" => 1,
            "drain" => 2,
            other => panic!("unknown phase {other} in cell {cell}"),
        };
        let ranks: Vec<i32> = seq.iter().map(|p| rank(p)).collect();
        assert!(
            ranks.windows(2).all(|w| w[0] <= w[1]),
            "phases out of order in {cell}: {seq:?}"
        );
        assert!(
            seq.iter().filter(|p| *p == "drain").count() <= 1,
            "{cell}: {seq:?}"
        );
        assert!(seq.iter().any(|p| p == "measure"), "{cell}: {seq:?}");
    }
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap())
            .unwrap();
    assert_eq!(run["cells"].as_array().map(Vec::len), Some(4));
    // The interval log parses, with a latency and a lag histogram per second of every cell.
    let hlog = std::fs::read(dir.path().join("latency.hlog")).unwrap();
    let mut tags = std::collections::BTreeMap::<String, usize>::new();
    for item in hdrhistogram::serialization::interval_log::IntervalLogIterator::new(&hlog) {
        if let hdrhistogram::serialization::interval_log::LogEntry::Interval(h) =
            item.expect("well-formed hlog")
        {
            let tag = h
                .tag()
                .expect("every interval is tagged")
                .as_str()
                .to_owned();
            *tags
                .entry(tag.rsplit('/').next().unwrap().to_owned())
                .or_default() += 1;
        }
    }
    assert!(
        tags.get("latency").copied().unwrap_or(0) >= 4 * 3,
        "{tags:?}"
    );
    assert!(tags.get("lag").copied().unwrap_or(0) >= 4 * 3, "{tags:?}");
    assert!(tags.contains_key("busy_latency"), "{tags:?}");
}

/// An interrupted matrix keeps the rows of the cells that finished.
#[test]
fn interrupted_matrix_keeps_finished_rows() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
name = "e2e-interrupt"
[workload]
rate = 300
warmup = "0.2s"
duration = "1s"
connections = 1
[broker]
mappedFileSizeCommitLog = 16777216
[validity]
# Debug build on a shared machine: generator precision is not what this test checks.
max_lag_p99_us = 1e9
max_harness_cpu = 1000
[matrix]
"broker.sendMessageThreadPoolNums" = [1, 2, 3]
"#;
    let profile = Profile::parse(text, "i.toml", Path::new("i.toml"), &[]).unwrap();
    let opts = RunOptions {
        stop_after_jobs: Some(1),
        ..options(dir.path())
    };
    let outcome = run_profile(&profile, &opts).unwrap();
    assert!(outcome.interrupted);
    assert_eq!(outcome.rows.len(), 1);
    assert!(outcome.rows[0].valid, "{:?}", outcome.rows[0]);
    let summary = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    assert_eq!(summary.lines().count(), 2, "{summary}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap())
            .unwrap();
    assert_eq!(run["interrupted"], serde_json::Value::Bool(true));
}

/// A broker that cannot start makes an invalid row, and the matrix goes on.
#[test]
fn broker_start_failure_is_an_invalid_row() {
    let dir = tempfile::tempdir().unwrap();
    // A valid configuration (it passes the key checks and --check) whose store cannot be
    // created: the broker exits at start-up, as on a full or read-only disk.
    let good_store = dir.path().join("good-store");
    let text = format!(
        r#"
name = "e2e-bad"
[workload]
rate = 200
warmup = "0s"
duration = "0.5s"
[broker]
mappedFileSizeCommitLog = 16777216
[validity]
max_lag_p99_us = 1e9
max_harness_cpu = 1000
[matrix]
"broker.storePathRootDir" = ["/dev/null/store", "{}"]
"#,
        good_store.display()
    );
    let profile = Profile::parse(&text, "b.toml", Path::new("b.toml"), &[]).unwrap();
    let outcome = run_profile(&profile, &options(&dir.path().join("out"))).unwrap();
    assert_eq!(outcome.rows.len(), 2);
    let bad = outcome
        .rows
        .iter()
        .find(|r| r.params[0] == "/dev/null/store")
        .unwrap();
    assert!(!bad.valid);
    assert!(!bad.invalid_reason.is_empty());
    let good = outcome
        .rows
        .iter()
        .find(|r| r.params[0] != "/dev/null/store")
        .unwrap();
    assert!(good.valid, "{good:?}");
}

/// `--target` against a fake broker: the topic is created, steps give one row per stair, and
/// broker axes are refused.
#[test]
fn target_mode_with_steps_reports_each_stair() {
    use harness::testkit::{FakeBroker, FakeConfig};
    let fake = FakeBroker::start(FakeConfig::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
name = "steps"
[workload]
model = "steps"
steps = [{ rate = 200, duration = "1s" }, { rate = 400, duration = "1s" }]
warmup = "0.2s"
[validity]
max_lag_p99_us = 1e9
max_harness_cpu = 1000
"#;
    let profile = Profile::parse(text, "s.toml", Path::new("s.toml"), &[]).unwrap();
    let opts = RunOptions {
        target: Some(fake.addr),
        broker_bin: None,
        ..options(dir.path())
    };
    let outcome = run_profile(&profile, &opts).unwrap();
    assert_eq!(outcome.rows.len(), 2);
    assert_eq!(outcome.rows[0].step, Some(0));
    assert_eq!(outcome.rows[1].step, Some(1));
    assert_eq!(outcome.rows[0].seg.sent, 200);
    assert_eq!(outcome.rows[1].seg.sent, 400);
    assert_eq!(outcome.rows[1].target_rate, Some(400.0));
    assert!(
        outcome
            .rows
            .iter()
            .all(|r| r.valid && r.seg.counts.ok == r.seg.sent),
        "{:?}",
        outcome.rows
    );
    // The fake reports no flow-control counters: unknown, not false.
    assert_eq!(outcome.rows[0].res.broker_counters_match, None);

    let with_axis = format!("{text}\n[matrix]\n\"broker.sendMessageThreadPoolNums\" = [1, 2]\n");
    let profile = Profile::parse(&with_axis, "s.toml", Path::new("s.toml"), &[]).unwrap();
    let err = run_profile(&profile, &opts).unwrap_err().to_string();
    assert!(err.contains("broker axes"), "{err}");
}

/// Every request shape against one real broker (`--target` mode): JSON and ROCKETMQ headers,
/// SEND_MESSAGE and SEND_MESSAGE_V2, batches, oneway. Every send must succeed.
#[test]
fn request_variants_are_accepted_by_the_broker() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("broker.conf");
    let store = dir.path().join("store");
    std::fs::write(
        &conf,
        format!(
            "listenPort=0\nstorePathRootDir={}\nmappedFileSizeCommitLog=16777216\n",
            store.display()
        ),
    )
    .unwrap();
    let broker = harness::kind::in_tree::process::BrokerProcess::start(
        &broker_bin(),
        &conf,
        &dir.path().join("broker.log"),
        None,
        std::time::Duration::from_secs(20),
    )
    .unwrap();
    let text = r#"
name = "variants"
[workload]
rate = 300
warmup = "0.1s"
duration = "0.5s"
connections = 1
message_size = 64
[validity]
max_lag_p99_us = 1e9
max_harness_cpu = 1000
[matrix]
"workload.header" = ["json", "rocketmq"]
"workload.code" = ["v1", "v2"]
"workload.batch" = [1, 4]
"workload.oneway" = [false, true]
"#;
    let profile = Profile::parse(text, "v.toml", Path::new("v.toml"), &[]).unwrap();
    let opts = RunOptions {
        target: Some(broker.addr),
        broker_pid: Some(broker.pid),
        broker_bin: None,
        ..options(&dir.path().join("out"))
    };
    let outcome = run_profile(&profile, &opts).unwrap();
    assert_eq!(outcome.rows.len(), 16);
    for r in &outcome.rows {
        assert_eq!(r.seg.sent, 150, "{}: {:?}", r.label, r.seg);
        assert_eq!(r.seg.counts.ok, r.seg.sent, "{}: {:?}", r.label, r.seg);
    }
    broker.stop(std::time::Duration::from_secs(10));
}

/// Ctrl-C on the `harness` binary: the load stops, finished and partial rows are written, the
/// partial one marked `interrupted`, and the exit code is 130.
#[test]
fn sigint_keeps_results_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("sigint.toml");
    std::fs::write(
        &profile,
        r#"
name = "sigint"
[workload]
rate = 300
warmup = "0.2s"
duration = "6s"
connections = 1
[broker]
mappedFileSizeCommitLog = 16777216
[matrix]
"broker.sendMessageThreadPoolNums" = [1, 2, 3]
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("run")
        .arg(&profile)
        .arg("--out")
        .arg(&out)
        .arg("--broker-bin")
        .arg(broker_bin())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // run.json is on disk before the first cell has finished: a crash keeps the record.
    let run_json = out.join("run.json");
    let summary = out.join("summary.csv");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !run_json.is_file() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let early: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run_json).unwrap()).unwrap();
    // The run is under way whenever this read lands: the test interrupts its second cell below.
    assert_eq!(early["status"], "running", "{early}");
    assert!(early["end"].is_null(), "{early}");
    // How many jobs are done depends on how late the read was; none before the first row.
    if !summary.is_file() {
        assert_eq!(early["jobs_done"], 0, "{early}");
    }
    assert_eq!(early["jobs_planned"], 3, "{early}");
    // Provenance: what ran, not only which revision (the tests run in a git checkout).
    assert!(
        ["clean", "dirty"].contains(&early["harness_tree"].as_str().unwrap_or("")),
        "{early}"
    );
    let broker_hash = harness::provenance::file_hash(&broker_bin()).unwrap();
    assert_eq!(early["broker_bin_fnv1a64"], broker_hash.as_str(), "{early}");
    let harness_hash =
        harness::provenance::file_hash(Path::new(env!("CARGO_BIN_EXE_harness"))).unwrap();
    assert_eq!(
        early["harness_bin_fnv1a64"],
        harness_hash.as_str(),
        "{early}"
    );
    // Wait until the first cell's row is on disk and the second cell has measured a second
    // (timeseries.csv), then interrupt the second cell: a state, not a sleep that a busy
    // machine can outlast (it once let the second cell finish). Its 6 s leave time to spare.
    while !summary.is_file() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let first_cell = std::fs::read_to_string(&summary).unwrap();
    let first_cell = first_cell
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .nth(1)
        .unwrap()
        .to_owned();
    let series = out.join("timeseries.csv");
    loop {
        let text = std::fs::read_to_string(&series).unwrap_or_default();
        let measuring = text.lines().any(|l| {
            let f: Vec<&str> = l.split(',').collect();
            f.len() > 5 && f[1] != first_cell && f[5] == "measure"
        });
        if measuring {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the second cell never measured"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: signalling our own child by pid.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let text = std::fs::read_to_string(&summary).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{text}");
    // By column name, parsed as CSV: more columns follow `invalid_reason`, and a reason may
    // hold a quoted comma.
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader.headers().unwrap().clone();
    let at = header.iter().position(|c| c == "valid").unwrap();
    let second = reader.records().nth(1).unwrap().unwrap();
    assert_eq!(
        (&second[at], &second[at + 1]),
        ("false", "interrupted"),
        "{text}"
    );
    let last: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run_json).unwrap()).unwrap();
    assert_eq!(last["status"], "interrupted", "{last}");
    assert_eq!(last["jobs_done"], 2, "{last}");
    assert!(last["end"].is_string(), "{last}");
}

const KNEE: &str = r#"
name = "e2e-knee"
[workload]
model = "knee"
rate = 200
connections = 2
message_size = 128
[knee]
settle = "0.2s"
probe_duration = "0.6s"
max_probes = 4
[slo]
terms = ["p99_ms <= 50", "busy_rate <= 0.1%", "timeouts == 0"]
[validity]
max_lag_p99_us = 100000
[broker]
mappedFileSizeCommitLog = 16777216
injectAppendDelayMicros = 2000
"#;

/// `model = "knee"` against a broker that serves ~500 appends/s: one row per probe
/// (`step` = probe index) on one broker, the 800/s probe fails the SLO, every row carries
/// the result, and the time series and interval log keep the probes apart.
#[test]
fn knee_search_probes_one_broker_and_reports_its_knee() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::parse(KNEE, "knee.toml", Path::new("knee.toml"), &[]).unwrap();
    let outcome = run_profile(&profile, &options(dir.path())).unwrap();
    let rows = &outcome.rows;
    assert!(rows.len() >= 4, "{} probes", rows.len());
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.step, Some(i), "step = probe index");
        assert!(r.knee.slo_met.is_some());
        assert_eq!(
            r.knee.knee_rate, rows[0].knee.knee_rate,
            "every row carries the result"
        );
        assert_eq!(r.knee.slo_met == Some(false), !r.knee.slo_failed.is_empty());
    }
    let rates: Vec<f64> = rows.iter().filter_map(|r| r.target_rate).collect();
    // The ramp doubles until a probe fails (800/s on a quiet machine; earlier when other
    // work slows the broker), so some probe failed and the search narrowed below it.
    assert!(
        rows.iter().any(|r| r.knee.slo_met == Some(false)),
        "some probe fails the SLO: {rates:?}"
    );
    let failed_800 = rows
        .iter()
        .find(|r| r.target_rate == Some(800.0))
        .map(|r| r.knee.slo_met == Some(false));
    assert_ne!(failed_800, Some(false), "800/s is above the capacity");
    let knee = rows[0].knee.knee_rate.expect("a knee").0;
    assert!(knee < 800.0, "{knee}");
    assert!(!rows[0].knee.knee_limited_by.is_empty());
    assert!(outcome
        .table
        .contains("capacity: the highest rate that met [slo]"));
    // One broker for the search: one job folder, no per-probe folders.
    let dirs: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let hlog = std::fs::read_to_string(dir.path().join("latency.hlog")).unwrap();
    assert!(hlog.contains("/r1/p0/latency") && hlog.contains("/r1/p3/latency"));
    let series = std::fs::read_to_string(dir.path().join("timeseries.csv")).unwrap();
    assert!(
        series.lines().any(|l| l.split(',').nth(3) == Some("3")),
        "step 3 in the time series"
    );
}
