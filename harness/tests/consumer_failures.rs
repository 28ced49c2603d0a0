//! Failing consumers end to end against the real broker (issue 24): failed messages are sent
//! back, wait in SCHEDULE_TOPIC_XXXX for their level, come back from `%RETRY%<group>`, and end
//! in the DLQ past the limit. Delays are shortened with the broker's own `messageDelayLevel`
//! key (RocketMQ's grammar has no unit below a second).

use std::path::Path;
use std::time::{Duration, Instant};

use harness::reconcile::read_queue;
use harness::report::SummaryRow;
use harness::runner::{run_profile, RunOptions};
use harness_model::profile::Profile;
use rmq_client::admin::AdminConn;

mod common;
use common::{options, own_broker};

fn run(text: &str, out: &Path) -> Vec<SummaryRow> {
    run_with(text, &options(out))
}

fn run_with(text: &str, opts: &RunOptions) -> Vec<SummaryRow> {
    let profile = Profile::parse(text, "fail.toml", Path::new("fail.toml"), &[]).unwrap();
    let outcome = run_profile(&profile, opts).unwrap();
    assert!(!outcome.interrupted);
    outcome.rows
}

/// Level 3 (the first retry) is 1 s, level 4 (the second) 2 s.
const LEVELS: &str = "1s 1s 1s 2s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s";

#[test]
fn every_message_failing_twice_comes_back_at_its_levels_and_is_consumed() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
name = "fail-until"
pin = false
[workload]
rate = 100
warmup = "0.5s"
duration = "2s"
connections = 1
message_size = 64
queues = 2
[broker]
messageDelayLevel = "{LEVELS}"
[consumer]
fail_until = 2
drain_timeout = "40s"
[validity]
max_lag_p99_us = 10000000
"#
    );
    let rows = run(&text, dir.path());
    let c = rows[0].consumer.clone().expect("consumer figures");
    eprintln!("figures: {c:?}");
    let r = &c.retry;
    assert!(c.drained, "{c:?}");
    assert_eq!(c.lost, Some(0));
    assert_eq!(c.duplicates, 0, "retries are not duplicates");
    assert_eq!(r.pending, 0);
    let messages = r.failures / 2;
    assert!(messages > 100, "{r:?}");
    assert_eq!(r.failures, 2 * messages, "two failures per message");
    assert_eq!(r.retries, r.failures, "each failure delivered once more");
    assert_eq!((r.dlq, r.send_back_failed), (0, 0));
    assert_eq!(r.send_backs, r.failures);
    // Half the retries wait level 3 (1 s), half level 4 (2 s), plus pick-up and pull.
    let [p50, p99] = r.delay_us;
    assert!((950_000..1_900_000).contains(&p50), "p50 {p50} µs");
    assert!((1_950_000..3_500_000).contains(&p99), "p99 {p99} µs");
    let [puts, to_dlq, scheduled, delivered] = r.broker.expect("broker counters");
    assert_eq!((puts, to_dlq), (r.failures, 0));
    assert_eq!((scheduled, delivered), (r.failures, r.failures));
    // timeseries.csv has the same counts per second: retries only from a second after the first
    // failures (level 3 is 1 s), and together no more than the job's (a drain that ends
    // mid-second leaves that second's part unwritten).
    let series = per_second(
        dir.path(),
        ["consumer_failures", "consumer_retries", "consumer_dlq"],
    );
    let sum = |k: usize| series.iter().map(|s| s[k]).sum::<u64>();
    assert!(
        sum(0) <= r.failures && sum(0) >= r.failures * 9 / 10,
        "{series:?}"
    );
    assert!(
        sum(1) <= r.retries && sum(1) >= r.retries * 9 / 10,
        "{series:?}"
    );
    assert_eq!(sum(2), 0);
    // Retries start a level (1 s) after the failures. Rows are the sampler's ticks, and a tick
    // that comes late on a busy machine lets the first few retries into the first failures'
    // row, so that row may hold a few, never a tenth of its failures.
    let first = |k: usize| series.iter().position(|s| s[k] > 0).unwrap();
    assert!(first(1) >= first(0), "{series:?}");
    let row = series[first(0)];
    assert!(row[1] * 10 < row[0].max(1), "{series:?}");
}

/// The named columns of every row of timeseries.csv in `out`.
fn per_second<const N: usize>(out: &Path, cols: [&str; N]) -> Vec<[u64; N]> {
    let text = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = cols.map(|c| header.iter().position(|h| *h == c).expect(c));
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            at.map(|i| cells[i].parse().unwrap_or(0))
        })
        .collect()
}

#[test]
fn with_a_fail_ratio_every_acknowledged_message_is_consumed_or_in_the_dlq() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
name = "fail-ratio"
pin = false
[workload]
rate = 100
warmup = "0.5s"
duration = "2s"
connections = 1
message_size = 64
queues = 2
[broker]
messageDelayLevel = "{LEVELS}"
[consumer]
fail_ratio = 0.5
max_reconsume_times = 1
drain_timeout = "40s"
[validity]
max_lag_p99_us = 10000000
"#
    );
    let rows = run(&text, dir.path());
    let c = rows[0].consumer.clone().expect("consumer figures");
    eprintln!("figures: {c:?}");
    let r = &c.retry;
    assert!(c.drained, "{c:?}");
    assert_eq!((c.lost, c.duplicates, r.pending), (Some(0), 0, 0));
    assert!(r.failures > 50 && r.dlq > 10, "{r:?}");
    // A message fails at most twice: once from the topic, once from the retry topic (→ DLQ).
    assert_eq!(r.retries + r.dlq, r.failures, "{r:?}");
    let [puts, to_dlq, scheduled, delivered] = r.broker.expect("broker counters");
    assert_eq!((puts, to_dlq), (r.failures, r.dlq));
    assert_eq!((scheduled, delivered), (r.retries, r.retries));
}

/// Delivery 1 fails and is suspended; delivery 2 fails at the limit.
const ORDERLY_FAILING: &str = r#"
name = "orderly-fail"
pin = false
[workload]
rate = 50
warmup = "0.5s"
duration = "2s"
connections = 1
message_size = 64
queues = 2
[consumer]
mode = "orderly"
fail_until = 2
max_reconsume_times = 1
suspend_current_queue_time = "100ms"
drain_timeout = "40s"
[validity]
max_lag_p99_us = 10000000
"#;

#[test]
fn orderly_suspends_in_place_and_dead_letters_at_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let rows = run(ORDERLY_FAILING, dir.path());
    let c = rows[0].consumer.clone().expect("consumer figures");
    eprintln!("figures: {c:?}");
    let r = &c.retry;
    assert!(c.drained, "{c:?}");
    assert_eq!((c.lost, c.duplicates, r.pending), (Some(0), 0, 0));
    // Delivery 1 fails and is suspended (count 1 in memory); delivery 2 fails at the limit.
    let messages = r.dlq;
    assert!(messages > 50, "{r:?}");
    // Each failure is delivered again or ends in the DLQ; every message failed at least twice
    // (a lock moving between pulls on a busy machine can add a round, never remove one).
    assert_eq!(r.failures, r.retries + r.dlq, "{r:?}");
    assert!(r.failures >= 2 * messages, "{r:?}");
    assert_eq!(r.suspends, r.failures);
    // Suspended in place: back after the suspend time, not a delay level.
    let [p50, _] = r.delay_us;
    assert!((100_000..1_000_000).contains(&p50), "p50 {p50} µs");
    // Published to `%RETRY%` with SEND_MESSAGE, not sent back: the default 5.3 broker puts
    // it in the DLQ at once (the group holds locks), never through SCHEDULE_TOPIC_XXXX.
    assert_eq!(r.send_backs, 0);
    let [puts, to_dlq, scheduled, _] = r.broker.expect("broker counters");
    assert_eq!((puts, to_dlq, scheduled), (0, 0, 0));
}

/// Audit #7: an orderly consumer's message at its retry limit is published to `%RETRY%<group>`
/// with SEND_MESSAGE (4.9 client: RECONSUME_TIME = r = max, DELAY 3 + r), never sent back, and
/// the broker dead-letters it: 4.9 (`r >= max`) after parking it in SCHEDULE_TOPIC_XXXX for
/// that level, 5.3 at once because the group holds its queue locks (`r > max` alone would
/// retry it). The DLQ read back from the broker's store holds every message the consumers
/// counted as dead-lettered.
#[test]
fn orderly_at_the_limit_reaches_the_dlq_through_a_send_on_each_broker_version() {
    for (version, parked) in [("4.9", true), ("5.3", false)] {
        let dir = tempfile::tempdir().unwrap();
        let broker = own_broker(
            dir.path(),
            &[
                ("brokerVersionProfile", version),
                ("messageDelayLevel", LEVELS),
            ],
        );
        let mut opts = options(&dir.path().join("out"));
        opts.target = Some(broker.addr);
        opts.broker_pid = Some(broker.pid);
        let rows = run_with(ORDERLY_FAILING, &opts);
        let c = rows[0].consumer.clone().expect("consumer figures");
        eprintln!("{version}: {c:?}");
        let r = &c.retry;
        assert!(c.drained, "{version}: {c:?}");
        assert_eq!((c.lost, r.pending), (Some(0), 0), "{version}");
        assert!(r.dlq > 50, "{version}: {r:?}");
        assert_eq!((r.send_backs, r.send_back_fallback), (0, 0), "{version}");
        let [puts, to_dlq, scheduled, _] = r.broker.expect("broker counters");
        assert_eq!((puts, to_dlq), (0, 0), "{version}: no SNDBCK");
        assert_eq!(scheduled, if parked { r.dlq } else { 0 }, "{version}");
        // Level 4 is 1 s: the parked ones reach the DLQ within a few seconds of the last.
        let mut conn = AdminConn::connect(broker.addr, Duration::from_secs(2)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let read = read_queue(
                &mut conn,
                "%DLQ%harness_consumer",
                0,
                Duration::from_secs(5),
                |_| {},
            )
            .unwrap();
            if read == r.dlq {
                break;
            }
            assert!(
                read < r.dlq && Instant::now() < deadline,
                "{version}: {read} in the DLQ, {} counted",
                r.dlq
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        broker.stop(Duration::from_secs(10));
    }
}
