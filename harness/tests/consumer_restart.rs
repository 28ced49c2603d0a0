//! Push consumers across a broker kill -9 and restart (issue 23 item 5), against the real
//! `broker-under-test` binary, transient store pool off: every acknowledged message is
//! consumed after the drain. A 4.9 client reconnects on its next call and its pulls get 24
//! until its next heartbeat (≤ 30 s) registers the group again; a 5.3 client heartbeats and
//! rebalances on the new connection. Both report their recovery time and the duplicates the
//! restart caused.

use std::path::Path;

use harness::report::SummaryRow;
use harness::runner::run_profile;
use harness_model::profile::Profile;

mod common;
use common::options;

fn run(text: &str, out: &Path) -> Vec<SummaryRow> {
    let profile = Profile::parse(text, "restart.toml", Path::new("restart.toml"), &[]).unwrap();
    let outcome = run_profile(&profile, &options(out)).unwrap();
    assert!(!outcome.interrupted);
    outcome.rows
}

const RESTART: &str = r#"
name = "consumer-restart"
pin = false
[workload]
rate = 300
warmup = "0.5s"
duration = "4s"
connections = 1
message_size = 128
queues = 4
[consumer]
# 100 messages/s against 300 sent, and at most ~50 messages cached a queue: a backlog is left in
# the broker at the kill, so messages are pulled and consumed after the restart however long it
# takes on a loaded machine (after the load, even). Without the cache limit the consumer had
# pulled all 600 acknowledged messages before the kill: since the broker refuses connections
# until its store is open (as RocketMQ does), no send of the downtime is acknowledged later.
consume_threads = 1
processing_time = "10ms"
pull_threshold_for_queue = 20
drain_timeout = "75s"
[fault]
kill = "1.5s"
restart = true
[validity]
max_lag_p99_us = 2000000
[matrix]
"consumer.client_version" = ["4.9", "5.3"]
"#;

#[test]
fn consumers_recover_from_a_broker_restart_and_consume_every_acknowledged_message() {
    let dir = tempfile::tempdir().unwrap();
    let rows = run(RESTART, dir.path());
    assert_eq!(rows.len(), 2);
    for row in &rows {
        let c = row.consumer.clone().expect("consumer figures");
        eprintln!("{}: {c:?}", row.cell_id);
        assert_eq!(
            c.lost,
            Some(0),
            "{}: every acknowledged message consumed after the drain: {c:?}",
            row.cell_id
        );
        assert!(c.drained, "{c:?}");
        let recovery = c.recovery.expect("consumed again after the restart");
        assert!(c.restart_duplicates.is_some(), "{c:?}");
        let log =
            std::fs::read_to_string(dir.path().join(format!("{}-r1/consumer.log", row.cell_id)))
                .unwrap();
        assert!(log.contains("reconnects)"), "{log}");
        if row.params.iter().any(|p| p.contains("5.3")) {
            // The heartbeat on the new connection registers the group at once.
            assert!(recovery.as_secs_f64() < 10.0, "{recovery:?}");
        } else {
            // The group is unknown to the restarted broker until the next heartbeat.
            assert!(
                log.contains("code 24 the consumer's group info not exist"),
                "{log}"
            );
        }
    }
}
