//! Push consumers end to end against the real `broker-under-test` binary (issue 12): count flow
//! control and a growing lag under a slow consumer, nothing lost on a clean run, duplicates
//! after a rebalance, and not-locked delays of the configured length in orderly mode. Each
//! profile runs a few seconds; bounds are ratios or generous, for a loaded 2-core machine.

use std::path::Path;

use harness::report::SummaryRow;
use harness::runner::run_profile;
use harness_model::profile::Profile;

mod common;
use common::options;

fn run(text: &str, out: &Path) -> Vec<SummaryRow> {
    let profile = Profile::parse(text, "consumer.toml", Path::new("consumer.toml"), &[]).unwrap();
    let opts = options(out);
    let outcome = run_profile(&profile, &opts).unwrap();
    assert!(!outcome.interrupted);
    outcome.rows
}

/// The `consumer_lag` of every `measure` second of the time series, in order.
fn measured_lag(out: &Path) -> Vec<i64> {
    let mut r = csv::Reader::from_path(out.join("timeseries.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let (phase, lag) = (col("phase"), col("consumer_lag"));
    r.records()
        .map(|x| x.unwrap())
        .filter(|x| &x[phase] == "measure")
        .map(|x| x[lag].parse().unwrap())
        .collect()
}

const SLOW: &str = r#"
name = "slow"
pin = false
[workload]
rate = 400
warmup = "0.5s"
duration = "3s"
connections = 1
message_size = 128
queues = 2
[consumer]
consume_threads = 2
processing_time = "10ms"
pull_threshold_for_queue = 30
drain_timeout = "40s"
[validity]
max_lag_p99_us = 1000000
"#;

#[test]
fn a_slow_consumer_shows_count_flow_control_growing_lag_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let rows = run(SLOW, dir.path());
    let c = rows[0].consumer.clone().expect("consumer figures");
    eprintln!("figures: {c:?}");
    assert!(rows[0].valid, "{}", rows[0].invalid_reason);
    assert!(c.drained);
    assert!(c.fc[0] > 10, "count flow control fired: {c:?}");
    assert_eq!(c.fc[2] + c.fc[3], 0, "no span or lock events: {c:?}");
    assert!(
        c.cached_max <= 2 * (30 + 32 + 1),
        "the cache stays near the threshold: {c:?}"
    );
    assert_eq!(c.lost, Some(0), "{c:?}");
    assert_eq!(c.duplicates, 0, "{c:?}");
    let sent = rows[0].seg.counts.ok;
    assert!(
        c.consumed >= sent,
        "consumed {} of {sent} acknowledged in the window",
        c.consumed
    );
    let lag = measured_lag(dir.path());
    assert!(lag.len() >= 2, "{lag:?}");
    assert!(lag.last().unwrap() > &(lag[0] + 100), "lag grows: {lag:?}");
    assert!(c.e2e_us[1] > 500_000, "the backlog shows in e2e p99: {c:?}");
    let log = std::fs::read_to_string(
        dir.path()
            .join(format!("{}-r1/consumer.log", rows[0].cell_id)),
    )
    .unwrap();
    assert!(
        log.contains("the cached message count exceeds the threshold 30, so do flow control"),
        "{log}"
    );
}

const REBALANCE: &str = r#"
name = "rebalance"
pin = false
[workload]
rate = 300
warmup = "0.5s"
duration = "4s"
connections = 1
message_size = 128
queues = 4
[consumer]
instances = 3
consume_threads = 8
processing_time = "50ms"
drain_timeout = "40s"
join_at = { 2 = "1.5s" }
leave_at = { 1 = "3s" }
[validity]
max_lag_p99_us = 1000000
"#;

#[test]
fn a_rebalance_redelivers_and_duplicates_are_counted_nothing_lost() {
    let dir = tempfile::tempdir().unwrap();
    let rows = run(REBALANCE, dir.path());
    let c = rows[0].consumer.clone().expect("consumer figures");
    eprintln!("figures: {c:?}");
    assert!(rows[0].valid, "{}", rows[0].invalid_reason);
    assert_eq!(c.lost, Some(0), "{c:?}");
    assert!(
        c.duplicates > 0,
        "queues moved with messages in flight: {c:?}"
    );
    assert!(c.consumed > c.duplicates, "{c:?}");
    let log = std::fs::read_to_string(
        dir.path()
            .join(format!("{}-r1/consumer.log", rows[0].cell_id)),
    )
    .unwrap();
    assert!(log.contains("remove unnecessary mq"), "{log}");
    assert!(log.contains("rebalance immediately"), "{log}");
}

const ORDERLY: &str = r#"
name = "orderly"
pin = false
[workload]
rate = 200
warmup = "0.5s"
duration = "2s"
connections = 1
message_size = 128
queues = 4
[consumer]
mode = "orderly"
client_version = "4.3"
processing_time = "1ms"
drain_timeout = "40s"
[matrix]
"consumer.exception_delay" = ["150ms", "600ms"]
[validity]
max_lag_p99_us = 1000000
"#;

/// 4.3.0 starts a new orderly queue unlocked until the first lockAll (1 s after start): its
/// pulls are delayed by the exception delay meanwhile, so a 4× shorter delay gives about 4× the
/// events.
#[test]
fn orderly_not_locked_delays_follow_the_configured_delay() {
    let dir = tempfile::tempdir().unwrap();
    let rows = run(ORDERLY, dir.path());
    assert_eq!(rows.len(), 2);
    let events = |delay: &str| {
        let r = rows.iter().find(|r| r.params[0] == delay).unwrap();
        let c = r.consumer.clone().unwrap();
        assert_eq!(c.lost, Some(0), "{delay}: {c:?}");
        assert_eq!(c.fc[2], 0, "no span control in orderly mode");
        c.fc[3]
    };
    let (short, long) = (events("150ms"), events("600ms"));
    eprintln!("not-locked events: 150 ms {short}, 600 ms {long}");
    assert!(long >= 4, "each of 4 queues waits at least once: {long}");
    assert!(
        short as f64 >= 2.0 * long as f64,
        "150 ms: {short} events, 600 ms: {long}"
    );
    let log = std::fs::read_to_string(
        dir.path()
            .join(format!("{}-r1/consumer.log", rows[0].cell_id)),
    )
    .unwrap();
    assert!(
        log.contains("pull message later because not locked in broker"),
        "{log}"
    );
}

/// `[consumer]` keys are matrix axes and `--set` keys; mistakes point at the line or the flag.
#[test]
fn consumer_keys_are_axes_and_set_keys_with_located_errors() {
    let text = "name = \"c\"\n[consumer]\nprocessing_time = \"5ms\"\n[matrix]\n\"consumer.pull_threshold_for_queue\" = [100, 1000]\n";
    let parse = |t: &str, sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Profile::parse(t, "c.toml", Path::new("c.toml"), &sets)
    };
    let p = parse(text, &[]).unwrap();
    let cells = harness_model::matrix::expand(&p).unwrap();
    assert_eq!(cells.len(), 2);
    assert_eq!(cells[0].label, "pull_threshold_for_queue=100");
    let c1 = cells[1].consumer.as_ref().unwrap();
    assert_eq!(c1.pull_threshold_for_queue, 1000);
    assert_eq!(c1.processing_time.0, 0.005);

    let p = parse(text, &["consumer.pull_threshold_for_queue=5"]).unwrap();
    assert!(p.axes.is_empty(), "--set collapses the axis");
    assert_eq!(p.consumer.unwrap().pull_threshold_for_queue, 5);

    let e = parse(text, &["consumer.pull_treshold_for_queue=5"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("did you mean `consumer.pull_threshold_for_queue`"),
        "{e}"
    );
    let e = parse(text, &["consumer.instances=0"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("`instances` must be between 1 and 64"), "{e}");
    let e = parse(
        "name = \"c\"\n[consumer]\ninstances = 2\nleave_at = { 5 = \"1s\" }\n",
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("c.toml:4:"), "{e}");
    let e = parse("name = \"c\"\n[matrix]\n\"consumer.prefill\" = [1]\n", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs a [consumer] table"), "{e}");
}

/// Issue 23: the broker's ReputMessageService held back 300 ms whenever it finds new data
/// (`injectReputStallMillis`): sends are answered at once, but consumers see each message only
/// once it is dispatched, and the backlog shows in timeseries.csv's `dispatch_behind_bytes`.
const HELD_DISPATCH: &str = r#"
name = "held-dispatch"
pin = false
[workload]
rate = 200
warmup = "0.5s"
duration = "3s"
connections = 1
message_size = 128
queues = 2
[broker]
injectReputStallMillis = 300
[consumer]
drain_timeout = "30s"
[validity]
max_lag_p99_us = 1000000
"#;

#[test]
fn a_held_back_dispatch_shows_in_the_time_series_and_in_e2e_latency() {
    let dir = tempfile::tempdir().unwrap();
    let rows = run(HELD_DISPATCH, dir.path());
    let c = rows[0].consumer.clone().expect("consumer figures");
    eprintln!("figures: {c:?}");
    assert_eq!(c.lost, Some(0), "{c:?}");
    // Born → consume: at least most of the stall for the median message.
    assert!(c.e2e_us[0] >= 100_000, "{c:?}");
    let mut r = csv::Reader::from_path(dir.path().join("timeseries.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let (phase, behind) = (col("phase"), col("dispatch_behind_bytes"));
    let measured: Vec<u64> = r
        .records()
        .map(|x| x.unwrap())
        .filter(|x| &x[phase] == "measure")
        .map(|x| x[behind].parse().unwrap())
        .collect();
    assert!(measured.len() >= 2, "{measured:?}");
    assert!(measured.iter().any(|&b| b > 0), "{measured:?}");
}

/// Issue 29: a prefilled backlog is drained before the load, in `backlog` rows of its own, and
/// its rate is `drain_rate`. Two consume threads at 1 ms a message cap the drain at 2,000/s,
/// so 3,000 messages take at least 1.5 s: at least one full `backlog` second.
const BACKLOG: &str = r#"
name = "backlog"
pin = false
[workload]
rate = 100
warmup = "0.5s"
duration = "1s"
connections = 1
message_size = 128
queues = 2
[consumer]
consume_threads = 2
processing_time = "1ms"
prefill = 3000
drain_timeout = "30s"
[validity]
max_lag_p99_us = 1000000
"#;

#[test]
fn a_prefilled_backlog_has_its_own_phase_and_drain_rate() {
    let dir = tempfile::tempdir().unwrap();
    let rows = run(BACKLOG, dir.path());
    let c = rows[0].consumer.clone().expect("consumer figures");
    eprintln!("figures: {c:?}");
    assert_eq!(c.lost, Some(0), "{c:?}");
    let rate = c.drain_rate.expect("the backlog drained");
    // Two threads at 1 ms bound the drain at 2,000/s (N/T); a quarter of that leaves room for
    // a busy machine's late wake-ups, where 100/s (the old bound) passed a consumer that
    // hardly consumed.
    assert!(
        (500.0..=2_200.0).contains(&rate),
        "two threads at 1 ms bound the drain at 2,000/s: {rate}"
    );
    let mut r = csv::Reader::from_path(dir.path().join("timeseries.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let (phase, consumed) = (col("phase"), col("consumed"));
    let rows: Vec<(String, u64)> = r
        .records()
        .map(|x| x.unwrap())
        .map(|x| (x[phase].to_owned(), x[consumed].parse().unwrap()))
        .collect();
    let backlog = rows.iter().take_while(|(p, _)| p == "backlog").count();
    assert!(backlog >= 1, "backlog rows first: {rows:?}");
    assert!(
        rows[backlog..].iter().all(|(p, _)| p != "backlog"),
        "no backlog row after the load started: {rows:?}"
    );
    let eaten: u64 = rows[..backlog].iter().map(|(_, n)| n).sum();
    assert!(
        eaten >= 3000,
        "the backlog's rows hold its messages: {rows:?}"
    );
}
