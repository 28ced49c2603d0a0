//! Apache RocketMQ's own JVMs through the broker seam (`kind::apache`): the released 5.3.3 and
//! 4.9.7 brokers start from the jars in target/apache (fetched on first use), answer on the
//! port the harness chose, run with the keys broker.conf set (read back with
//! GET_BROKER_CONFIG, 26), report runtime info (28), die on kill -9 and stop on SIGTERM; a key
//! that does not take refuses the broker; a broker-under-test-only key refuses the run (exit 3);
//! the brokers of one kind share one name server, which goes with the kind.
//!
//! Without a JDK these tests are `#[ignore]`d with the install hint (build.rs sets `no_jdk`), so
//! `make test` counts them as skipped; under CI (`CI` set) they always run.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use harness::kind::apache::Apache;
use harness::kind::{BrokerKind, MemberSpec};
use rmq_client::admin::AdminConn;

fn conf(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// One broker of `version` with two non-default keys: up, configured, answering, killed.
fn broker_runs_with_its_keys(version: &str) {
    let apache = Apache::new(version, None).expect("jars (scripts/apache-jars.sh)");
    let run = tempfile::tempdir().unwrap();
    let dir = run.path().join("cell");
    std::fs::create_dir(&dir).unwrap();
    let keys = conf(&[
        ("listenPort", "0"),
        ("sendMessageThreadPoolNums", "3"),
        ("waitTimeMillsInSendQueue", "1234"),
        ("storePathRootDir", &dir.join("store").display().to_string()),
    ]);
    let spec = MemberSpec::new("broker", &dir, &keys);
    let mut broker = apache
        .start_broker(&spec)
        .expect("the Apache broker starts");
    // Generous: a JVM just booted on a busy 2-core machine (a 5 s limit failed once here,
    // GET_BROKER_RUNTIME_INFO, while the C++ interop ran beside it).
    let timeout = Duration::from_secs(30);
    let mut admin = AdminConn::connect(broker.addr(), timeout).unwrap();
    let effective = admin.broker_config(timeout).unwrap();
    assert_eq!(effective["sendMessageThreadPoolNums"], "3");
    assert_eq!(effective["waitTimeMillsInSendQueue"], "1234");
    assert_eq!(effective["brokerIP1"], "127.0.0.1");
    admin
        .create_topic("ApacheE2E", 4, timeout)
        .expect("UPDATE_AND_CREATE_TOPIC");
    let info = admin
        .runtime_info(timeout)
        .expect("GET_BROKER_RUNTIME_INFO");
    // The send pool's queue figures the harness samples every second.
    assert!(info.contains_key("sendThreadPoolQueueSize"), "{info:?}");
    assert!(info.contains_key("pageCacheLockTimeMills"), "{info:?}");
    assert_eq!(
        info.get("remainTransientStoreBufferNumbs")
            .map(String::as_str),
        Some("2147483647")
    );
    let pid = broker.pid().expect("a JVM has a pid");
    broker.kill9().unwrap();
    assert!(
        broker.exited().is_some(),
        "kill -9 returns once the JVM is gone"
    );
    // Reaped, not a zombie: kill9 waited for it.
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "pid {pid} still exists"
    );
    assert_eq!(
        broker.stop(Duration::from_secs(1)).map(|s| s.code()),
        Some(None)
    );
    // The run's name server, beside the cell's folder, goes with the kind.
    drop(apache);
    common::assert_no_jvm_under(run.path());
}

/// The name server's port, from the listenPort its conf was given.
fn namesrv_port(conf: &Path) -> u16 {
    let text = std::fs::read_to_string(conf).unwrap();
    text.trim()
        .strip_prefix("listenPort=")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{}: {text}", conf.display()))
}

/// Two brokers of one kind, one after the other as a run's cells (the first killed as a
/// discarded cell's is): one name server, started for the first with its files in the run's
/// folder, and the second registers with it under the same name (`broker-a`), listed at its
/// own port and no longer at the first's. One name server per run, not one per cell, saved a
/// 1.6-1.8 s boot a cell.
#[test]
#[cfg_attr(
    no_jdk,
    ignore = "no JDK: install openjdk-17-jdk-headless (apt-get) to start Apache RocketMQ"
)]
fn a_kind_s_brokers_share_one_name_server_that_goes_with_the_kind() {
    let apache = Apache::new("5.3.3", None).expect("jars (scripts/apache-jars.sh)");
    let run = tempfile::tempdir().unwrap();
    let mut ports = Vec::new();
    for cell in ["c1", "c2"] {
        let dir = run.path().join(cell);
        std::fs::create_dir(&dir).unwrap();
        let keys = conf(&[
            ("listenPort", "0"),
            ("storePathRootDir", &dir.join("store").display().to_string()),
        ]);
        let spec = MemberSpec::new("broker", &dir, &keys);
        let broker = apache
            .start_broker(&spec)
            .expect("the Apache broker starts");
        assert!(
            !dir.join("broker-namesrv.conf").exists(),
            "a cell started a name server of its own"
        );
        let ns = SocketAddr::from((
            [127, 0, 0, 1],
            namesrv_port(&run.path().join("apache-5.3.3-namesrv.conf")),
        ));
        let table = rmq_client::name_server::cluster_info(ns).expect("GET_BROKER_CLUSTER_INFO");
        let listed: Vec<u16> = table
            .broker_addr_table
            .values()
            .flat_map(|b| b.broker_addrs.values())
            .filter_map(|a| a.parse::<SocketAddr>().ok())
            .map(|a| a.port())
            .collect();
        assert!(listed.contains(&broker.addr().port()), "{listed:?}");
        for old in &ports {
            assert!(
                !listed.contains(old),
                "a discarded broker is still listed: {listed:?}"
            );
        }
        ports.push(broker.addr().port());
        if cell == "c2" {
            // UPDATE_AND_CREATE_TOPIC_LIST (18), the harness's nudge for a broker that missed
            // its start registration: both topics reach the name server in one increment.
            let timeout = Duration::from_secs(30);
            AdminConn::connect(broker.addr(), timeout)
                .unwrap()
                .create_topic_list(&["E2EList1", "E2EList2"], 3, timeout)
                .expect("UPDATE_AND_CREATE_TOPIC_LIST");
            for topic in ["E2EList1", "E2EList2"] {
                let route = rmq_client::name_server::fetch_route(ns, topic)
                    .unwrap()
                    .unwrap_or_else(|| panic!("no route of {topic}"));
                assert_eq!(route.queue_datas.len(), 1, "{route:?}");
                assert_eq!(route.queue_datas[0].read_queue_nums, 3, "{route:?}");
            }
        }
        broker.discard(Duration::from_secs(1));
    }
    assert!(
        !run.path().join("apache-5.3.3-namesrv-2.conf").exists(),
        "a second name server was started"
    );
    drop(apache);
    common::assert_no_jvm_under(run.path());
}

#[test]
#[cfg_attr(
    no_jdk,
    ignore = "no JDK: install openjdk-17-jdk-headless (apt-get) to start Apache RocketMQ"
)]
fn apache_5_3_3_runs_with_the_keys_it_was_given() {
    broker_runs_with_its_keys("5.3.3");
}

#[test]
#[cfg_attr(
    no_jdk,
    ignore = "no JDK: install openjdk-17-jdk-headless (apt-get) to start Apache RocketMQ"
)]
fn apache_4_9_7_runs_with_the_keys_it_was_given() {
    broker_runs_with_its_keys("4.9.7");
}

#[test]
#[cfg_attr(
    no_jdk,
    ignore = "no JDK: install openjdk-17-jdk-headless (apt-get) to start Apache RocketMQ"
)]
fn a_value_apache_ignores_in_silence_refuses_the_broker() {
    let apache = Apache::new("5.3.3", None).expect("jars");
    let run = tempfile::tempdir().unwrap();
    let dir = run.path().join("cell");
    std::fs::create_dir(&dir).unwrap();
    let keys = conf(&[
        ("listenPort", "0"),
        // Not an int: MixAll.properties2Object swallows the NumberFormatException.
        ("sendMessageThreadPoolNums", "four"),
    ]);
    let spec = MemberSpec::new("broker", &dir, &keys);
    let err = match apache.start_broker(&spec) {
        Ok(_) => panic!("a broker that ignored a key was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("did not take"), "{err}");
    assert!(err.contains("sendMessageThreadPoolNums=four"), "{err}");
    // Stopped, not left running: no JVM of this cell's folder remains (the run's name server
    // runs on until the kind goes).
    common::assert_no_jvm_under(&dir);
    drop(apache);
    common::assert_no_jvm_under(run.path());
}

#[test]
#[cfg_attr(
    no_jdk,
    ignore = "no JDK: install openjdk-17-jdk-headless (apt-get) to start Apache RocketMQ"
)]
fn a_broker_under_test_key_is_refused_before_cell_1() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stderr) = run(
        dir.path(),
        "version = \"5.3.3\"\ninjectPutStallMillis = 400\n",
    );
    assert_eq!(
        out.status.code(),
        Some(harness::exit::INVALID_INPUT as i32),
        "{stderr}"
    );
    assert!(stderr.contains("injectPutStallMillis"), "{stderr}");
    assert!(stderr.contains("broker-under-test only"), "{stderr}");
    assert!(stderr.contains("p.toml:8"), "names the line: {stderr}");
    assert!(!dir.path().join("out").exists(), "nothing was run");
}

#[test]
fn version_4_9_8_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stderr) = run(dir.path(), "version = \"4.9.8\"\n");
    let profile = dir.path().join("p.toml");
    assert_eq!(
        out.status.code(),
        Some(harness::exit::INVALID_INPUT as i32),
        "{stderr}"
    );
    assert!(stderr.contains("write \"4.9.7\""), "{stderr}");
    let typo = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["run", profile.to_str().unwrap(), "--broker", "apache-5.33"])
        .output()
        .unwrap();
    assert_eq!(typo.status.code(), Some(harness::exit::USAGE as i32));
    assert!(String::from_utf8_lossy(&typo.stderr).contains("4.9.7, 5.3.3"));
}

/// Runs a one-cell Apache profile in `dir` whose `[broker]` table ends with `broker_tail`
/// (after `kind = "apache"`, line 7 on); broker-under-test's binary is named so a refusal can
/// say which keys are its own.
fn run(dir: &Path, broker_tail: &str) -> (std::process::Output, String) {
    let profile = dir.join("p.toml");
    let text = format!(
        "name = \"p\"\n[workload]\nrate = 100\nduration = \"1s\"\n[broker]\nkind = \"apache\"\n{broker_tail}"
    );
    std::fs::write(&profile, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["run", profile.to_str().unwrap(), "--out"])
        .arg(dir.join("out"))
        .env("BROKER_UNDER_TEST_BIN", common::broker_bin())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stderr)
}

mod common;

/// An Apache cell, then a broker-under-test cell: the first cell's JVM is discarded beside the
/// second cell's start (`runner::reaper`, `Member::discard`) and before the second cell's load.
/// Its store is read by nobody, so it is killed, not stopped (its shutdown hook never ran: a
/// clean stop took 8.7-15 s); its last log line is older than the second cell's first measured
/// second, no JVM outlives the run, and the first cell's store is removed.
#[test]
#[cfg_attr(
    no_jdk,
    ignore = "no JDK: install openjdk-17-jdk-headless (apt-get) to start Apache RocketMQ"
)]
fn a_cell_s_jvm_is_discarded_beside_the_next_start_and_before_its_load() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.toml");
    std::fs::write(
        &profile,
        "name = \"p\"\n[workload]\nrate = 100\nduration = \"1s\"\n\
         [broker]\nversion = \"5.3.3\"\n\
         [matrix]\n\"broker.kind\" = [\"apache\", \"in-tree\"]\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["run", profile.to_str().unwrap(), "--out"])
        .arg(&out_dir)
        .env("BROKER_UNDER_TEST_BIN", common::broker_bin())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("warning"),
        "a stop was not clean: {stderr}"
    );
    let summary = std::fs::read_to_string(out_dir.join("summary.csv")).unwrap();
    let series = std::fs::read_to_string(out_dir.join("timeseries.csv")).unwrap();
    let header: Vec<&str> = series.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (cell, end) = (col("cell_id"), col("end_unix_s"));
    // Each cell's first second, in the order they ran.
    let mut firsts: Vec<(String, f64)> = Vec::new();
    for line in series.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if !firsts.iter().any(|(c, _)| c == f[cell]) {
            firsts.push((f[cell].to_owned(), f[end].parse().unwrap()));
        }
    }
    assert_eq!(firsts.len(), 2, "{summary}");
    let first_dir = out_dir.join(format!("{}-r1", firsts[0].0));
    let log = first_dir.join("broker-home/logs/rocketmqlogs/broker.log");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("Shutdown hook over"),
        "the discarded JVM was stopped, not killed: {}",
        log.display()
    );
    let last_write = std::fs::metadata(&log)
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    // end_unix_s closes a second: the second cell's load began a second before it.
    let second_load = firsts[1].1 - 1.0;
    assert!(
        last_write <= second_load,
        "the first JVM still wrote its log at {last_write}, after the second load began at {second_load}"
    );
    assert!(
        !first_dir.join("store").exists(),
        "the first store was left"
    );
    // The JVM's JIT, read from its HotSpot perf data: a broker a few seconds old compiles in
    // every second; broker-under-test has no JIT, so its cell's column is empty.
    let (jit_ms, kind) = (col("broker_jit_ms"), col("cell_id"));
    let jit_of = |cell_id: &str| -> Vec<String> {
        series
            .lines()
            .skip(1)
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f[kind] == cell_id)
            .map(|f| f[jit_ms].to_owned())
            .collect()
    };
    let apache_jit = jit_of(&firsts[0].0);
    assert!(
        apache_jit
            .iter()
            .any(|v| v.parse::<f64>().is_ok_and(|ms| ms > 0.0)),
        "no JIT time in the Apache cell's seconds: {apache_jit:?}"
    );
    assert!(
        jit_of(&firsts[1].0).iter().all(String::is_empty),
        "broker-under-test has no JIT"
    );
    let summary_header: Vec<&str> = summary.lines().next().unwrap().split(',').collect();
    let pct = summary_header
        .iter()
        .position(|h| *h == "broker_jit_pct")
        .unwrap();
    let pcts: Vec<&str> = summary
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(pct).unwrap_or(""))
        .collect();
    assert!(
        pcts.iter().filter(|v| v.parse::<f64>().is_ok()).count() == 1
            && pcts.iter().filter(|v| v.is_empty()).count() == 1,
        "one JVM cell with a JIT share, one without: {pcts:?}"
    );
    // 5.3.3's self-signed certificates went into the JVM's home, not /tmp.
    let certs = std::fs::read_dir(first_dir.join("broker-home/tmp"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(certs > 0, "no temporary file in the JVM's own tmp");
    common::assert_no_jvm_under(dir.path());
}
