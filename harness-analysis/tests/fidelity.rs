//! The fidelity table on hand-made result folders whose verdicts are known by arithmetic.

use std::path::Path;

use harness_analysis::fidelity::{
    counts, render_csv, render_markdown, table_for, RowOutcome, RowStatus, RowsFile, TableLine,
    Verdict,
};

const ROWS: &str = r#"
[[row]]
id = "1"
title = "knee per put lock"
profile = "p.toml"
note = "spin over reentrant."
[[row.check]]
name = "spin/reentrant, 2 threads"
relation = "ratio"
tolerance = 0.5
metric = "knee_rate"
where = { "broker.useReentrantLockWhenPutMessage" = "false", "broker.sendMessageThreadPoolNums" = "2" }
over = { where = { "broker.useReentrantLockWhenPutMessage" = "true", "broker.sendMessageThreadPoolNums" = "2" } }

[[row]]
id = "3"
title = "busy against the wait"
profile = "p.toml"
[[row.check]]
name = "busy % along waitTimeMillsInSendQueue"
relation = "monotone"
tolerance = 0.1
metric = "busy_rate"
axis = "broker.waitTimeMillsInSendQueue"

[[row]]
id = "4b"
title = "kill -9"
profile = "p.toml"
[[row.check]]
name = "acked lost, pool on"
relation = "presence"
tolerance = 0
aggregate = "max"
metric = "acked_lost"

[[row]]
id = "8"
title = "paused slave"
not_run = "needs master/slave on Apache"

[[row]]
id = "9"
title = "retention"
profile = "p.toml"
[[row.check]]
name = "x"
metric = "ok_rate"
where = {}
over = { metric = "sent" }
"#;

/// Row 10's first check, as `rows.toml` writes it.
const ROW_10: &str = r#"
[[row]]
id = "10"
title = "e2e"
profile = "p.toml"
[[row.check]]
name = "e2e p99 / p50"
tolerance = 1.0
metric = "e2e_p99_ms"
over = { metric = "e2e_p50_ms" }
"#;

fn write(dir: &Path, header: &str, lines: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    let mut s = format!("cell_id,repetition,{header}\n");
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    std::fs::write(dir.join("summary.csv"), s).unwrap();
}

/// The table of row `id` of `rows` whose folder holds one summary.csv of `header` and `lines`.
fn judge_one(rows: &RowsFile, id: &str, header: &str, lines: &[&str]) -> Vec<TableLine> {
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join(id), header, lines);
    table_for(
        rows,
        &[RowOutcome {
            id: id.into(),
            status: RowStatus::Measured,
        }],
        tmp.path(),
    )
}

#[test]
fn verdicts_follow_the_arithmetic() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // Row 1: model ratio 20/20 = 1.0, Apache 4/16 = 0.25 on 5.3.3 (differ: 4x apart);
    // on 4.9.7 model 9/10 = 0.9, Apache 6/10 = 0.6 (1.5x apart: agree at the edge).
    write(
        &root.join("1"),
        "param_broker.kind,param_broker.version,param_broker.useReentrantLockWhenPutMessage,param_broker.sendMessageThreadPoolNums,knee_rate",
        &[
            "a,1,in-tree,5.3.3,true,2,20000",
            "b,1,in-tree,5.3.3,false,2,20000",
            "c,1,apache,5.3.3,true,2,16000",
            "d,1,apache,5.3.3,false,2,4000",
            "e,1,in-tree,4.9.7,true,2,10",
            "f,1,in-tree,4.9.7,false,2,9",
            "g,1,apache,4.9.7,true,2,10",
            "h,1,apache,4.9.7,false,2,6",
        ],
    );
    // Row 3: both falling with the wait (model 0.5, 0.2, 0.0; Apache 0.6, 0.3, 0.29, whose
    // last step is within 10% and counts as flat).
    write(
        &root.join("3"),
        "param_broker.kind,param_broker.waitTimeMillsInSendQueue,busy_rate",
        &[
            "a,1,in-tree,200,0.5",
            "b,1,in-tree,1000,0.2",
            "c,1,in-tree,3000,0.0",
            "d,1,apache,3000,0.29",
            "e,1,apache,200,0.6",
            "f,1,apache,1000,0.3",
        ],
    );
    // Row 4b: the model loses messages, Apache none (max over repetitions): differ.
    write(
        &root.join("4b"),
        "param_broker.kind,acked_lost",
        &[
            "a,1,in-tree,0",
            "a,2,in-tree,12",
            "b,1,apache,0",
            "b,2,apache,0",
        ],
    );
    let rows = RowsFile::parse(Path::new("rows.toml"), ROWS).unwrap();
    let outcomes = vec![
        RowOutcome {
            id: "1".into(),
            status: RowStatus::Measured,
        },
        RowOutcome {
            id: "3".into(),
            status: RowStatus::Measured,
        },
        RowOutcome {
            id: "4b".into(),
            status: RowStatus::Measured,
        },
        RowOutcome {
            id: "9".into(),
            status: RowStatus::Interrupted,
        },
    ];
    let lines = table_for(&rows, &outcomes, root);
    let verdicts: Vec<(&str, &str, Option<Verdict>)> = lines
        .iter()
        .map(|l| (l.row.as_str(), l.version.as_str(), l.verdict))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("1", "4.9.7", Some(Verdict::Agree)),
            ("1", "5.3.3", Some(Verdict::Differ)),
            ("3", "", Some(Verdict::Agree)),
            ("4b", "", Some(Verdict::Differ)),
            ("8", "", None),
            ("9", "", None),
        ]
    );
    assert!(
        lines[1].real.starts_with("0.25 (4000 / 16000)"),
        "{lines:?}"
    );
    assert!(lines[2].model.starts_with("falling (0.50 → 0.20 → 0"));
    assert!(lines[2].real.starts_with("falling (0.60 → 0.30 → 0.29)"));
    assert_eq!(lines[3].model, "12 (present)");
    assert!(lines[4].status.contains("needs master/slave"));
    assert!(lines[5].status.contains("interrupted before"));
    assert_eq!(counts(&lines), (2, 2, 0));

    let md = render_markdown(&lines);
    assert!(md.contains("| 1 | knee per put lock | spin/reentrant, 2 threads | 5.3.3 |"));
    assert!(md.contains("2 agree, 2 differ, 0 without a figure."));
    assert!(md.contains("- **Row 1.** spin over reentrant."));
    let csv = render_csv(&lines).unwrap();
    assert_eq!(csv.lines().count(), 1 + lines.len());
    assert!(
        csv.contains("4b,kill -9,\"acked lost, pool on\",,"),
        "{csv}"
    );
}

#[test]
fn a_missing_side_has_no_figure() {
    let rows = RowsFile::parse(Path::new("rows.toml"), ROWS).unwrap();
    let lines = judge_one(
        &rows,
        "1",
        "param_broker.kind,param_broker.useReentrantLockWhenPutMessage,param_broker.sendMessageThreadPoolNums,knee_rate",
        &["a,1,in-tree,true,2,10", "b,1,in-tree,false,2,10"],
    );
    assert_eq!(lines[0].verdict, Some(Verdict::Unknown));
    assert!(lines[0].real.contains("no cells"));
    assert_eq!(lines[1].status, "not in this run");
}

#[test]
fn a_run_without_a_version_axis_names_its_apache_release() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("4b");
    write(
        &dir,
        "param_broker.kind,acked_lost",
        &["a,1,in-tree,0", "b,1,apache,0"],
    );
    std::fs::write(
        dir.join("run.json"),
        r#"{"brokers": [{"kind": "in-tree", "version": null}, {"kind": "apache", "version": "5.3.3"}]}"#,
    )
    .unwrap();
    let rows = RowsFile::parse(Path::new("rows.toml"), ROWS).unwrap();
    let lines = table_for(
        &rows,
        &[RowOutcome {
            id: "4b".into(),
            status: RowStatus::Measured,
        }],
        tmp.path(),
    );
    let l = lines.iter().find(|l| l.row == "4b").unwrap();
    assert_eq!(
        (l.version.as_str(), l.verdict),
        ("5.3.3", Some(Verdict::Agree))
    );
}

#[test]
fn a_row_run_once_per_broker_is_read_as_one_with_its_stair() {
    let tmp = tempfile::tempdir().unwrap();
    let rows = RowsFile::parse(
        Path::new("rows.toml"),
        r#"
[[row]]
id = "1"
title = "knee"
profile = "p.toml"
[[row.check]]
name = "k"
metric = "knee_rate"

[[row]]
id = "3"
title = "wait"
profile = "w.toml"
[row.rate_from]
row = "1"
metric = "knee_rate"
factor = 1.5
stair = "10s"
[[row.check]]
name = "busy along the wait, stair 1"
relation = "monotone"
tolerance = 0.1
metric = "busy_rate"
axis = "broker.waitTimeMillsInSendQueue"
where = { step = "1" }
"#,
    )
    .unwrap();
    // Stair 0 (the ramp) would read rising on Apache; stair 1 falls on both.
    write(
        &tmp.path().join("3/in-tree-5.3.3"),
        "step,param_broker.waitTimeMillsInSendQueue,busy_rate",
        &[
            "a,1,0,200,0",
            "a,1,1,200,0.4",
            "b,1,0,3000,0",
            "b,1,1,3000,0.1",
        ],
    );
    write(
        &tmp.path().join("3/apache-5.3.3"),
        "step,param_broker.waitTimeMillsInSendQueue,busy_rate",
        &[
            "a,1,0,200,0",
            "a,1,1,200,0.6",
            "b,1,0,3000,0.5",
            "b,1,1,3000,0.0",
        ],
    );
    let data = harness_analysis::fidelity::load_row(&tmp.path().join("3")).unwrap();
    assert_eq!(data.rows.len(), 8);
    let lines = table_for(
        &rows,
        &[RowOutcome {
            id: "3".into(),
            status: RowStatus::Measured,
        }],
        tmp.path(),
    );
    let l = &lines[1];
    assert_eq!(l.version, "5.3.3");
    assert_eq!(l.verdict, Some(Verdict::Agree), "{l:?}");
    assert!(l.model.starts_with("falling (0.40 → 0.10)"), "{l:?}");
}

/// The shipped row file: it parses, every profile loads (with its quick overrides too), and
/// every cell a check selects is one its profile's matrix can have.
#[test]
fn the_shipped_rows_name_profiles_and_axes_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let rows = RowsFile::load(&root.join("profiles/fidelity/rows.toml")).unwrap();
    assert!(rows.row.len() >= 12, "issue 46 lists 12 questions");
    for spec in &rows.row {
        let Some(profile) = &spec.profile else {
            assert!(spec.not_run.is_some());
            continue;
        };
        let path = root.join(profile);
        let p = harness_model::profile::Profile::load(&path, &spec.set)
            .unwrap_or_else(|e| panic!("row {}: {e}", spec.id));
        harness_model::profile::Profile::load(
            &path,
            &[spec.set.clone(), spec.quick_set.clone()].concat(),
        )
        .unwrap_or_else(|e| panic!("row {} quick: {e}", spec.id));
        let axes: Vec<&str> = p.axes.iter().map(|a| a.key.as_str()).collect();
        if spec.rate_from.is_none() {
            assert!(
                axes.contains(&"broker.kind"),
                "row {}: {} has no broker.kind axis, so it runs one broker",
                spec.id,
                profile.display()
            );
        }
        for c in &spec.check {
            let keys = c
                .cells
                .keys()
                .chain(c.over.iter().flat_map(|o| o.cells.keys()))
                .chain(c.axis.iter());
            for k in keys {
                assert!(
                    k == "step" || axes.contains(&k.as_str()),
                    "row {} check `{}`: `{k}` is not an axis of {}",
                    spec.id,
                    c.name,
                    profile.display()
                );
            }
        }
    }
}

#[test]
fn a_broker_that_timed_out_has_no_figure() {
    let rows = RowsFile::parse(Path::new("rows.toml"), ROW_10).unwrap();
    // Apache answered 60 of 1,000 sends in time: no figure, whatever its ratio.
    let lines = judge_one(
        &rows,
        "10",
        "param_broker.kind,sent,timeouts,e2e_p50_ms,e2e_p99_ms",
        &["a,1,in-tree,1000,0,2,10", "b,1,apache,1000,940,13000,15000"],
    );
    assert_eq!(lines[0].verdict, Some(Verdict::Unknown));
    assert_eq!(lines[0].model, "5.00 (10 / 2.00)");
    assert!(
        lines[0].real.contains("94% of sends timed out"),
        "{lines:?}"
    );
}

/// A JVM's cells carry how much of their windows its JIT compiled; the figure says so, and
/// the verdict is the arithmetic's alone. broker-under-test has no JIT: nothing is added.
#[test]
fn a_jvm_s_figure_says_how_busy_its_jit_was() {
    let rows = RowsFile::parse(Path::new("rows.toml"), ROW_10).unwrap();
    let lines = judge_one(
        &rows,
        "10",
        "param_broker.kind,param_broker.version,sent,timeouts,e2e_p50_ms,e2e_p99_ms,broker_jit_pct",
        &[
            "a,1,in-tree,4.9.7,1000,0,1,3,",
            "b,1,in-tree,5.3.3,1000,0,1,3,",
            "c,1,apache,4.9.7,1000,0,2,6,17.1",
            "d,1,apache,5.3.3,1000,0,2,6,66.6",
            "e,1,apache,5.3.3,1000,0,2,6,94.0",
        ],
    );
    assert_eq!(lines[0].model, "3.00 (3.00 / 1.00)");
    assert_eq!(lines[0].real, "3.00 (6.00 / 2.00), JIT 17%");
    assert_eq!(lines[1].real, "3.00 (6.00 / 2.00), JIT 67-94%");
    assert_eq!(lines[1].verdict, Some(Verdict::Agree));
}

/// Seconds in which the hypervisor took a large share of a core are named in the figure, on
/// either broker; a quiet host's few percent are not. The verdict does not read it.
#[test]
fn a_figure_says_when_the_host_took_the_cpu() {
    let rows = RowsFile::parse(Path::new("rows.toml"), ROW_10).unwrap();
    let lines = judge_one(
        &rows,
        "10",
        "param_broker.kind,param_broker.version,sent,timeouts,e2e_p50_ms,e2e_p99_ms,steal_cpu_max",
        &[
            "a,1,in-tree,4.9.7,1000,0,1,3,93.8",
            "b,1,in-tree,5.3.3,1000,0,1,3,14.9",
            "c,1,apache,4.9.7,1000,0,2,6,2.0",
            "d,1,apache,5.3.3,1000,0,2,6,36.1",
            "e,1,apache,5.3.3,1000,0,2,6,",
        ],
    );
    assert_eq!(lines[0].model, "3.00 (3.00 / 1.00), steal 94%");
    assert_eq!(lines[0].real, "3.00 (6.00 / 2.00)");
    assert_eq!(lines[1].model, "3.00 (3.00 / 1.00)");
    assert_eq!(lines[1].real, "3.00 (6.00 / 2.00), steal 36%");
    assert_eq!(lines[0].verdict, Some(Verdict::Agree));
}

#[test]
fn a_cell_that_sent_nothing_is_no_figure_not_an_absence() {
    let rows = RowsFile::parse(
        Path::new("rows.toml"),
        r#"
[[row]]
id = "8"
title = "sync master"
profile = "p.toml"
[[row.check]]
name = "12s"
relation = "presence"
tolerance = 0
metric = "flush_slave_timeout"
"#,
    )
    .unwrap();
    // Apache's pair never started (its row: zeros and a reason): no figure, not "absent".
    let lines = judge_one(
        &rows,
        "8",
        "param_broker.kind,sent,timeouts,flush_slave_timeout",
        &["a,1,in-tree,3300,0,900", "b,1,apache,0,0,0"],
    );
    assert_eq!(lines[0].verdict, Some(Verdict::Unknown), "{lines:?}");
    assert_eq!(lines[0].model, "900 (present)");
    assert!(lines[0].real.contains("no cells"), "{lines:?}");
}

#[test]
fn a_knee_the_generator_stopped_is_no_figure() {
    let rows = RowsFile::parse(Path::new("rows.toml"), ROWS).unwrap();
    let lines = judge_one(
        &rows,
        "1",
        "param_broker.kind,param_broker.useReentrantLockWhenPutMessage,param_broker.sendMessageThreadPoolNums,knee_rate,knee_limited_by",
        &[
            "a,1,in-tree,true,2,1400,valid (lag p99 54943 µs > 50000 µs)",
            "b,1,in-tree,false,2,1400,p99_ms <= 100",
            "c,1,apache,true,2,800,p99_ms <= 100",
            "d,1,apache,false,2,800,p99_ms <= 100",
        ],
    );
    assert_eq!(lines[0].verdict, Some(Verdict::Unknown));
    assert!(lines[0].model.contains("validity"), "{lines:?}");
    assert!(lines[0].real.starts_with("1.00"), "{lines:?}");
}

#[test]
fn a_knee_at_the_search_ceiling_is_no_figure() {
    // The model met the SLO at every probe up to knee.max_rate on both locks: 32000 / 32000 is
    // the ceiling over itself, not a ratio of knees (seen in the 5 December run's row 1).
    let rows = RowsFile::parse(Path::new("rows.toml"), ROWS).unwrap();
    let lines = judge_one(
        &rows,
        "1",
        "param_broker.kind,param_broker.useReentrantLockWhenPutMessage,param_broker.sendMessageThreadPoolNums,knee_rate,knee_limited_by",
        &[
            "a,1,in-tree,true,2,32000,none up to max_rate",
            "b,1,in-tree,false,2,32000,none up to max_rate",
            "c,1,apache,true,2,13454,p99_ms <= 100",
            "d,1,apache,false,2,1682,p99_ms <= 100",
        ],
    );
    assert_eq!(lines[0].verdict, Some(Verdict::Unknown));
    assert!(lines[0].model.contains("ceiling"), "{lines:?}");
    assert!(lines[0].real.starts_with("0.13"), "{lines:?}");
    assert_eq!(
        harness_results::columns::KNEE_ABOVE_MAX,
        "none up to max_rate",
        "the text the runner writes"
    );
}

#[test]
fn a_rate_taken_from_the_highest_knee_is_the_highest_not_the_median() {
    use harness_analysis::fidelity::{broker_values, load_row, Aggregate};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("1");
    // Reentrant knees at 1, 2 and 8 send threads: model 30k / 50k / 40k, Apache 6k / 13k / 14k.
    write(
        &dir,
        "param_broker.kind,param_broker.version,param_broker.useReentrantLockWhenPutMessage,param_broker.sendMessageThreadPoolNums,knee_rate",
        &[
            "a,1,in-tree,5.3.3,true,1,30000",
            "b,1,in-tree,5.3.3,true,2,50000",
            "c,1,in-tree,5.3.3,true,8,40000",
            "d,1,apache,5.3.3,true,1,6000",
            "e,1,apache,5.3.3,true,2,13000",
            "f,1,apache,5.3.3,true,8,14000",
            "g,1,apache,5.3.3,false,8,99000",
        ],
    );
    let data = load_row(&dir).unwrap();
    let cells = [(
        "broker.useReentrantLockWhenPutMessage".to_owned(),
        "true".to_owned(),
    )]
    .into_iter()
    .collect();
    let got = |how| broker_values(&data, "knee_rate", &cells, how, "5.3.3");
    assert_eq!(
        got(Aggregate::Max),
        vec![
            ("apache".to_owned(), "5.3.3".to_owned(), 14000.0),
            ("in-tree".to_owned(), "5.3.3".to_owned(), 50000.0),
        ]
    );
    assert_eq!(
        got(Aggregate::Median),
        vec![
            ("apache".to_owned(), "5.3.3".to_owned(), 13000.0),
            ("in-tree".to_owned(), "5.3.3".to_owned(), 40000.0),
        ]
    );
}
