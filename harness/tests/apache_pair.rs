//! Apache RocketMQ as a replicating pair through the cluster seam (`[cluster] slaves = 1`,
//! fidelity row 8): a SYNC_MASTER and its slave start as a cell's cluster, the slave under the
//! master's name with id 1, ready once the master logged the slave's first report; a send then
//! answers 0, and with the slave stopped (SIGSTOP) a send waits `slaveTimeout` and answers 12
//! FLUSH_SLAVE_TIMEOUT (4.9.7 CommitLog.submitReplicaRequest and GroupTransferService; 5.3.3
//! CommitLog.handleHA with `inSyncReplicas = 2`). Three JVMs: about 20 s for 4.9.7 here, 10-15 s
//! more for 5.3.3 (its slave learns the master's HA address from a registration).
//!
//! Without a JDK the test is `#[ignore]`d with the install hint (build.rs sets `no_jdk`).

use std::path::Path;
use std::time::{Duration, Instant};

use harness::cluster::CellCluster;
use harness::kind::apache::Apache;
use harness_model::matrix::expand;
use harness_model::profile::Profile;
use remoting::code::RequestCode;
use remoting::command::RemotingCommand;
use remoting::headers::SendMessageRequestHeaderV2;
use rmq_client::admin::AdminConn;

const PAIR: &str = r#"
name = "pair"
[cluster]
brokers = 1
slaves = 1
[workload]
duration = "1s"
[broker]
kind = "apache"
brokerRole = "SYNC_MASTER"
slaveTimeout = 1000
haSendHeartbeatInterval = 1000
[broker."5.3.3"]
inSyncReplicas = 2
"#;

const TOPIC: &str = "PairE2E";

/// One SEND_MESSAGE_V2 of 16 bytes to queue 0: its code and how long the answer took.
fn send(admin: &mut AdminConn) -> (i32, Duration) {
    let header = SendMessageRequestHeaderV2 {
        a: "PairE2EProducer".into(),
        b: TOPIC.into(),
        c: "TBW102".into(),
        d: 4,
        e: 0,
        f: 0,
        g: 0,
        h: 0,
        i: None,
        j: Some(0),
        k: Some(false),
        l: None,
        m: Some(false),
        n: None,
    };
    let cmd = RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, 0)
        .with_header(&header)
        .with_body(vec![7u8; 16]);
    let begin = Instant::now();
    let answer = admin
        .call(cmd, Duration::from_secs(10))
        .expect("the master answers");
    (answer.code, begin.elapsed())
}

#[test]
#[cfg_attr(
    no_jdk,
    ignore = "no JDK: install openjdk-17-jdk-headless (apt-get) to start Apache RocketMQ"
)]
fn an_apache_4_9_7_sync_master_answers_0_then_12_with_its_slave_stopped() {
    pair_answers_0_then_12("4.9.7");
}

#[test]
#[cfg_attr(
    no_jdk,
    ignore = "no JDK: install openjdk-17-jdk-headless (apt-get) to start Apache RocketMQ"
)]
fn an_apache_5_3_3_sync_master_answers_0_then_12_with_its_slave_stopped() {
    pair_answers_0_then_12("5.3.3");
}

fn pair_answers_0_then_12(version: &str) {
    let begin = Instant::now();
    let set = format!("broker.version={version}");
    let profile = Profile::parse(PAIR, "p.toml", Path::new("p.toml"), &[set]).unwrap();
    let cell = expand(&profile).unwrap().remove(0);
    let apache = Apache::new(version, None).expect("jars (scripts/apache-jars.sh)");
    let dir = tempfile::tempdir().unwrap();
    let cc = CellCluster::start_pairs(&apache, &cell, (1, 1), dir.path(), None)
        .expect("the pair starts and the slave reports");
    let (master, slave) = (&cc.brokers[0], &cc.slaves[0]);

    // One name, ids 0 and 1, in the name server's cluster table.
    let info = rmq_client::name_server::cluster_info(cc.namesrv_addr).unwrap();
    let ids: Vec<i64> = info.broker_addr_table["broker-0"]
        .broker_addrs
        .keys()
        .copied()
        .collect();
    assert_eq!(ids, [0, 1], "{info:?}");
    let slave_conf = std::fs::read_to_string(dir.path().join("broker-0-slave.conf")).unwrap();
    for line in ["brokerRole=SLAVE", "brokerId=1", "brokerName=broker-0"] {
        assert!(slave_conf.lines().any(|l| l == line), "{slave_conf}");
    }

    let timeout = Duration::from_secs(10);
    let mut admin = AdminConn::connect(master.addr(), timeout).unwrap();
    admin.create_topic(TOPIC, 1, timeout).unwrap();
    let (code, _) = send(&mut admin);
    assert_eq!(code, 0, "the slave acknowledged the put");

    slave.signal(libc::SIGSTOP).unwrap();
    let (code, took) = send(&mut admin);
    slave.signal(libc::SIGCONT).unwrap();
    assert_eq!(code, 12, "FLUSH_SLAVE_TIMEOUT with the slave stopped");
    // slaveTimeout 1000 (4.9 waits in 1000-ms slices): between 1 and about 2 s.
    assert!(took >= Duration::from_millis(990), "{took:?}");
    assert!(took < Duration::from_secs(4), "{took:?}");

    cc.stop(Duration::from_secs(15));
    eprintln!("{version}: the pair's test took {:?}", begin.elapsed());
}
