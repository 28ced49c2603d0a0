//! Consumers and a replicating pair (issue 26): a consumer group reads while the master of
//! `[cluster] brokers = 1, slaves = 1` is killed. The name server drops the master when its
//! channel closes; at the next route refresh the queues' pulls go to the slave
//! (`findBrokerAddressInSubscribe(name, 0, false)`: the master is gone, another address of the
//! name answers), so everything acknowledged before the kill is consumed. SYNC_MASTER: an
//! acknowledged send is on the slave. The group consumes slower than the producer sends, so
//! it is far behind at the kill: what it has not read yet is read from the slave.

use std::path::Path;

use harness::runner::run_profile;
use harness_model::profile::Profile;

mod common;
use common::options;

const KILL_MASTER: &str = r#"
name = "ha-consumers-kill-master"
pin = false
[cluster]
brokers = 1
slaves = 1
[workload]
rate = 200
warmup = "0.5s"
duration = "4s"
connections = 1
message_size = 128
queues = 2
send_timeout = "3s"
[broker]
brokerVersionProfile = "4.9"
brokerRole = "SYNC_MASTER"
slaveTimeout = 300
haSendHeartbeatInterval = 200
mappedFileSizeCommitLog = 4194304
maxMessageSize = 65536
[consumer]
instances = 1
# 50 messages/s against 200 sent/s, a small cache: the group is far behind at the kill, so
# what is left can only come from the slave.
consume_threads = 1
processing_time = "20ms"
pull_batch_size = 8
pull_threshold_for_queue = 16
drain_timeout = "30s"
poll_name_server_interval = "500ms"
[validity]
max_lag_p99_us = 1000000
[fault]
role = "master"
kill = "2s"
"#;

#[test]
fn with_the_master_killed_consumers_read_the_slave() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::parse(KILL_MASTER, "k.toml", Path::new("k.toml"), &[]).unwrap();
    let outcome = run_profile(&profile, &options(dir.path())).unwrap();
    assert_eq!(outcome.rows.len(), 1);
    let r = &outcome.rows[0];
    let job = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    let log = std::fs::read_to_string(job.join("consumer.log")).unwrap();
    let c = r.consumer.clone().expect("consumer figures");
    let ctx = format!("{r:?}\n{log}");
    assert!(r.seg.counts.ok > 0, "{ctx}");
    // SYNC_MASTER: every acknowledged send is on the slave.
    assert_eq!(r.res.ha.acked_lost_slave, Some(0), "{ctx}");
    // The consumers: every acknowledged message consumed, the queues drained from the slave.
    assert_eq!(
        c.lost,
        Some(0),
        "the consumed set covers the acked set: {ctx}"
    );
    assert!(c.consumed >= r.seg.counts.ok, "{ctx}");
    assert!(c.drained, "{ctx}");
    assert!(c.lag_max > 100, "the group was never far behind: {ctx}");

    let line = log
        .lines()
        .find(|l| l.contains("pulls answered by a slave"))
        .unwrap_or_else(|| panic!("no shutdown line in\n{log}"));
    let n: u64 = line
        .split("unregistered (")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    eprintln!("{line}\n{c:?}\nacked {}", r.seg.counts.ok);
    assert!(n >= 10, "few pulls went to the slave: {line}");
}

/// Audit #3 (fidelity-after-wave-3), the harness side: a send-back goes to the master only
/// (`findBrokerAddressInPublish`, 4.9.8 DefaultMQPushConsumerImpl.sendMessageBack l.524-527,
/// 5.3.3 l.766-771), never to a slave. Every message fails its first delivery; once the route
/// has dropped the killed master the send-backs find no address and fail without a request
/// (the message is consumed again locally). Sent to the slave, a 4.9 slave would answer
/// code 1 `SERVICE_NOT_AVAILABLE` (its store refuses the put, 4.9.8
/// DefaultMessageStore.checkStoreStatus l.405-411).
#[test]
fn with_the_master_killed_send_backs_never_go_to_the_slave() {
    let dir = tempfile::tempdir().unwrap();
    let text = KILL_MASTER
        .replace("ha-consumers-kill-master", "ha-consumers-send-back")
        .replace("[consumer]\n", "[consumer]\nfail_until = 1\n");
    let profile = Profile::parse(&text, "k.toml", Path::new("k.toml"), &[]).unwrap();
    let outcome = run_profile(&profile, &options(dir.path())).unwrap();
    let r = &outcome.rows[0];
    let job = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    let log = std::fs::read_to_string(job.join("consumer.log")).unwrap();
    let c = r.consumer.clone().expect("consumer figures");
    let ctx = format!("{:?}\n{log}", c.retry);
    let refused: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("sendMessageBack") && l.contains("SERVICE_NOT_AVAILABLE"))
        .collect();
    assert!(
        refused.is_empty(),
        "a send-back reached the slave: {refused:?}"
    );
    let no_master = log
        .lines()
        .filter(|l| l.contains("sendMessageBack") && l.contains("no address for broker"))
        .count();
    assert!(
        no_master > 0,
        "no send-back failed for want of a master: {ctx}"
    );
    // Every acknowledged message consumed but the pending ones: the retries sent back before
    // the kill wait in the master's SCHEDULE_TOPIC_XXXX; the slave has them but runs no
    // schedule service (audit #1), so they come back only when the master does.
    assert!(
        c.lost.is_some_and(|l| l <= c.retry.pending),
        "lost {:?}: {ctx}",
        c.lost
    );
}
