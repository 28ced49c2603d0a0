//! Faults and knee searches on a cluster, end to end: the in-tree name server and
//! broker-under-test processes per cell (docs/src/clusters.md "Faults on one broker" and
//! "Capacity of a cluster").
//!
//! * broker 1 of 2 killed and restarted later, producers with the 5.3 retry policy: every send
//!   ends in SUCCESS for the application, both stores are read back and nothing acknowledged is
//!   missing; the broker's recovery (its first success after the restart) is later than the
//!   application's (retries on broker 0 succeed at once);
//! * a knee search on one broker and on two, in one run: every broker's capacity is fixed by a
//!   sleep inside the put lock (`injectAppendDelayMicros`), so the knees do not depend on how
//!   busy the machine is, and two brokers carry more than one (compared as a ratio);
//! * `[fault]` refusals with `--namesrv`.

use std::path::Path;

use harness::runner::run_profile;
use harness_model::profile::Profile;

mod common;
use common::options;

/// Two brokers at 300 sends/s; broker 1 is killed 1 s into the measured window and started
/// again 1.5 s later on its store and port.
const KILL: &str = r#"
name = "cluster-kill"
pin = false
[cluster]
brokers = 2
[workload]
rate = 300
warmup = "0.5s"
duration = "4s"
connections = 1
message_size = 128
queues = 2
retry = "rocketmq-5.3"
[broker]
mappedFileSizeCommitLog = 4194304
maxMessageSize = 65536
# A busy machine must not turn a slow answer into code 2: only the kill may fail a send.
waitTimeMillsInSendQueue = 20000
# A debug build on a busy 2-core machine: the generator may run late; that is not the question.
[validity]
max_lag_p99_us = 500000
[fault]
broker = 1
kill = "1s"
restart = true
restart_after = "1.5s"
"#;

#[test]
fn killing_broker_1_of_2_with_the_53_policy_loses_nothing_the_application_was_told() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::parse(KILL, "kill.toml", Path::new("kill.toml"), &[]).unwrap();
    let outcome = run_profile(&profile, &options(dir.path())).unwrap();
    assert_eq!(outcome.rows.len(), 1);
    let r = &outcome.rows[0];
    assert!(r.valid, "{r:?}");
    let s = &r.seg;
    let f = &r.fault;
    // The application's final success stays at 100 %: sends in flight to the dead broker were
    // retried on broker 0, and sends chosen for broker 1 while it had no connection went to
    // broker 0 without an attempt (the Java client's connect failure).
    assert!(s.sent > 0, "{r:?}");
    assert_eq!(s.counts.ok, s.sent, "every send ended in SUCCESS: {r:?}");
    // Reconciliation over both stores, the pool off: nothing acknowledged is missing.
    assert_eq!(f.acked_lost, Some(0), "{f:?}");
    assert_eq!(f.busy_stored, Some(0), "{f:?}");
    assert_eq!(f.corrupt, Some(0), "{f:?}");
    assert_eq!(f.fault_broker, "broker-1", "{f:?}");
    assert_eq!(f.broker_acked_lost, "broker-0=0;broker-1=0", "{f:?}");
    assert!(f.broker_phantom.starts_with("broker-0="), "{f:?}");
    // Broker 1 took sends before the kill and after the restart.
    assert!(s.per_broker[1][0] > 0, "{r:?}");
    assert!(s.per_broker[0][0] > s.per_broker[1][0], "{r:?}");
    // The broker came back after its 1.5 s down; the application never waited that long.
    let broker = f.recovery_ms.expect("broker 1 recovered").0;
    let app = f.app_recovery_ms.expect("the application recovered").0;
    assert!(broker >= 1500.0, "{f:?}");
    assert!(app < broker, "{f:?}");
    // The restarted broker's own log, named after it.
    let job = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    assert!(job.join("broker-1-restart-1.log").exists(), "{job:?}");
    let summary = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    let header = summary.lines().next().unwrap();
    for col in [
        "app_recovery_ms",
        "fault_broker",
        "broker_acked_lost",
        "broker_phantom",
        "broker_duplicates",
    ] {
        assert!(header.split(',').any(|c| c == col), "{col} in {header}");
    }
}

/// Every broker appends at most ~250 messages/s (4 ms asleep inside the put lock per message);
/// a send that waits 200 ms in the send queue is answered code 2, so past a broker's capacity
/// about the excess fraction is answered busy within a probe. 5 %: a loaded machine's stalls
/// answer a few sends busy far below capacity. One broker against two in one run.
const KNEE: &str = r#"
name = "cluster-knee"
pin = false
[cluster]
brokers = 2
[workload]
model = "knee"
rate = 100
connections = 1
message_size = 128
queues = 2
[broker]
mappedFileSizeCommitLog = 4194304
maxMessageSize = 65536
injectAppendDelayMicros = 4000
[knee]
growth = 2
precision = 0.15
settle = "0.5s"
probe_duration = "1.5s"
max_probes = 12
max_rate = 3200
[slo]
terms = ["busy_rate <= 5%", "achieved_rate >= 0.9 * target_rate"]
# A debug build on a busy 2-core machine: only the brokers' capacity may fail a probe.
[validity]
max_lag_p99_us = 500000
[matrix]
"cluster.brokers" = [1, 2]
"#;

#[test]
fn two_brokers_have_a_higher_knee_than_one() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::parse(KNEE, "knee.toml", Path::new("knee.toml"), &[]).unwrap();
    let outcome = run_profile(&profile, &options(dir.path())).unwrap();
    // The capacity table, for whoever reads the test's output (--nocapture).
    eprintln!("{}", outcome.table);
    let knee_of = |brokers: &str| {
        let rows: Vec<_> = outcome
            .rows
            .iter()
            .filter(|r| r.params[0] == brokers)
            .collect();
        assert!(!rows.is_empty(), "{brokers}: {:?}", outcome.rows);
        let k = rows[0].knee.knee_rate.expect("a knee").0;
        (k, rows[0].knee.knee_broker_share.clone())
    };
    let (one, share_one) = knee_of("1");
    let (two, share_two) = knee_of("2");
    assert!(
        two >= 1.4 * one,
        "two brokers {two}/s against one {one}/s: {}",
        outcome.table
    );
    // The knee is the cluster's, carried by both brokers about evenly (round robin).
    assert!(share_one.starts_with("broker-0=1.000"), "{share_one}");
    let shares: Vec<f64> = share_two
        .split(';')
        .map(|kv| kv.split_once('=').unwrap().1.parse().unwrap())
        .collect();
    assert_eq!(shares.len(), 2, "{share_two}");
    assert!(shares.iter().all(|&s| s > 0.3), "{share_two}");
    assert!(
        outcome.table.contains("share of ok at the knee"),
        "{}",
        outcome.table
    );
}

#[test]
fn faults_on_a_namesrv_cluster_need_pids_and_never_restart() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
name = "ns-fault"
[workload]
duration = "5s"
[fault]
kill = "1s"
restart = true
"#;
    let profile = Profile::parse(text, "ns.toml", Path::new("ns.toml"), &[]).unwrap();
    let mut opts = options(dir.path());
    // Refused before anything is contacted: no name server listens here.
    opts.namesrv = Some("127.0.0.1:9".parse().unwrap());
    opts.broker_pids = [("broker-a".to_owned(), 4242)].into();
    let e = run_profile(&profile, &opts).unwrap_err().to_string();
    assert!(e.contains("`fault.restart` is refused"), "{e}");
    let pause = Profile::parse(
        "name = \"ns-pause\"\n[workload]\nduration = \"5s\"\n[fault]\npause = \"1s for 1s\"\n",
        "p.toml",
        Path::new("p.toml"),
        &[],
    )
    .unwrap();
    opts.broker_pids.clear();
    let e = run_profile(&pause, &opts).unwrap_err().to_string();
    assert!(e.contains("--broker-pid NAME=PID"), "{e}");
}

/// A cluster started outside the run (as a user's would be), its brokers registered.
fn outside_cluster(dir: &Path, broker_keys: &str) -> harness::cluster::CellCluster {
    use rmq_client::name_server::master_addrs;
    use std::time::{Duration, Instant};
    let base = Profile::parse(
        &format!("name = \"ns\"\n[cluster]\nbrokers = 2\n[broker]\nmappedFileSizeCommitLog = 4194304\nmaxMessageSize = 65536\n{broker_keys}\n"),
        "ns.toml",
        Path::new("ns.toml"),
        &[],
    )
    .unwrap();
    let cell = &harness_model::matrix::expand(&base).unwrap()[0];
    let outside = dir.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let cluster = harness::cluster::CellCluster::start(
        &harness::kind::in_tree::InTree::new(common::broker_bin()),
        cell,
        2,
        &outside,
        None,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut names: Vec<String> = master_addrs(cluster.namesrv_addr)
            .unwrap_or_default()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        names.sort();
        if names == ["broker-0", "broker-1"] {
            return cluster;
        }
        assert!(
            Instant::now() < deadline,
            "brokers never registered: {names:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `--namesrv`: broker 1 of a cluster the harness did not start is paused through the pid given
/// as `--broker-pid broker-1=PID`, and every queue of both brokers is pulled back through the
/// protocol (no store is opened): nothing acknowledged is missing.
#[test]
fn a_namesrv_cluster_is_paused_by_pid_and_read_back_through_pull() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = outside_cluster(dir.path(), "");
    let profile = Profile::parse(
        r#"
name = "ns-pause"
pin = false
[workload]
rate = 200
warmup = "0.3s"
duration = "2.5s"
connections = 1
message_size = 64
queues = 2
retry = "rocketmq-5.3"
[validity]
max_lag_p99_us = 500000
[fault]
broker = 1
pause = "0.5s for 700ms"
"#,
        "ns.toml",
        Path::new("ns.toml"),
        &[],
    )
    .unwrap();
    let mut opts = options(&dir.path().join("run"));
    opts.namesrv = Some(cluster.namesrv_addr);
    opts.broker_pids = cluster
        .brokers
        .iter()
        .enumerate()
        .map(|(i, b)| {
            (
                format!("broker-{i}"),
                b.pid().expect("an in-tree broker has a pid"),
            )
        })
        .collect();
    let outcome = run_profile(&profile, &opts).unwrap();
    let r = &outcome.rows[0];
    assert!(r.valid, "{r:?}");
    let f = &r.fault;
    assert_eq!(f.fault_broker, "broker-1", "{f:?}");
    assert_eq!(f.acked_lost, Some(0), "{f:?}");
    assert_eq!(f.broker_acked_lost, "broker-0=0;broker-1=0", "{f:?}");
    assert_eq!(f.corrupt, Some(0), "{f:?}");
    // Sends held by the stopped broker were answered after SIGCONT (within send_timeout).
    assert_eq!(r.seg.counts.ok, r.seg.sent, "{r:?}");
    let series = std::fs::read_to_string(dir.path().join("run/timeseries.csv")).unwrap();
    assert!(
        series.contains("pause") && series.contains("resume"),
        "{series}"
    );
    let statuses = cluster.stop(std::time::Duration::from_secs(10));
    assert!(statuses.iter().all(|s| s.is_some_and(|s| s.success())));
}

/// `--namesrv`: a knee search on a cluster the harness did not start (brokers slowed to
/// ~250 appends/s each): the knee is the cluster's, carried by both brokers.
#[test]
fn a_knee_search_runs_on_a_namesrv_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = outside_cluster(dir.path(), "injectAppendDelayMicros = 4000");
    let text = KNEE.replace("[matrix]\n\"cluster.brokers\" = [1, 2]\n", "");
    let text = text.replace("[cluster]\nbrokers = 2\n", "");
    let text = text.replace("[broker]\nmappedFileSizeCommitLog = 4194304\nmaxMessageSize = 65536\ninjectAppendDelayMicros = 4000\n", "");
    let profile = Profile::parse(&text, "k.toml", Path::new("k.toml"), &[]).unwrap();
    let mut opts = options(&dir.path().join("run"));
    opts.namesrv = Some(cluster.namesrv_addr);
    let outcome = run_profile(&profile, &opts).unwrap();
    eprintln!("{}", outcome.table);
    let r = &outcome.rows[0];
    let knee = r.knee.knee_rate.expect("a knee").0;
    // Above what one broker can append (~250/s), below the maximum.
    assert!(knee > 260.0 && knee < 3200.0, "{}", outcome.table);
    assert!(r.knee.knee_broker_share.contains("broker-1=0."), "{r:?}");
    let statuses = cluster.stop(std::time::Duration::from_secs(10));
    assert!(statuses.iter().all(|s| s.is_some_and(|s| s.success())));
}

/// `--namesrv`: broker 1 killed through its pid and not restarted (the harness cannot): the
/// application keeps 100 % with the 5.3 policy; broker 0 is read back through PULL, broker 1
/// cannot be, so its figures and the totals are left empty rather than guessed.
#[test]
fn a_namesrv_broker_killed_by_pid_leaves_its_figures_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = outside_cluster(dir.path(), "");
    let profile = Profile::parse(
        r#"
name = "ns-kill"
pin = false
[workload]
rate = 200
warmup = "0.3s"
duration = "2s"
connections = 1
message_size = 64
queues = 2
retry = "rocketmq-5.3"
[validity]
max_lag_p99_us = 500000
[fault]
broker = 1
kill = "0.5s"
"#,
        "ns.toml",
        Path::new("ns.toml"),
        &[],
    )
    .unwrap();
    let mut opts = options(&dir.path().join("run"));
    opts.namesrv = Some(cluster.namesrv_addr);
    opts.broker_pids = [(
        "broker-1".to_owned(),
        cluster.brokers[1]
            .pid()
            .expect("an in-tree broker has a pid"),
    )]
    .into();
    let outcome = run_profile(&profile, &opts).unwrap();
    let r = &outcome.rows[0];
    assert!(r.valid, "{r:?}");
    assert_eq!(r.seg.counts.ok, r.seg.sent, "{r:?}");
    let f = &r.fault;
    assert_eq!(f.fault_broker, "broker-1", "{f:?}");
    assert_eq!(f.acked_lost, None, "{f:?}");
    assert_eq!(f.broker_acked_lost, "broker-0=0;broker-1=", "{f:?}");
    assert!(f.app_recovery_ms.is_some(), "{f:?}");
    assert_eq!(f.recovery_ms, None, "never restarted: {f:?}");
    assert!(cluster.brokers[1].exited().is_some(), "broker 1 was killed");
}

/// Broker 0 of the harness's own cluster stopped (SIGSTOP) for 700 ms and continued: its
/// sends wait and are answered after SIGCONT, both stores are read back, nothing is lost.
#[test]
fn pausing_broker_0_of_2_keeps_every_acknowledged_message() {
    let dir = tempfile::tempdir().unwrap();
    let text = KILL
        .replace("name = \"cluster-kill\"", "name = \"cluster-pause\"")
        .replace(
            "broker = 1\nkill = \"1s\"\nrestart = true\nrestart_after = \"1.5s\"\n",
            "broker = 0\npause = \"1s for 700ms\"\n",
        );
    let profile = Profile::parse(&text, "pause.toml", Path::new("pause.toml"), &[]).unwrap();
    assert!(profile.fault.as_ref().unwrap().pause.is_some());
    let outcome = run_profile(&profile, &options(dir.path())).unwrap();
    let r = &outcome.rows[0];
    assert!(r.valid, "{r:?}");
    assert_eq!(r.seg.counts.ok, r.seg.sent, "{r:?}");
    let f = &r.fault;
    assert_eq!(f.fault_broker, "broker-0", "{f:?}");
    assert_eq!(f.acked_lost, Some(0), "{f:?}");
    assert_eq!(f.broker_acked_lost, "broker-0=0;broker-1=0", "{f:?}");
    let series = std::fs::read_to_string(dir.path().join("timeseries.csv")).unwrap();
    assert!(
        series.contains("pause") && series.contains("resume"),
        "{series}"
    );
}
