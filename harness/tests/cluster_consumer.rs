//! Push consumers on a cluster (issue 25): a name server and two broker-under-test processes,
//! the topic's route read by the consumers, their queues spread over both brokers. On a clean
//! run, concurrently and orderly, every acknowledged message is consumed exactly once, both
//! brokers' queues are consumed, and two instances split the 2 × 4 queues as
//! AllocateMessageQueueAveragely says: sorted by (brokerName, queueId), the first client id
//! takes broker-0's four, the second broker-1's. Then broker 1 of 2 is killed and restarted
//! under running consumers.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use harness::cluster::{prepare, CellCluster};
use harness::consumer::{ConsumerRun, Mq, SendTracking, Target};
use harness::kind::in_tree::process::BrokerProcess;
use harness::report::SummaryRow;
use harness::runner::run_profile;
use harness_model::matrix;
use harness_model::profile::{Profile, Workload};
use rmq_client::admin::AdminConn;

mod common;
use common::{broker_bin, options};

const CLUSTER: &str = r#"
name = "cluster-consumer"
pin = false
[cluster]
brokers = 2
[workload]
rate = 300
warmup = "0.5s"
duration = "2.5s"
connections = 1
message_size = 128
queues = 4
[broker]
mappedFileSizeCommitLog = 16777216
[consumer]
instances = 2
consume_threads = 4
processing_time = "0ms"
prefill = 200
drain_timeout = "40s"
# 5.3: an orderly queue whose lock is refused while its old owner lets go is tried again 1 s
# later (4.x waits for the next 20-s rebalance).
client_version = "5.3"
[validity]
# The machine is shared: generator lag is not what this test is about.
max_lag_p99_us = 1000000
[matrix]
# Orderly: LOCK_BATCH_MQ goes to each queue's own broker.
"consumer.mode" = ["concurrently", "orderly"]
"#;

/// The queues of the last `messageQueueChanged` line of `who` in consumer.log.
fn last_assignment(log: &str, who: &str) -> Vec<String> {
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains(&format!("] {who} ")) && l.contains("messageQueueChanged"))
        .unwrap_or_else(|| panic!("no messageQueueChanged of {who} in\n{log}"));
    let list = &line[line.find("assigned queues [").unwrap() + "assigned queues [".len()..];
    let list = &list[..list.find(']').unwrap()];
    list.split(", ")
        .map(|s| s.trim_matches('"').to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

#[test]
fn consumers_read_every_broker_of_the_route_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::parse(CLUSTER, "cc.toml", Path::new("cc.toml"), &[]).unwrap();
    let outcome = run_profile(&profile, &options(dir.path())).unwrap();
    assert!(!outcome.interrupted);
    assert_eq!(outcome.rows.len(), 2);
    for r in &outcome.rows {
        check_row(dir.path(), r);
    }
    let summary = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(summary.as_bytes());
    let header = rd.headers().unwrap().clone();
    for row in rd.records() {
        let row = row.unwrap();
        let col = |name: &str| row[header.iter().position(|h| h == name).unwrap()].to_owned();
        assert!(col("broker_consumed").starts_with("broker-0="), "{summary}");
        assert!(col("broker_lag_max").contains(";broker-1="), "{summary}");
    }
}

/// One cell's checks: exactly once over both brokers, both consumed, the split.
fn check_row(out: &Path, r: &SummaryRow) {
    let c = r.consumer.clone().expect("consumer figures");
    eprintln!("{}: {c:?}", r.cell_id);
    assert!(r.valid, "{}", r.invalid_reason);
    assert!(c.drained, "{c:?}");
    // Exactly once over both brokers: nothing acknowledged is missing, nothing came twice.
    assert_eq!(c.lost, Some(0), "{c:?}");
    assert_eq!(c.duplicates, 0, "{c:?}");
    assert_eq!(c.foreign, 0, "{c:?}");
    assert_eq!(c.lag_at_end, 0, "{c:?}");
    let acked = r.seg.counts.ok;
    assert!(acked > 0, "{r:?}");
    // The load's sends in the window plus the prefill and warm-up: at least the window's.
    assert!(c.consumed >= acked, "consumed {} of {acked}", c.consumed);
    // Both brokers' queues were consumed, and the per-broker counts add up to the total.
    let names: Vec<&str> = c.per_broker.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["broker-0", "broker-1"], "{c:?}");
    assert!(c.per_broker.iter().all(|(_, b)| b.consumed > 0), "{c:?}");
    let sum: u64 = c.per_broker.iter().map(|(_, b)| b.consumed).sum();
    assert_eq!(sum, c.consumed, "{c:?}");
    // The producer spread its sends over both brokers too.
    assert!(r.seg.per_broker.iter().all(|b| b[0] > 0), "{r:?}");

    // Two instances, 2 × 4 queues: one broker's queues each (AllocateMessageQueueAveragely
    // over the sorted queues; which instance is first depends on the client ids' order).
    let log = std::fs::read_to_string(out.join(format!("{}-r1/consumer.log", r.cell_id))).unwrap();
    let mut split = [
        last_assignment(&log, "consumer-0"),
        last_assignment(&log, "consumer-1"),
    ];
    split.sort();
    let queues = |b: &str| (0..4).map(|q| format!("{b}:{q}")).collect::<Vec<_>>();
    assert_eq!(split, [queues("broker-0"), queues("broker-1")], "{log}");
}

/// Sends `n` messages to queue `queue` of the broker at `addr`, numbered from `first`, with
/// the run's UNIQ_KEY prefix; the acknowledged ones are tracked. Returns how many were.
fn send(
    addr: SocketAddr,
    w: &Workload,
    tracking: &SendTracking,
    first: u64,
    n: u64,
    queue: i32,
) -> u64 {
    let mut conn = AdminConn::connect(addr, Duration::from_secs(3)).unwrap();
    let mut builder = harness::send_spec::builder(w);
    builder.set_uniq_prefix(&tracking.prefix);
    let mut buf = bytes::BytesMut::new();
    let mut acked = 0;
    for seq in first..first + n {
        buf.clear();
        builder.encode_into_queue(seq, Some(queue), 0, std::time::Instant::now(), &mut buf);
        let cmd = remoting::decode_frame(&mut buf, remoting::MAX_FRAME_LEN)
            .unwrap()
            .unwrap();
        let r = conn.call(cmd, Duration::from_secs(5)).unwrap();
        if r.code == 0 {
            tracking.ack(seq);
            acked += 1;
        }
    }
    acked
}

/// Waits (up to `within`) until `broker` has consumed at least `n`; its count then.
fn wait_consumed(run: &ConsumerRun, broker: &str, n: u64, within: Duration) -> u64 {
    let end = Instant::now() + within;
    loop {
        let got = run
            .per_broker()
            .iter()
            .find(|(name, _)| name == broker)
            .map_or(0, |(_, b)| b.consumed);
        if got >= n || Instant::now() >= end {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Broker 1 of 2 is killed (`kill -9` on the harness's own process handle) while the
/// consumers run: broker 0's queues go on being consumed, and once broker 1 is back on its
/// port the consumers reconnect (5.3: heartbeat and rebalance on the new connection) and
/// consume what is sent to it afterwards. Nothing acknowledged is lost.
#[test]
fn a_killed_broker_s_queues_resume_after_its_restart() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        "name = \"kill\"\n[cluster]\nbrokers = 2\n[workload]\nqueues = 2\nmessage_size = 64\n\
        [broker]\nmappedFileSizeCommitLog = 16777216\n\
        [consumer]\nclient_version = \"5.3\"\nprefill = 0\ndrain_timeout = \"30s\"\n";
    let profile = Profile::parse(text, "kill.toml", Path::new("kill.toml"), &[]).unwrap();
    let cell = &matrix::expand(&profile).unwrap()[0];
    let w = &cell.workload;
    let mut cluster = CellCluster::start(
        &harness::kind::in_tree::InTree::new(broker_bin()),
        cell,
        2,
        dir.path(),
        None,
    )
    .unwrap();
    let load = prepare(cluster.namesrv_addr, Some(2), w).unwrap();
    let addr_of = |i: usize| load.router.brokers[i].addr;
    let (b0, b1) = (addr_of(0), addr_of(1));
    assert_eq!(load.router.brokers[1].name, "broker-1");

    let cfg = cell.consumer.clone().unwrap();
    let log = dir.path().join("consumer.log");
    let mut run = ConsumerRun::start(
        &cfg,
        w,
        Target::NameServer(cluster.namesrv_addr),
        Some(10_000),
        Some(&log),
    )
    .unwrap();
    let tracking = run.tracking();
    let mut seq = 0;
    let mut acked = 0;
    for (addr, q) in [(b0, 0), (b0, 1), (b1, 0), (b1, 1)] {
        acked += send(addr, w, &tracking, seq, 20, q);
        seq += 20;
    }
    assert_eq!(acked, 80);
    let within = Duration::from_secs(20);
    assert_eq!(wait_consumed(&run, "broker-0", 40, within), 40);
    assert_eq!(wait_consumed(&run, "broker-1", 40, within), 40);

    // Broker 1 down: broker 0's queues are still consumed.
    cluster.brokers[1].kill9().expect("SIGKILL to broker-1");
    acked += send(b0, w, &tracking, seq, 20, 0);
    seq += 20;
    assert_eq!(wait_consumed(&run, "broker-0", 60, within), 60);

    // Broker 1 back on its port, with its store: its queues resume.
    let conf = dir.path().join("broker-1.conf");
    let text = std::fs::read_to_string(&conf).unwrap();
    let text = text.replace("listenPort=0", &format!("listenPort={}", b1.port()));
    std::fs::write(&conf, text).unwrap();
    let again = BrokerProcess::start(
        &broker_bin(),
        &conf,
        &dir.path().join("broker-1-again.log"),
        None,
        Duration::from_secs(20),
    )
    .unwrap();
    assert_eq!(again.addr, b1);
    cluster.brokers[1] = Box::new(again);
    acked += send(b1, w, &tracking, seq, 20, 1);
    let got = wait_consumed(&run, "broker-1", 60, Duration::from_secs(30));
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        got >= 60,
        "broker-1 consumed {got} after its restart\n{log_text}"
    );

    run.drain(|_| {});
    let f = run.finish();
    eprintln!("figures: {f:?}");
    assert_eq!(f.lost, Some(0), "{acked} acknowledged: {f:?}");
    assert!(f.drained, "{f:?}");
    cluster.stop(Duration::from_secs(10));
}

/// Waits (up to 20 s) until the consumers hold exactly the queues of `brokers` (2 each).
fn wait_assigned(run: &ConsumerRun, brokers: &[&str]) {
    let want: Vec<Mq> = brokers
        .iter()
        .flat_map(|b| (0..2).map(move |q| Mq::new(b, q)))
        .collect();
    let end = Instant::now() + Duration::from_secs(20);
    while run.assigned() != want && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(run.assigned(), want);
}

/// With the route read every 200 ms (`poll_name_server_interval`): broker 1 killed, the name
/// server drops it (its channel closed), the route no longer lists it and the rebalance drops
/// its queues, as the Java client does. Restarted on a new port, it registers again: the route
/// lists it at its new address, the consumers take its queues back and consume what is sent to
/// it from then on.
#[test]
fn a_broker_that_leaves_the_route_loses_its_queues_and_gets_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        "name = \"route\"\n[cluster]\nbrokers = 2\n[workload]\nqueues = 2\nmessage_size = 64\n\
        [broker]\nmappedFileSizeCommitLog = 16777216\n\
        [consumer]\nclient_version = \"5.3\"\npoll_name_server_interval = \"200ms\"\n\
        drain_timeout = \"30s\"\n";
    let profile = Profile::parse(text, "route.toml", Path::new("route.toml"), &[]).unwrap();
    let cell = &matrix::expand(&profile).unwrap()[0];
    let w = &cell.workload;
    let mut cluster = CellCluster::start(
        &harness::kind::in_tree::InTree::new(broker_bin()),
        cell,
        2,
        dir.path(),
        None,
    )
    .unwrap();
    let load = prepare(cluster.namesrv_addr, Some(2), w).unwrap();
    let (b0, b1) = (load.router.brokers[0].addr, load.router.brokers[1].addr);
    let cfg = cell.consumer.clone().unwrap();
    let target = Target::NameServer(cluster.namesrv_addr);
    let mut run = ConsumerRun::start(&cfg, w, target, Some(10_000), None).unwrap();
    wait_assigned(&run, &["broker-0", "broker-1"]);
    let tracking = run.tracking();
    let mut seq = 0;
    for (addr, q) in [(b0, 0), (b1, 1)] {
        assert_eq!(send(addr, w, &tracking, seq, 20, q), 20);
        seq += 20;
    }
    let within = Duration::from_secs(20);
    assert_eq!(wait_consumed(&run, "broker-1", 20, within), 20);

    cluster.brokers[1].kill9().expect("SIGKILL to broker-1");
    wait_assigned(&run, &["broker-0"]);
    assert_eq!(send(b0, w, &tracking, seq, 20, 1), 20);
    seq += 20;
    assert_eq!(wait_consumed(&run, "broker-0", 40, within), 40);

    // Back on a new port (the conf says listenPort=0), with its store.
    let again = BrokerProcess::start(
        &broker_bin(),
        &dir.path().join("broker-1.conf"),
        &dir.path().join("broker-1-again.log"),
        None,
        Duration::from_secs(20),
    )
    .unwrap();
    let b1_again = again.addr;
    cluster.brokers[1] = Box::new(again);
    wait_assigned(&run, &["broker-0", "broker-1"]);
    assert_eq!(send(b1_again, w, &tracking, seq, 20, 0), 20);
    let got = wait_consumed(&run, "broker-1", 40, Duration::from_secs(30));
    assert!(got >= 40, "broker-1 consumed {got} after it came back");

    run.drain(|_| {});
    let f = run.finish();
    eprintln!("figures: {f:?}");
    assert_eq!(f.lost, Some(0), "{f:?}");
    assert!(f.drained, "{f:?}");
    cluster.stop(Duration::from_secs(10));
}
