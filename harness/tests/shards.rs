//! Three shard processes against one broker-under-test, merged, against one process at the
//! same total rate; and the refusals (a shard too late, a folder of another profile).
//!
//! Debug binaries on a loaded 2-core machine: counts are compared exactly, latencies only
//! within generous bounds.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use harness::kind::in_tree::process::{locate_or_build, BrokerProcess};
use harness::kind::write_conf;

const PROFILE: &str = r#"
name = "shards-e2e"
pin = false
[workload]
rate = 900
warmup = "0.5s"
duration = "3s"
connections = 2
message_size = 128
[validity]
# Debug build on a shared machine: generator precision is not what this test checks.
max_lag_p99_us = 1e9
max_harness_cpu = 1000
"#;

fn harness(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .output()
        .expect("run the harness binary")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited, not killed")
}

fn broker() -> (tempfile::TempDir, BrokerProcess) {
    let bin = locate_or_build(None).expect("broker-under-test binary");
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("broker.conf");
    let settings = [
        ("listenPort", "0".to_owned()),
        (
            "storePathRootDir",
            dir.path().join("store").display().to_string(),
        ),
        ("mappedFileSizeCommitLog", "16777216".to_owned()),
    ];
    write_conf(
        &conf,
        &settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
    .unwrap();
    let p = BrokerProcess::start(
        &bin,
        &conf,
        &dir.path().join("broker.log"),
        None,
        Duration::from_secs(20),
    )
    .expect("broker starts");
    (dir, p)
}

fn summary(dir: &Path) -> harness::compare::load::Row {
    let data = harness::compare::load::load(dir).expect("a readable result folder");
    assert_eq!(data.rows.len(), 1, "{}", dir.display());
    data.rows[0].clone()
}

fn num(row: &harness::compare::load::Row, col: &str) -> f64 {
    row.get(col)
        .unwrap()
        .unwrap_or_else(|| panic!("{col} empty"))
}

#[test]
fn three_shards_merged_match_one_process_at_the_same_rate() {
    let (_bdir, broker) = broker();
    let addr = broker.addr.to_string();
    let root = tempfile::tempdir().unwrap();
    let profile = root.path().join("shards-e2e.toml");
    std::fs::write(&profile, PROFILE).unwrap();
    let profile = profile.to_str().unwrap();

    // Far enough ahead for three debug processes to start on a busy machine: 4 s was not
    // (at load average 13 a shard was 9 s past it with a 3 s skew allowed). A shard has no
    // readiness signal before --start-at to wait on, so the margin is 12 s plus 5 s of skew.
    let start_at = SystemTime::now() + Duration::from_secs(12);
    let start_at = humantime::format_rfc3339_millis(start_at).to_string();
    let dirs: Vec<PathBuf> = (0..3).map(|i| root.path().join(format!("s{i}"))).collect();
    let children: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            Command::new(env!("CARGO_BIN_EXE_harness"))
                .args(["run", profile, "--target", &addr, "--start-at", &start_at])
                .args(["--start-skew", "5s", "--shard", &format!("{i}/3"), "--out"])
                .arg(d)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn a shard")
        })
        .collect();
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        assert_eq!(
            code(&out),
            0,
            "shard {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let merged = root.path().join("merged");
    let mut args = vec!["merge".to_owned()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend(["--out".into(), merged.display().to_string()]);
    let out = harness(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    // A folder merge cannot write (its parent is a file) is a failure while running: exit 4.
    let blocker = root.path().join("a-file");
    std::fs::write(&blocker, b"").unwrap();
    let mut args = vec!["merge".to_owned()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend(["--out".into(), blocker.join("merged").display().to_string()]);
    let out = harness(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code(&out), 4, "{}", String::from_utf8_lossy(&out.stderr));

    let single = root.path().join("single");
    let out = harness(&[
        "run",
        profile,
        "--target",
        &addr,
        "--out",
        single.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let _ = broker.stop(Duration::from_secs(10));

    // Counts: each shard sent its third, the merge their sum, the single process the same.
    let shard_rows: Vec<_> = dirs.iter().map(|d| summary(d)).collect();
    for (i, r) in shard_rows.iter().enumerate() {
        assert_eq!(num(r, "sent"), 900.0, "shard {i} sends every third of 2700");
        assert_eq!(num(r, "target_rate"), 300.0);
    }
    let m = summary(&merged);
    let s = summary(&single);
    let accounted = [
        "ok",
        "busy",
        "system_error",
        "flush_disk_timeout",
        "message_illegal",
        "other_codes",
        "timeouts",
        "dropped",
        "connection_errors",
    ];
    for col in ["sent", "ok", "busy", "timeouts", "dropped", "attempts"] {
        let sum: f64 = shard_rows.iter().map(|r| num(r, col)).sum();
        assert_eq!(num(&m, col), sum, "merged {col} = the shards' sum");
    }
    assert_eq!(num(&m, "sent"), 2700.0);
    assert_eq!(num(&m, "sent"), num(&s, "sent"), "same schedule");
    assert_eq!(
        num(&m, "sent"),
        accounted.iter().map(|c| num(&m, c)).sum::<f64>(),
        "every merged send is accounted for"
    );
    assert_eq!(num(&m, "target_rate"), 900.0);
    assert_eq!(num(&s, "target_rate"), 900.0);

    // Latency is not compared with the single run here: at load average 13 their p90 differed
    // 1.5 vs 120 ms, which measures the machine. That merged percentiles are those of the union
    // of the shards' samples is checked exactly in merge's unit tests; how merged and single
    // runs compare is measured by `make shards` (the book's shards chapter).
    // The shards kept one timeline: the merged measured seconds carry the whole rate.
    let data = harness::compare::load::load(&merged).unwrap();
    let seconds = data.series.values().next().expect("a merged series");
    let achieved: f64 = seconds.iter().filter_map(|x| x.get("achieved_rate")).sum();
    assert!(
        seconds.len() >= 3 && seconds.len() <= 5,
        "about 3 measured seconds, not 3 per shard: {}",
        seconds.len()
    );
    assert!(achieved >= 2000.0, "merged achieved {achieved}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dirs[2].join("run.json")).unwrap()).unwrap();
    assert_eq!(
        (run["shard"].as_u64(), run["shards"].as_u64()),
        (Some(2), Some(3))
    );

    // compare reads the merged folder like any run.
    let out = harness(&[
        "compare",
        single.to_str().unwrap(),
        merged.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));

    // A shard folder of another profile is refused, naming the difference.
    let other = root.path().join("other");
    std::fs::create_dir(&other).unwrap();
    for f in ["summary.csv", "timeseries.csv", "latency.hlog"] {
        std::fs::copy(dirs[1].join(f), other.join(f)).unwrap();
    }
    let text = std::fs::read_to_string(dirs[1].join("run.json")).unwrap();
    std::fs::write(
        other.join("run.json"),
        text.replace("\"name\": \"shards-e2e\"", "\"name\": \"soak\""),
    )
    .unwrap();
    let out = harness(&[
        "merge",
        dirs[0].to_str().unwrap(),
        other.to_str().unwrap(),
        dirs[2].to_str().unwrap(),
        "--out",
        root.path().join("refused").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 3, "{err}");
    assert!(
        err.contains("profile name \"soak\" vs \"shards-e2e\""),
        "{err}"
    );
    assert!(!root.path().join("refused").exists());
}

#[test]
fn a_shard_late_for_its_start_refuses() {
    let root = tempfile::tempdir().unwrap();
    let profile = root.path().join("p.toml");
    std::fs::write(&profile, PROFILE).unwrap();
    let past = humantime::format_rfc3339_seconds(SystemTime::now() - Duration::from_secs(60));
    let out = harness(&[
        "run",
        profile.to_str().unwrap(),
        "--target",
        "127.0.0.1:9",
        "--shard",
        "1/3",
        "--start-at",
        &past.to_string(),
        "--out",
        root.path().join("out").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 4, "{err}");
    assert!(err.contains("ms late for its start at"), "{err}");
    assert!(!root.path().join("out").exists(), "nothing is written");
    let out = harness(&["run", profile.to_str().unwrap(), "--shard", "3/3"]);
    assert_eq!(code(&out), 3);
    assert!(String::from_utf8_lossy(&out.stderr).contains("0..=2"));
}
