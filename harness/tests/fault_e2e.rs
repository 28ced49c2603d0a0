//! Fault experiments end to end against the real `broker-under-test` binary (README "Fault
//! experiments"): kill -9 with restart, repeated at seeded random points, for ASYNC_FLUSH,
//! SYNC_FLUSH and the transient store pool, then the reconciliation's rules; a SIGSTOP under
//! load and the fast-failure answers after SIGCONT; `--target` refused for kills.
//!
//! Short and slow-rate on purpose (a loaded 2-core machine): the configurations run in
//! parallel, each one job with five or six kills planned, and the assertions are about counts that a slow
//! machine changes only in size, never in sign.

use std::path::{Path, PathBuf};

use harness::report::SummaryRow;
use harness::runner::run_profile;
use harness_model::profile::Profile;

mod common;
use common::options;

fn run(dir: &Path, text: &str) -> (Vec<SummaryRow>, PathBuf) {
    let path = dir.join("p.toml");
    std::fs::write(&path, text).unwrap();
    let profile = Profile::load(&path, &[]).expect("profile");
    let out = dir.join("out");
    let outcome = run_profile(&profile, &options(&out)).expect("run");
    (outcome.rows, out)
}

const RATE: u64 = 1000;

/// The one job's folder in a run's result folder.
fn job_dir(out: &Path) -> PathBuf {
    std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .expect("job folder")
}

/// The pause test judges timing (a 200 ms queue wait) and must not share the machine with the
/// three kill configurations of this binary: in a CI run beside another test binary, all four
/// at once starved its broker before the pause (p50 724 ms in second 1, broker CPU 6%). It
/// takes this lock exclusively, the kill tests shared. Poison is ignored: a failed test has
/// already said why.
static MACHINE: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// One job with five or six kills: the first at a seeded point in [0.3 s, 0.9 s) of the measured
/// window, then every [1.0 s, 1.2 s), each followed by a restart on the same store.
fn kill_profile(name: &str, broker: &str, seed: u64) -> (String, f64, f64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let first = 0.3 + rng.f64() * 0.6;
    let every = 1.0 + rng.f64() * 0.2;
    let text = format!(
        r#"
name = "{name}"
pin = false
[workload]
rate = {RATE}
warmup = "0.5s"
duration = "6s"
connections = 2
message_size = 256
queues = 4
[broker]
mappedFileSizeCommitLog = 4194304
maxMessageSize = 65536
{broker}
[fault]
kill = "{first:.3}s"
every = "{every:.3}s"
restart = true
"#
    );
    (text, first, every)
}

/// Runs one configuration and checks the rules every configuration must keep.
fn kill_config(label: &str, broker: &str, seed: u64) -> (SummaryRow, u32) {
    let tmp = tempfile::tempdir().unwrap();
    let (text, first, every) = kill_profile(label, broker, seed);
    let (rows, out) = run(tmp.path(), &text);
    assert_eq!(rows.len(), 1, "{label}");
    let row = rows.into_iter().next().unwrap();
    let ctx = format!("{label} (first kill {first:.3}s, every {every:.3}s): {row:?}");
    // Each restart leaves its own log: count the kills that happened.
    let job_dir = job_dir(&out);
    let restarts = std::fs::read_dir(&job_dir)
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            let n = n.to_string_lossy();
            n.starts_with("broker-restart-") && n.ends_with(".log")
        })
        .count() as u32;
    // Five or six kills are planned; a kill due while the broker is still restarting waits for
    // it, so how many happen is the machine's: on a loaded machine a debug broker's restart
    // took 2 s (4 kills), and in a CI run beside another test binary longer (2 kills). What the
    // rules below need is a restarted broker killed again: its recovered store killed under
    // load, and the accounting carried over two restarts.
    assert!(restarts >= 2, "{restarts} kills, want ≥ 2: {ctx}");
    // The broker restarted last is up at the end: it is read where it runs, once settled, and
    // no broker is opened on its store after a stop.
    assert!(
        !job_dir.join("reconcile-broker.log").exists(),
        "a reconcile broker was started for a broker that was running: {ctx}"
    );
    let f = &row.fault;
    assert_eq!(f.busy_stored, Some(0), "a busy answer was stored: {ctx}");
    assert_eq!(f.corrupt, Some(0), "{ctx}");
    assert!(
        f.recovery_ms.is_some_and(|r| r.0 > 0.0),
        "recovery_ms not reported: {ctx}"
    );
    // The sends in flight at the kills end as connection errors (or timeouts), never silently:
    // every send has exactly one outcome.
    let c = &row.seg.counts;
    assert!(c.connection_errors > 0, "{ctx}");
    assert!(f.unacked_in_flight.is_some(), "{ctx}");
    assert_eq!(
        row.seg.sent,
        c.ok + c.busy_total()
            + c.system_error
            + c.flush_disk_timeout
            + c.message_illegal
            + c.other_codes
            + c.timeouts
            + c.dropped
            + c.connection_errors,
        "{ctx}"
    );
    // The load went on after the restarts (how much depends on how fast a loaded machine
    // restarts a broker; recovery_ms above says it did at least once).
    assert!(c.ok > 0, "{ctx}");
    (row, restarts)
}

/// A broker killed and not restarted cannot be read where it ran: its store is opened by a
/// broker of its own after the job (`reconcile-broker.log`), and nothing it acknowledged under
/// ASYNC_FLUSH is missing there (the page cache outlives the process).
#[test]
fn a_broker_killed_for_good_is_read_back_from_its_store() {
    let _shared = MACHINE.read().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
name = "killed-for-good"
pin = false
[workload]
rate = {RATE}
warmup = "0.5s"
duration = "3s"
connections = 2
message_size = 256
queues = 4
[fault]
kill = "1s"
"#
    );
    let (rows, out) = run(tmp.path(), &text);
    let row = &rows[0];
    let job_dir = job_dir(&out);
    assert!(
        job_dir.join("reconcile-broker.log").exists(),
        "no broker opened on the killed broker's store: {row:?}"
    );
    assert!(row.seg.counts.ok > 0, "{row:?}");
    assert_eq!(row.fault.acked_lost, Some(0), "{row:?}");
    assert_eq!(row.fault.busy_stored, Some(0), "{row:?}");
}

#[test]
fn kill_restart_rules_for_async_sync_and_the_pool() {
    let _shared = MACHINE.read().unwrap_or_else(|e| e.into_inner());
    let configs = [
        ("async", "flushDiskType = \"ASYNC_FLUSH\"", 1301u64),
        ("sync", "flushDiskType = \"SYNC_FLUSH\"", 1302),
        (
            "pool",
            "flushDiskType = \"ASYNC_FLUSH\"\ntransientStorePoolEnable = true\ntransientStorePoolSize = 5",
            1303,
        ),
    ];
    let results: Vec<(String, SummaryRow, u32)> = std::thread::scope(|s| {
        let handles: Vec<_> = configs
            .iter()
            .map(|(label, broker, seed)| {
                s.spawn(move || {
                    let (row, kills) = kill_config(label, broker, *seed);
                    (label.to_string(), row, kills)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (label, row, kills) in &results {
        let lost = row.fault.acked_lost.unwrap();
        eprintln!(
            "{label}: {kills} kills, sent {}, ok {}, connection errors {}, {:?}",
            row.seg.sent, row.seg.counts.ok, row.seg.counts.connection_errors, row.fault
        );
        match label.as_str() {
            // The page cache survives a process crash; SYNC answers after the flush (§9.5).
            "async" | "sync" => assert_eq!(lost, 0, "{label} lost acknowledged sends: {row:?}"),
            // At most what the commit thread may hold back: 200 ms of sends per kill (§9.4).
            _ => assert!(
                lost <= u64::from(*kills) * RATE / 5,
                "{label}: {lost} acknowledged sends lost in {kills} kills: {row:?}"
            ),
        }
    }
}

#[test]
fn a_pause_ends_in_fast_failure_answers_after_sigcont() {
    let _alone = MACHINE.write().unwrap_or_else(|e| e.into_inner());
    // One send thread at ≥ 200 µs a put (20% busy at 1000/s): the 1,500 sends released at
    // SIGCONT take ≥ 300 ms to drain, more than `waitTimeMillsInSendQueue` (200 ms), so the
    // queue's tail is failed fast.
    let text = r#"
name = "pause"
pin = false
[workload]
rate = 1000
warmup = "0.5s"
duration = "4s"
connections = 2
message_size = 128
[broker]
mappedFileSizeCommitLog = 16777216
sendMessageThreadPoolNums = 1
injectAppendDelayMicros = 200
[fault]
pause = "1s for 1500ms"
"#;
    // The test's premise is a broker that keeps up until the pause. A machine that starves it
    // in second 1 already (busy answers before any pause) gets one more try; the second try
    // is judged whatever it shows, so a broker that is always behind still fails.
    let mut attempt = 1;
    let (tmp, rows, out) = loop {
        let tmp = tempfile::tempdir().unwrap();
        let (rows, out) = run(tmp.path(), text);
        let first = busy_in_second(&out, 1);
        if first == 0 || attempt == 2 {
            break (tmp, rows, out);
        }
        eprintln!("attempt {attempt}: {first} busy answers in second 1, before the pause: again");
        attempt += 1;
    };
    let _keep = tmp;
    let row = &rows[0];
    let busy_tcq = row.seg.counts.busy[harness::recorder::BusyClass::TimeoutCleanQueue.index()];
    assert!(
        busy_tcq > 0,
        "no [TIMEOUT_CLEAN_QUEUE] after the pause: {row:?}"
    );
    assert_eq!(row.fault.busy_stored, Some(0), "{row:?}");
    assert_eq!(
        row.fault.acked_lost,
        Some(0),
        "a pause loses nothing: {row:?}"
    );
    assert_eq!(row.fault.recovery_ms, None, "no kill, no recovery time");
    // Per second of the job (second N covers (N-1 s, N s]): SIGSTOP at 1.5 s, SIGCONT at
    // 3.0 s. No busy answer in the first two seconds; the burst in second 4 or later.
    let (series, rows) = busy_by_second(&out);
    let mut before = 0u64;
    let mut after = 0u64;
    let mut events = Vec::new();
    for (s, b, event) in rows {
        if !event.is_empty() {
            events.push((s, event));
        }
        if s <= 2 {
            before += b;
        } else if s >= 4 {
            after += b;
        }
    }
    // The analytic floor: of the ~1,500 sends released at SIGCONT, the one send thread serves
    // at most 1,000 within the 200 ms a request may wait, so at least ~500 are failed fast
    // (400 leaves room for the 10 ms cleaner's cadence). A loaded machine can starve the broker
    // before the pause too (seen: 244 busy in seconds 1-2 at load 12); the burst must still
    // be more than twice that.
    assert!(
        after >= 400 && before * 2 < after,
        "busy before the pause {before}, after SIGCONT {after}:\n{series}"
    );
    // The injector's moments are in the `event` column of their seconds: SIGSTOP at 1.5 s in
    // second 2, SIGCONT at 3.0 s at the end of second 3 or early in second 4.
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0], (2, "pause".to_owned()), "{events:?}");
    assert!(
        events[1].1 == "resume" && (3..=4).contains(&events[1].0),
        "{events:?}"
    );
}

/// The `busy` column of one second of the job's timeseries.
fn busy_in_second(out: &Path, second: u64) -> u64 {
    let (_, rows) = busy_by_second(out);
    rows.iter().filter(|r| r.0 == second).map(|r| r.1).sum()
}

/// The job's timeseries.csv as read, and its (second, busy, event) rows.
fn busy_by_second(out: &Path) -> (String, Vec<(u64, u64, String)>) {
    let series = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let mut lines = series.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (second, busy, event) = (col("second"), col("busy"), col("event"));
    let rows = lines
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            (
                cells[second].parse().unwrap(),
                cells[busy].parse().unwrap(),
                cells[event].to_owned(),
            )
        })
        .collect();
    (series, rows)
}

#[test]
fn kills_need_a_broker_the_harness_started() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("p.toml");
    std::fs::write(
        &path,
        "name = \"t\"\n[workload]\nduration = \"5s\"\n[fault]\nkill = \"2s\"\nrestart = true\n",
    )
    .unwrap();
    let profile = Profile::load(&path, &[]).unwrap();
    let mut opts = options(&tmp.path().join("out"));
    opts.target = Some("127.0.0.1:9".parse().unwrap());
    let e = run_profile(&profile, &opts).unwrap_err();
    assert_eq!(harness::exit::code_for(&e), harness::exit::INVALID_INPUT);
    assert!(format!("{e:#}").contains("fault.kill"), "{e:#}");
    // A pause works on a --target broker only with its pid.
    std::fs::write(
        &path,
        "name = \"t\"\n[workload]\nduration = \"5s\"\n[fault]\npause = \"1s for 1s\"\n",
    )
    .unwrap();
    let profile = Profile::load(&path, &[]).unwrap();
    let e = run_profile(&profile, &opts).unwrap_err();
    assert_eq!(harness::exit::code_for(&e), harness::exit::INVALID_INPUT);
    assert!(format!("{e:#}").contains("--broker-pid"), "{e:#}");
}
