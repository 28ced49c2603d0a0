//! A full disk on one broker of two (issue 27): a name server and two broker-under-test
//! processes, broker 0's store capped so that it passes diskSpaceWarningLevelRatio a few seconds
//! into the load, broker 1's with room, producers and a consumer group.
//!
//! The analytic facts (retention reference A5.3, send-path reference §11): a refused send is
//! answered 14 with the disk-full remark before anything is appended, so
//! * with `retry = "none"` the application gets those 14s, broker 1 never answers 14, and every
//!   acknowledged message is consumed;
//! * with `retry = "rocketmq-4"` (14 is in 4.x's retry list; without latency-fault avoidance the
//!   retry takes the next queue on another broker) every send broker 0 refused is written once
//!   more, to broker 1, and stored there: ok == sent, one extra attempt per refusal, nothing
//!   lost or consumed twice.
//!
//! Broker 0 deletes nothing (`cleanFileForciblyEnable = false`), so it stays full to the end and
//! every acknowledged message stays readable: the consumers' count is exact, and the write block
//! is still open when the job ends.

use std::path::Path;

use harness::report::SummaryRow;
use harness::runner::run_profile;
use harness_model::profile::Profile;

mod common;
use common::options;

const PROFILE: &str = r#"
name = "disk-full-cluster-test"
pin = false
[cluster]
brokers = 2
[workload]
rate = 800
warmup = "1s"
duration = "8s"
connections = 1
message_size = 1024
queues = 4
[broker]
mappedFileSizeCommitLog = 524288
maxMessageSize = 65536
injectCleanFirstDelayMillis = 0
cleanResourceInterval = 200
cleanFileForciblyEnable = false
"0.injectStoreSizeCapBytes" = 2097152
"1.injectStoreSizeCapBytes" = 68719476736
[consumer]
group = "disk_full_cluster_test"
processing_time = "0ms"
drain_timeout = "40s"
[validity]
# The machine is shared: generator lag is not what this test is about.
max_lag_p99_us = 1000000
[matrix]
"workload.retry" = ["none", "rocketmq-4"]
"#;

/// The named column of the summary row of `cell`.
fn column(summary: &str, cell: &str, name: &str) -> String {
    let mut rd = csv::Reader::from_reader(summary.as_bytes());
    let header = rd.headers().unwrap().clone();
    let at = |n: &str| header.iter().position(|h| h == n).unwrap();
    rd.records()
        .map(Result::unwrap)
        .find(|r| &r[at("cell_id")] == cell)
        .map(|r| r[at(name)].to_owned())
        .unwrap_or_else(|| panic!("no row for {cell} in\n{summary}"))
}

#[test]
fn a_full_broker_refuses_with_14_and_the_4x_retry_lands_every_send_on_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::parse(PROFILE, "dfc.toml", Path::new("dfc.toml"), &[]).unwrap();
    let outcome = run_profile(&profile, &options(dir.path())).unwrap();
    assert!(!outcome.interrupted);
    assert_eq!(outcome.rows.len(), 2);
    let summary = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    for r in &outcome.rows {
        // The only axis: workload.retry.
        let policy = match r.params[0].as_str() {
            "none" => RetryPolicy::None,
            "rocketmq-4" => RetryPolicy::Rocketmq4,
            other => panic!("unexpected cell {other}"),
        };
        check_row(r, policy, &summary);
    }
}

#[derive(Debug, Clone, Copy)]
enum RetryPolicy {
    None,
    Rocketmq4,
}

fn check_row(r: &SummaryRow, policy: RetryPolicy, summary: &str) {
    eprintln!(
        "{policy:?}: {:?} per broker {:?}",
        r.seg.counts, r.seg.per_broker
    );
    let c = r.consumer.clone().expect("consumer figures");
    let [b0, b1] = [r.seg.per_broker[0], r.seg.per_broker[1]];
    let refused = b0[2];
    // Broker 0 filled and refused; broker 1, with room, never did.
    assert!(refused > 0, "broker 0 never refused: {r:?}");
    assert_eq!(b1[2], 0, "{r:?}");
    // Whatever the policy: nothing acknowledged is lost, nothing consumed twice.
    assert!(c.drained, "{c:?}");
    assert_eq!(c.lost, Some(0), "{c:?}");
    assert_eq!(c.duplicates, 0, "{c:?}");
    let counts = &r.seg.counts;
    match policy {
        RetryPolicy::None => {
            // Every refusal reached the application, classified by its remark.
            assert_eq!(counts.not_available, [refused, 0], "{r:?}");
            assert_eq!(r.seg.attempts, r.seg.sent, "{r:?}");
        }
        RetryPolicy::Rocketmq4 => {
            // Each refusal was sent once more, to broker 1, and stored there.
            assert_eq!(counts.not_available, [0, 0], "{r:?}");
            // A code 2 is no refusal, and the 4.x client does not retry it: a broker slowed by
            // a loaded machine (CI's 2 cores, test binaries beside it) answers
            // [TIMEOUT_CLEAN_QUEUE] now and then. Every other send was stored.
            let busy: u64 = counts.busy.iter().sum();
            assert_eq!(counts.ok + busy, r.seg.sent, "ok + busy == sent: {r:?}");
            assert_eq!(r.seg.attempts, r.seg.sent + refused, "{r:?}");
            assert_eq!(b0[0] + b1[0], counts.ok, "{r:?}");
            assert!(b1[0] >= refused, "{r:?}");
        }
    }
    // The CSV says the same per broker, and broker 0 was still refusing at the end.
    let cell = &r.cell_id;
    assert_eq!(
        column(summary, cell, "broker_not_available_disk_full"),
        format!("broker-0={refused};broker-1=0")
    );
    assert_eq!(
        column(summary, cell, "broker_write_blocks"),
        "broker-0=1;broker-1=0"
    );
    let block = column(summary, cell, "broker_write_block_ms");
    assert!(
        block.starts_with("broker-0=") && block.ends_with("+;broker-1="),
        "{block}"
    );
}
