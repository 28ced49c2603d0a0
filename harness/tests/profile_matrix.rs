//! Profile validation (file, line, fix), matrix order and ids, the CSV contract.

use std::path::Path;

use harness::recorder::{classify, parse_queue_stats, BusyClass, NotAvailableClass, Outcome};
use harness::report::{summary_header, TIMESERIES_COLUMNS};
use harness_model::matrix::{cell_id, expand, schedule, Job};
use harness_model::profile::{
    did_you_mean, Order, Profile, ProfileError, KEY_METRICS, WORKLOAD_KEYS,
};

fn parse(text: &str) -> Result<Profile, ProfileError> {
    Profile::parse(text, "p.toml", Path::new("p.toml"), &[])
}

fn invalid(text: &str) -> (usize, String, String) {
    match parse(text) {
        Err(ProfileError::Invalid {
            line,
            message,
            help,
            file,
            ..
        }) => {
            assert_eq!(file, "p.toml");
            (line, message, help.unwrap_or_default())
        }
        other => panic!("expected a located error, got {other:?}"),
    }
}

const MATRIX: &str = r#"
name = "m"
[workload]
duration = "1s"
[broker]
flushDiskType = "ASYNC_FLUSH"
[matrix]
"broker.useReentrantLockWhenPutMessage" = [true, false]
"broker.sendMessageThreadPoolNums" = [1, 2, 4]
"workload.rate" = [100, 200]
"#;

#[test]
fn cross_product_order_is_pinned() {
    let p = parse(MATRIX).unwrap();
    let cells = expand(&p).unwrap();
    assert_eq!(cells.len(), 12);
    let labels: Vec<&str> = cells.iter().map(|c| c.label.as_str()).collect();
    // Axes sorted by key; the first varies slowest; values in the order written.
    assert_eq!(
        labels[0],
        "sendMessageThreadPoolNums=1,useReentrantLockWhenPutMessage=true,rate=100"
    );
    assert_eq!(
        labels[1],
        "sendMessageThreadPoolNums=1,useReentrantLockWhenPutMessage=true,rate=200"
    );
    assert_eq!(
        labels[2],
        "sendMessageThreadPoolNums=1,useReentrantLockWhenPutMessage=false,rate=100"
    );
    assert_eq!(
        labels[11],
        "sendMessageThreadPoolNums=4,useReentrantLockWhenPutMessage=false,rate=200"
    );
    assert_eq!(cells[3].workload.rate, 200.0);
    assert_eq!(cells[3].broker["useReentrantLockWhenPutMessage"], "false");
    assert_eq!(cells[3].broker["flushDiskType"], "ASYNC_FLUSH");
    // Ids are stable, distinct and independent of parameter order.
    let mut ids: Vec<&str> = cells.iter().map(|c| c.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 12);
    let a = vec![
        ("x".to_owned(), "1".to_owned()),
        ("y".to_owned(), "2".to_owned()),
    ];
    let b = vec![
        ("y".to_owned(), "2".to_owned()),
        ("x".to_owned(), "1".to_owned()),
    ];
    assert_eq!(cell_id(&a), cell_id(&b));
    assert_eq!(cell_id(&a).len(), 8);
    assert_eq!(
        cells[0].id,
        parse(MATRIX)
            .map(|p| expand(&p).unwrap()[0].id.clone())
            .unwrap()
    );
}

#[test]
fn repetitions_are_interleaved_and_randomized_rounds_are_seeded() {
    let seq = schedule(3, 2, Order::Sequential, 1);
    let cells: Vec<(usize, u32)> = seq.iter().map(|j| (j.cell, j.repetition)).collect();
    assert_eq!(cells, vec![(0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2)]);
    let r1 = schedule(6, 3, Order::Randomized, 42);
    assert_eq!(r1, schedule(6, 3, Order::Randomized, 42));
    assert_ne!(r1, schedule(6, 3, Order::Randomized, 43));
    for round in 1..=3 {
        let mut in_round: Vec<usize> = r1
            .iter()
            .filter(|j| j.repetition == round)
            .map(|j| j.cell)
            .collect();
        assert_eq!(in_round.len(), 6);
        in_round.sort();
        assert_eq!(in_round, (0..6).collect::<Vec<_>>());
    }
    assert!(r1
        .windows(2)
        .all(|w: &[Job]| w[0].repetition <= w[1].repetition));
}

/// Cell ids are persisted (results/baselines/*.csv) and matched across runs and releases:
/// values computed by the original hand-written FNV-1a, pinned.
#[test]
fn cell_ids_are_pinned_to_the_committed_baseline() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let p = Profile::load(&root.join("profiles/smoke.toml"), &[]).unwrap();
    let ids: Vec<String> = expand(&p).unwrap().into_iter().map(|c| c.id).collect();
    assert_eq!(ids, ["1a8ecdb2", "873daa4e"]);
    let baseline = std::fs::read_to_string(root.join("results/baselines/smoke.csv")).unwrap();
    for id in &ids {
        assert!(
            baseline.contains(&format!(",{id},")),
            "{id} not in the baseline"
        );
    }
    let kv = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(cell_id(&[]), "4fd0bfc1");
    assert_eq!(
        cell_id(&kv(&[
            ("workload.rate", "200"),
            ("broker.useReentrantLockWhenPutMessage", "false"),
            ("broker.sendMessageThreadPoolNums", "4"),
        ])),
        "83d1d172"
    );
}

#[test]
fn randomized_order_is_a_pure_function_of_the_seed() {
    for seed in [0, 1, 42, u64::MAX] {
        let a = schedule(10, 4, Order::Randomized, seed);
        assert_eq!(a, schedule(10, 4, Order::Randomized, seed), "seed {seed}");
    }
    // Different seeds give different orders, and rounds are shuffled independently.
    let cells = |jobs: &[Job]| jobs.iter().map(|j| j.cell).collect::<Vec<_>>();
    let r = schedule(10, 2, Order::Randomized, 7);
    assert_ne!(cells(&r[..10]), cells(&r[10..]));
    let distinct: std::collections::BTreeSet<Vec<usize>> = (0..20)
        .map(|seed| cells(&schedule(10, 1, Order::Randomized, seed)))
        .collect();
    assert!(distinct.len() >= 19, "{}", distinct.len());
}

#[test]
fn unknown_key_names_line_and_suggests() {
    let (line, msg, help) = invalid("name = \"x\"\n[workload]\nrate = 5\nmax_inflight = 3\n");
    assert_eq!(line, 4);
    assert!(msg.contains("max_inflight"), "{msg}");
    assert!(help.contains("did you mean `max_in_flight`"), "{help}");
}

#[test]
fn did_you_mean_picks_the_first_closest_key_within_reach() {
    assert_eq!(
        did_you_mean("max_inflight", WORKLOAD_KEYS),
        Some("max_in_flight")
    );
    assert_eq!(did_you_mean("rat", WORKLOAD_KEYS), Some("rate"));
    // Edit distance counts characters, not bytes.
    assert_eq!(did_you_mean("ratè", WORKLOAD_KEYS), Some("rate"));
    // A tie goes to the candidate listed first.
    assert_eq!(did_you_mean("p9_ms", KEY_METRICS), Some("p90_ms"));
    // Up to 2 edits, or a third of the candidate's length for long names.
    assert_eq!(did_you_mean("xyzzy", WORKLOAD_KEYS), None);
    assert_eq!(
        did_you_mean("prodcer_grop", WORKLOAD_KEYS),
        Some("producer_group")
    );
    assert_eq!(did_you_mean("", &["ab", "abc"]), Some("ab"));
    assert_eq!(did_you_mean("x", &[]), None);
}

#[test]
fn wrong_type_names_line() {
    let (line, msg, _) = invalid("name = \"x\"\n\n[workload]\nrate = \"fast\"\n");
    assert_eq!(line, 4);
    assert!(
        msg.contains("invalid type") || msg.contains("expected"),
        "{msg}"
    );
}

#[test]
fn empty_axis_and_fixed_plus_axis_are_errors() {
    let (line, msg, _) =
        invalid("name = \"x\"\n[matrix]\n\"broker.waitTimeMillsInSendQueue\" = []\n");
    assert_eq!(line, 3);
    assert!(msg.contains("empty"), "{msg}");
    let (line, msg, help) = invalid("name = \"x\"\n[broker]\nwaitTimeMillsInSendQueue = 200\n[matrix]\n\"broker.waitTimeMillsInSendQueue\" = [200, 3000]\n");
    assert_eq!(line, 5);
    assert!(msg.contains("both fixed"), "{msg}");
    assert!(help.contains("remove"), "{help}");
    let (_, msg, _) =
        invalid("name = \"x\"\n[workload]\nrate = 5\n[matrix]\n\"workload.rate\" = [1, 2]\n");
    assert!(msg.contains("both fixed"), "{msg}");
}

#[test]
fn bad_axis_values_and_keys_are_located() {
    let (line, msg, help) = invalid("name = \"x\"\n[matrix]\n\"workload.rte\" = [1]\n");
    assert_eq!(line, 3);
    assert!(msg.contains("rte"), "{msg}");
    assert!(help.contains("workload.rate"), "{help}");
    let (line, msg, _) =
        invalid("name = \"x\"\n[matrix]\n\"workload.model\" = [\"open\", \"sideways\"]\n");
    assert_eq!(line, 3);
    assert!(msg.contains("sideways"), "{msg}");
    let (_, msg, _) = invalid("name = \"x\"\n[matrix]\nrate = [1]\n");
    assert!(msg.contains("must start with"), "{msg}");
    // `steps` is not written: the error points at the [workload] table.
    let (line, msg, _) = invalid("name = \"x\"\n[workload]\nmodel = \"steps\"\n");
    assert_eq!(line, 2);
    assert!(msg.contains("steps"), "{msg}");
}

#[test]
fn set_overrides_apply_and_collapse_axes() {
    let p = Profile::parse(
        MATRIX,
        "p.toml",
        Path::new("p.toml"),
        &[
            "workload.rate=5000".into(),
            "broker.sendMessageThreadPoolNums=8".into(),
        ],
    )
    .unwrap();
    assert_eq!(p.workload.rate, 5000.0);
    assert_eq!(p.axes.len(), 1);
    assert_eq!(p.broker["sendMessageThreadPoolNums"], "8");
    let err = Profile::parse(
        MATRIX,
        "p.toml",
        Path::new("p.toml"),
        &["workload.rat=1".into()],
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("did you mean `workload.rate`"),
        "{err}"
    );
}

/// `--set` reaches `[knee]`, `[slo]` and `[ab]` too, checked as the file's own table would be.
#[test]
fn set_reaches_knee_slo_and_ab() {
    let text = "name = \"x\"\n[workload]\nmodel = \"knee\"\n[slo]\nterms = [\"p99_ms <= 50\"]\n[knee]\ngrowth = 3\n[ab]\nthreshold = 4\n";
    let set = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Profile::parse(text, "p.toml", Path::new("p.toml"), &sets)
    };
    let p = set(&[
        "knee.max_rate=20000",
        "slo.terms=[\"busy_rate <= 0.1%\", \"p99_ms <= 20\"]",
        "ab.metrics=[\"capacity\"]",
    ])
    .unwrap();
    assert_eq!(p.knee.max_rate, 20000.0);
    assert_eq!(p.knee.growth, 3.0, "the file's other [knee] keys stay");
    assert_eq!(p.slo.as_ref().unwrap().terms.len(), 2);
    let ab = p.ab.unwrap();
    assert_eq!(ab.metrics, ["capacity"]);
    assert_eq!(ab.threshold_pct, 4.0, "the file's other [ab] keys stay");
    for (bad, says) in [
        ("knee.growth=0.5", "`growth` must be > 1"),
        ("knee.max_rat=5", "unknown field `max_rat`"),
        ("ab.metrics=[\"capacty\"]", "did you mean `capacity`"),
        ("slo.terms=[\"p99_ms <=\"]", "[slo]"),
        ("kne.growth=2", "did you mean `knee.`"),
    ] {
        let err = set(&[bad]).unwrap_err().to_string();
        assert!(err.contains(says), "{bad}: {err}");
    }
}

#[test]
fn gate_table_is_accepted_and_shipped_profiles_parse() {
    parse("name = \"x\"\n[gate]\nmax_p99_regression = 0.1\n[gate.thresholds]\nbusy_rate = 0.01\n")
        .unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../profiles");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "toml") {
            let p = Profile::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
            assert!(!expand(&p).unwrap().is_empty());
            n += 1;
        }
    }
    assert!(n >= 8, "profiles found: {n}");
}

#[test]
fn every_remark_is_classified() {
    let cases = [
        (2, "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 12ms, size of queue: 3", Outcome::Busy(BusyClass::PcbusyCleanQueue)),
        (2, "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 207ms, size of queue: 0", Outcome::Busy(BusyClass::TimeoutCleanQueue)),
        (2, "[REJECTREQUEST]system busy, start flow control for a while", Outcome::Busy(BusyClass::RejectRequest)),
        (2, "[OVERLOAD]system busy, start flow control for a while", Outcome::Busy(BusyClass::Overload)),
        (2, "[PC_SYNCHRONIZED]broker busy, start flow control for a while", Outcome::Busy(BusyClass::PcSynchronized)),
        (1, "[PC_SYNCHRONIZED]broker busy, start flow control for a while", Outcome::Busy(BusyClass::PcSynchronized)),
        (2, "something else", Outcome::Busy(BusyClass::Other)),
        (1, "create mapped file failed, server is busy or broken.", Outcome::SystemError),
        (1, "UNKNOWN_ERROR", Outcome::SystemError),
        (10, "", Outcome::FlushDiskTimeout),
        (13, "the message is illegal, maybe msg body or properties length not matched.", Outcome::MessageIllegal),
        (14, "service not available now.", Outcome::NotAvailable(NotAvailableClass::Other)),
        (14, "service not available now. It may be caused by one of the following reasons: the broker's disk is full [CL:  0.91 CQ:  0.91 INDEX: -1.00], messages are put to the slave, message store has been shut down, etc.", Outcome::NotAvailable(NotAvailableClass::DiskFull)),
        (14, "service not available now, maybe disk full, CL:  0.91 CQ:  0.91 INDEX: -1.00, maybe your broker machine memory too small.", Outcome::NotAvailable(NotAvailableClass::DiskFull)),
        (12, "", Outcome::FlushSlaveTimeout),
        (11, "", Outcome::SlaveNotAvailable),
        (16, "", Outcome::OtherCode(16)),
        (0, "", Outcome::Ok),
    ];
    for (code, remark, want) in cases {
        assert_eq!(classify(code, Some(remark)), want, "{code} {remark}");
    }
    assert_eq!(classify(2, None), Outcome::Busy(BusyClass::Other));
    assert_eq!(parse_queue_stats(cases[1].1), Some((207, 0)));
    assert_eq!(parse_queue_stats(cases[0].1), Some((12, 3)));
    assert_eq!(parse_queue_stats("[OVERLOAD]system busy"), None);
}

/// The column contract with `harness compare`.
#[test]
fn csv_schema_is_pinned() {
    let header = summary_header(&["broker.a".into(), "workload.rate".into()]).join(",");
    assert_eq!(
        header,
        "profile,cell_id,repetition,step,param_broker.a,param_workload.rate,target_rate,achieved_rate,ok_rate,duration_s,sent,ok,busy,busy_rate,\
busy_pcbusy_clean_queue,busy_timeout_clean_queue,busy_rejectrequest,busy_overload,busy_pc_synchronized,busy_other,system_error,\
flush_disk_timeout,message_illegal,other_codes,not_available_disk_full,not_available_other,flush_slave_timeout,slave_not_available,timeouts,dropped,connection_errors,attempts,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,\
service_p50_ms,service_p99_ms,service_max_ms,lag_p50_us,lag_p99_us,lag_max_us,busy_p99_ms,period_in_queue_p50_ms,\
period_in_queue_max_ms,size_of_queue_max,broker_cpu_avg,broker_cpu_max,broker_cpu_s,broker_jit_pct,jit_warmup_s,broker_rss_max_mb,harness_cpu_max,other_cpu_max,steal_cpu_max,\
broker_flow_control_total,broker_counters_match,valid,invalid_reason,invalid_kinds,first_ok,first_busy,final_ok,final_busy,\
broker_ok,broker_busy,consumed,consume_rate,consumer_fc_count,\
consumer_fc_size,consumer_fc_span,consumer_fc_not_locked,consumer_lag_max,consumer_lost,consumer_duplicates,e2e_p50_ms,\
e2e_p99_ms,e2e_p999_ms,stored_e2e_p99_ms,consumer_cached_max,consumer_cached_mib_max,pulls_found,pulls_not_found,\
pulls_retry_immediately,pulls_offset_moved,pulls_errors,pulls_busy_pcbusy_clean_queue,pulls_busy_timeout_clean_queue,\
pulls_busy_rejectrequest,pulls_busy_overload,pulls_busy_pc_synchronized,pulls_busy_other,consumer_decode_errors,\
consumer_foreign,consumer_drained,consumer_failures,consumer_retries,consumer_dlq,consumer_retry_pending,\
consumer_send_backs,consumer_send_back_failed,consumer_send_back_fallback,consumer_suspends,retry_delay_p50_ms,retry_delay_p99_ms,\
broker_sndbck_put_nums,broker_sndbck2dlq_times,broker_schedule_put_nums,broker_schedule_deliver_nums,consumer_recovery_ms,consumer_restart_duplicates,\
broker_consumed,broker_lag_max,drain_rate,\
acked_lost,phantom,busy_stored,duplicates,corrupt,unacked_in_flight,recovery_ms,\
app_recovery_ms,fault_broker,broker_acked_lost,broker_phantom,broker_duplicates,\
slo_met,slo_failed,knee_rate,knee_limited_by,knee_broker_share,order_inversions,order_source,order_read,consume_order_violations,\
consume_order_redelivered,repl_lag_max_bytes,slave_waits,slave_wait_avg_us,slave_wait_p50_us,slave_wait_p99_us,slave_wait_max_us,acked_lost_master,acked_lost_slave,\
broker_not_available_disk_full,broker_write_blocks,broker_write_block_ms,retention_rounds,commitlog_deleted_mb,disk_ratio_max"
    );
    assert_eq!(
        TIMESERIES_COLUMNS.join(","),
        "profile,cell_id,repetition,step,second,phase,target_rate,achieved_rate,ok,busy,busy_pcbusy_clean_queue,\
busy_timeout_clean_queue,busy_rejectrequest,busy_overload,busy_pc_synchronized,busy_other,errors,timeouts,dropped,\
p50_ms,p99_ms,max_ms,broker_cpu,broker_jit_ms,broker_rss_mb,harness_cpu,other_cpu,steal_cpu,send_queue_size,send_queue_head_wait_ms,page_cache_lock_ms,\
harness_rss_mb,pool_buffers_free,commit_lag_bytes,dispatch_behind_bytes,not_available_disk_full,not_available_other,flush_slave_timeout,slave_not_available,store_disk_mb,\
end_unix_s,consumed,consumer_lag,consumer_cached,consumer_cached_mib,consumer_fc_count,consumer_fc_size,consumer_fc_span,consumer_fc_not_locked,consumer_failures,consumer_retries,consumer_dlq,e2e_p50_ms,e2e_p99_ms,order_inversions,\
consume_order_violations,repl_lag_bytes,slave_wait_avg_us,slave_wait_p99_us,event"
    );
}
