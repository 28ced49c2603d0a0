//! Replication end to end (issue 26, harness side): a master and its slave started by the
//! harness (`[cluster] brokers = 1, slaves = 1`) on loopback, the real `broker-under-test`
//! binary, the 4.9 profile (5.3's SYNC_MASTER does not wait at `inSyncReplicas = 1`).
//!
//! * the slave paused longer than `slaveTimeout` under SYNC_MASTER: answers 12, counted in
//!   `flush_slave_timeout` (summary and time series), not as errors of another kind;
//! * the slave killed: answers 11 (`slave_not_available`): no slave is connected;
//! * the master killed under SYNC_MASTER: every acknowledged send is on the slave
//!   (`acked_lost_slave = 0`), and the pair keeps them all (`acked_lost = 0`).
//!
//! Slow rates and short windows: a loaded 2-core machine changes the counts' size, not their sign.

use std::path::Path;

use harness::report::SummaryRow;
use harness::runner::run_profile;
use harness_model::profile::Profile;

mod common;
use common::options;

fn run(dir: &Path, text: &str) -> (SummaryRow, String) {
    let path = dir.join("p.toml");
    std::fs::write(&path, text).unwrap();
    let profile = Profile::load(&path, &[]).expect("profile");
    let out = dir.join("out");
    let outcome = run_profile(&profile, &options(&out)).expect("run");
    assert_eq!(outcome.rows.len(), 1);
    let series = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    (outcome.rows.into_iter().next().unwrap(), series)
}

fn profile(name: &str, role: &str, fault: &str) -> String {
    format!(
        r#"
name = "{name}"
pin = false
[workload]
rate = 200
warmup = "0.5s"
duration = "4s"
connections = 2
message_size = 256
queues = 2
send_timeout = "3s"
[cluster]
brokers = 1
slaves = 1
[broker]
brokerVersionProfile = "4.9"
brokerRole = "{role}"
slaveTimeout = 300
haSendHeartbeatInterval = 200
mappedFileSizeCommitLog = 4194304
maxMessageSize = 65536
[fault]
{fault}
"#
    )
}

/// The sum of a timeseries column over every row.
fn column_sum(series: &str, name: &str) -> u64 {
    let mut lines = series.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = header.iter().position(|c| *c == name).expect(name);
    lines
        .map(|l| l.split(',').nth(i).unwrap().parse::<u64>().unwrap_or(0))
        .sum()
}

fn accounted(row: &SummaryRow) -> u64 {
    let c = &row.seg.counts;
    c.ok + c.busy_total() + c.errors() + c.timeouts + c.dropped
}

#[test]
fn a_paused_slave_gives_12s_counted_in_their_column() {
    let tmp = tempfile::tempdir().unwrap();
    let text = profile(
        "ha-pause",
        "SYNC_MASTER",
        "role = \"slave\"\npause = \"1s for 1500ms\"",
    );
    let (row, series) = run(tmp.path(), &text);
    let c = &row.seg.counts;
    let ctx = format!("{row:?}");
    assert!(
        c.flush_slave_timeout > 0,
        "no 12 while the slave was paused: {ctx}"
    );
    assert_eq!(c.other_codes, 0, "{ctx}");
    assert!(c.ok > 0, "{ctx}");
    assert_eq!(row.seg.sent, accounted(&row), "{ctx}");
    // The same answers per second (warm-up included there, so at least as many).
    assert!(column_sum(&series, "flush_slave_timeout") >= c.flush_slave_timeout);
    // The master made puts wait; a 12 waited the whole slaveTimeout (300 ms).
    let ha = &row.res.ha;
    assert!(ha.slave_waits.is_some_and(|n| n > 0), "{ctx}");
    assert!(ha.slave_wait_max_us.is_some_and(|m| m >= 300_000), "{ctx}");
}

#[test]
fn a_killed_slave_gives_11s_counted_in_their_column() {
    let tmp = tempfile::tempdir().unwrap();
    let text = profile(
        "ha-kill-slave",
        "SYNC_MASTER",
        "role = \"slave\"\nkill = \"1s\"",
    );
    let (row, series) = run(tmp.path(), &text);
    let c = &row.seg.counts;
    let ctx = format!("{row:?}");
    assert!(
        c.slave_not_available > 0,
        "no 11 after the slave died: {ctx}"
    );
    assert!(c.ok > 0, "{ctx}");
    assert_eq!(row.seg.sent, accounted(&row), "{ctx}");
    assert!(column_sum(&series, "slave_not_available") >= c.slave_not_available);
    // Codes 11 mean stored on the master: the pair read back loses nothing acknowledged.
    assert_eq!(row.fault.acked_lost, Some(0), "{ctx}");
    assert_eq!(row.res.ha.acked_lost_master, Some(0), "{ctx}");
}

#[test]
fn with_the_master_killed_the_slave_keeps_every_acknowledged_send() {
    let tmp = tempfile::tempdir().unwrap();
    let text = profile(
        "ha-kill-master",
        "SYNC_MASTER",
        "role = \"master\"\nkill = \"2s\"",
    );
    let (row, _) = run(tmp.path(), &text);
    let ctx = format!("{row:?}");
    let c = &row.seg.counts;
    assert!(c.ok > 0, "{ctx}");
    assert!(
        c.connection_errors > 0,
        "the load went on against a dead master: {ctx}"
    );
    // SYNC_MASTER answers SUCCESS only once the slave has the message.
    assert_eq!(row.res.ha.acked_lost_slave, Some(0), "{ctx}");
    assert_eq!(row.fault.acked_lost, Some(0), "{ctx}");
    assert_eq!(row.fault.corrupt, Some(0), "{ctx}");
}

/// Two masters, no slaves: broker 0 is a SYNC_MASTER without a slave, so under 4.9 it stores
/// every send and answers 11 at once. The Java client returns that SendResult; only with
/// `retry_another_broker_when_not_store_ok` does it send again, on broker 1.
#[test]
fn eleven_is_retried_on_another_broker_only_with_the_option() {
    let run_with = |option: bool| {
        let tmp = tempfile::tempdir().unwrap();
        let text = format!(
            r#"
name = "ha-retry-{option}"
pin = false
[workload]
rate = 200
warmup = "0.5s"
duration = "2s"
connections = 2
message_size = 256
queues = 2
retry = "rocketmq-4"
retry_another_broker_when_not_store_ok = {option}
[cluster]
brokers = 2
[broker]
brokerVersionProfile = "4.9"
"0.brokerRole" = "SYNC_MASTER"
mappedFileSizeCommitLog = 4194304
maxMessageSize = 65536
"#
        );
        run(tmp.path(), &text).0
    };
    let plain = run_with(false);
    let c = &plain.seg.counts;
    let ctx = format!("{plain:?}");
    assert!(c.slave_not_available > 0, "{ctx}");
    assert_eq!(
        plain.seg.attempts, plain.seg.sent,
        "11 is never retried: {ctx}"
    );
    assert_eq!(plain.seg.sent, accounted(&plain), "{ctx}");

    let retried = run_with(true);
    let c = &retried.seg.counts;
    let ctx = format!("{retried:?}");
    assert_eq!(
        c.slave_not_available, 0,
        "every 11 was sent again elsewhere: {ctx}"
    );
    assert_eq!(c.ok, retried.seg.sent, "{ctx}");
    assert!(retried.seg.attempts > retried.seg.sent, "{ctx}");
}

/// `--namesrv` with `[cluster] slaves = 1`: the pair of an existing cluster is found through the
/// route (brokerAddrs id 1) and its master's runtime info, and the replication columns come
/// from that master.
#[test]
fn namesrv_finds_the_slave_in_the_route() {
    use harness::cluster::CellCluster;
    let dir = tempfile::tempdir().unwrap();
    let base = Profile::parse(
        "name = \"pair\"\n[cluster]\nbrokers = 1\nslaves = 1\n[broker]\nbrokerVersionProfile = \"4.9\"\n\
brokerRole = \"SYNC_MASTER\"\nhaSendHeartbeatInterval = 200\nmappedFileSizeCommitLog = 4194304\nmaxMessageSize = 65536\n",
        "pair.toml",
        Path::new("pair.toml"),
        &[],
    )
    .unwrap();
    let cell = &harness_model::matrix::expand(&base).unwrap()[0];
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let cluster = CellCluster::start_pairs(
        &harness::kind::in_tree::InTree::new(common::broker_bin()),
        cell,
        (1, 1),
        &outside,
        None,
    )
    .unwrap();
    let profile = Profile::parse(
        "name = \"pair\"\npin = false\n[cluster]\nbrokers = 1\nslaves = 1\n[workload]\nrate = 200\n\
warmup = \"0.3s\"\nduration = \"1s\"\nconnections = 1\nmessage_size = 64\n",
        "pair.toml",
        Path::new("pair.toml"),
        &[],
    )
    .unwrap();
    let mut opts = options(&dir.path().join("run"));
    opts.namesrv = Some(cluster.namesrv_addr);
    let outcome = run_profile(&profile, &opts).unwrap();
    let r = &outcome.rows[0];
    let ctx = format!("{r:?}");
    assert_eq!(r.seg.counts.ok, r.seg.sent, "{ctx}");
    // Every put of the SYNC_MASTER waited for the slave found through the route.
    assert!(
        r.res.ha.slave_waits.is_some_and(|n| n >= r.seg.sent),
        "{ctx}"
    );
    assert!(r.res.ha.repl_lag_max_bytes.is_some(), "{ctx}");
    let statuses = cluster.stop(std::time::Duration::from_secs(10));
    assert!(statuses.iter().all(|s| s.is_some_and(|s| s.success())));
}
