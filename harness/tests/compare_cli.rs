//! `harness compare` and `harness gate` through the binary, on the fixtures in
//! tests/data/compare (regenerate them with `python3 gen.py` there). Output formats are
//! pinned by golden files; refresh them with `UPDATE_GOLDEN=1 cargo test -p harness --test compare_cli`.

use std::path::Path;
use std::process::Command;

const D: &str = "tests/data/compare";

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn harness(args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run harness");
    Out {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn fixture(name: &str) -> String {
    format!("{D}/{name}")
}

fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(D)
        .join("golden")
        .join(name);
    // UPDATE_GOLDEN=1 rewrites a file that differs and still fails, so that a run with it set
    // never passes a changed output in silence: review `git diff`, then run again without it.
    if std::env::var_os("UPDATE_GOLDEN").is_some()
        && std::fs::read_to_string(&path).ok().as_deref() != Some(actual)
    {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        panic!(
            "{} rewritten (UPDATE_GOLDEN): review the diff, then run without UPDATE_GOLDEN",
            path.display()
        );
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
    assert!(
        expected == actual,
        "{} differs (UPDATE_GOLDEN=1 to accept):\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}

fn rules_file(dir: &tempfile::TempDir, text: &str) -> String {
    let p = dir.path().join("rules.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

// ---------------------------------------------------------------- compare: formats

#[test]
fn compare_table() {
    let o = harness(&["compare", &fixture("base"), &fixture("cand-worse")]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    golden("base-vs-worse.txt", &o.stdout);
    // Spot checks that do not depend on the golden file.
    assert!(o
        .stdout
        .contains("== sendMessageThreadPoolNums=4,useReentrantLockWhenPutMessage=true"));
    let p99 = o.stdout.lines().find(|l| l.starts_with("p99_ms ")).unwrap();
    assert!(p99.contains("worse") && p99.contains("U-test"), "{p99}");
}

#[test]
fn compare_markdown_single_repetition() {
    let o = harness(&[
        "compare",
        &fixture("smoke-base"),
        &fixture("smoke-slower"),
        "--format",
        "markdown",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    golden("smoke-vs-slower.md", &o.stdout);
    assert!(o
        .stdout
        .contains("| cell | metric | base | candidate | change | verdict | evidence |"));
    assert!(o.stdout.contains("| p99_ms |") && o.stdout.contains("**worse**"));
    assert!(o.stdout.contains("block bootstrap 95% CI"));
}

#[test]
fn compare_csv() {
    let o = harness(&[
        "compare",
        &fixture("base3"),
        &fixture("cand3-worse"),
        "--format",
        "csv",
        "--metric",
        "p99_ms,busy_rate",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    golden("base3-vs-worse.csv", &o.stdout);
    let mut rdr = csv::Reader::from_reader(o.stdout.as_bytes());
    let headers = rdr.headers().unwrap().clone();
    let verdict = headers.iter().position(|h| h == "verdict").unwrap();
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 8, "4 cells x 2 metrics");
    // 3 vs 3 repetitions and no timeseries: a 30% p99 rise cannot be decided.
    assert!(rows
        .iter()
        .filter(|r| &r[1] == "p99_ms")
        .all(|r| &r[verdict] == "inconclusive"));
}

#[test]
fn compare_json() {
    let o = harness(&[
        "compare",
        &fixture("smoke-base"),
        &fixture("smoke-broken"),
        "--format",
        "json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    golden("smoke-vs-broken.json", &o.stdout);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    // JSON holds every row, including metrics that are 0 on both sides.
    assert_eq!(rows.len(), 2 * 14);
    let busy = rows
        .iter()
        .find(|r| r["cell"] == "waitTimeMillsInSendQueue=3000" && r["metric"] == "busy_rate")
        .unwrap();
    assert_eq!(busy["new_from_zero"], true);
    // Busy answers in one second out of 20 are not a significant change of the *rate*
    // (the absolute rule `busy == 0` is what catches them, see gate_exit_1_...).
    assert_eq!(busy["verdict"], "no-change");
    assert!(busy["ci_low"].as_f64().unwrap() <= 0.0);
    let p99 = rows
        .iter()
        .find(|r| r["cell"] == "waitTimeMillsInSendQueue=200" && r["metric"] == "p99_ms")
        .unwrap();
    assert_eq!(p99["method"], "block-bootstrap");
    assert_eq!(v["threshold_pct"], 5.0);
}

#[test]
fn compare_within_run_against_reference() {
    let o = harness(&[
        "compare",
        &fixture("base"),
        "--reference",
        "param_broker.useReentrantLockWhenPutMessage=false",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    golden("base-reference-lock-false.txt", &o.stdout);
    // Two candidate cells (lock=true x threads 1,4), each against its lock=false twin.
    assert_eq!(o.stdout.matches("\n== ").count(), 2);
    assert!(o.stdout.contains("busy_rate") && o.stdout.contains("new"));
}

#[test]
fn compare_all_shows_zero_rows_and_unmatched_cells_are_listed() {
    let hidden = harness(&["compare", &fixture("base"), &fixture("cand-same")]);
    let all = harness(&["compare", &fixture("base"), &fixture("cand-same"), "--all"]);
    assert!(hidden.stdout.contains("rows with 0 on both sides hidden"));
    assert!(all.stdout.lines().count() > hidden.stdout.lines().count());
    assert!(all.stdout.contains("busy_overload_rate"));
    let o = harness(&["compare", &fixture("base"), &fixture("cand-invalid")]);
    assert!(o
        .stdout
        .contains("rows with valid=false are included (0 in base, 1 in candidate)"));
    let o = harness(&["compare", &fixture("base"), &fixture("smoke-base")]);
    assert_eq!(o.code, 0);
    assert!(o.stdout.contains("no matched cells"));
    assert!(o.stdout.contains("cells only in base:"));
    assert!(o
        .stdout
        .contains("cells only in candidate: waitTimeMillsInSendQueue=200"));
}

#[test]
fn compare_reads_columns_by_name() {
    // Same data with the columns reversed and an extra text column: identical result.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(D)
            .join("base/summary.csv"),
    )
    .unwrap();
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let mut w = csv::Writer::from_path(dir.path().join("summary.csv")).unwrap();
    let mut h: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    h.reverse();
    h.push("comment".into());
    w.write_record(&h).unwrap();
    for r in rdr.records() {
        let mut r: Vec<String> = r.unwrap().iter().map(String::from).collect();
        r.reverse();
        r.push("hello, world".into());
        w.write_record(&r).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let o = harness(&[
        "compare",
        &fixture("base"),
        dir.path().to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4 * 14);
    assert!(rows
        .iter()
        .all(|r| r["verdict"] == "no-change" && r["change_pct"] == 0.0));
    assert!(v["unmatched_base"].as_array().unwrap().is_empty());
}

#[test]
fn compare_input_errors_name_file_line_and_fix() {
    let o = harness(&["compare", &fixture("bad-number"), &fixture("base")]);
    assert_ne!(o.code, 0);
    assert!(
        o.stderr
            .contains("bad-number/summary.csv: line 4: column `p99_ms`: `12ms` is not a number"),
        "{}",
        o.stderr
    );
    let o = harness(&["compare", &fixture("missing-column"), &fixture("base")]);
    assert_ne!(o.code, 0);
    assert!(
        o.stderr.contains("missing column `repetition`"),
        "{}",
        o.stderr
    );
    let o = harness(&["compare", &fixture("nope"), &fixture("base")]);
    assert_ne!(o.code, 0);
    assert!(
        o.stderr.contains("compare/nope: no such file or folder"),
        "{}",
        o.stderr
    );
    let o = harness(&[
        "compare",
        &fixture("base"),
        "--reference",
        "broker.flushDiskType=SYNC_FLUSH",
    ]);
    assert!(
        o.stderr.contains("no column `param_broker.flushDiskType`"),
        "{}",
        o.stderr
    );
    let o = harness(&[
        "compare",
        &fixture("base"),
        "--reference",
        "broker.useReentrantLockWhenPutMessage=maybe",
    ]);
    assert!(
        o.stderr.contains("values present: false, true"),
        "{}",
        o.stderr
    );
    let o = harness(&[
        "compare",
        &fixture("base"),
        &fixture("base"),
        "--metric",
        "p42_ms",
    ]);
    assert!(
        o.stderr.contains("--metric p42_ms: no such column"),
        "{}",
        o.stderr
    );
    let o = harness(&["compare", &fixture("base")]);
    assert!(o.stderr.contains("nothing to compare"), "{}", o.stderr);
}

// ---------------------------------------------------------------- gate: exit codes

#[test]
fn gate_smoke_rules_pass_on_noise() {
    for cand in ["smoke-same", "smoke-slower"] {
        let o = harness(&[
            "gate",
            "--baseline",
            &fixture("smoke-base"),
            "--candidate",
            &fixture(cand),
            "--rules",
            &fixture("smoke-rules.toml"),
        ]);
        assert_eq!(o.code, 0, "{cand}: {}{}", o.stdout, o.stderr);
        assert_eq!(
            o.stdout.trim(),
            "gate: PASS (18 checks: 0 failed, 0 inconclusive, 0 invalid) -> exit 0"
        );
    }
}

#[test]
fn gate_exit_1_one_line_per_failed_rule() {
    let o = harness(&[
        "gate",
        "--baseline",
        &fixture("smoke-base"),
        "--candidate",
        &fixture("smoke-broken"),
        "--rules",
        &fixture("smoke-rules.toml"),
    ]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", o.stdout);
    assert_eq!(
        lines[0],
        "FAIL         rule `busy == 0`  cell waitTimeMillsInSendQueue=3000  left vs right: rep 1: 3 vs 0  -> violated in 1/1 repetitions"
    );
    assert!(lines[1].starts_with("gate: FAIL (18 checks: 1 failed"));

    // A relative rule on repetitions: a 20-30% p99 rise in every cell.
    let dir = tempfile::tempdir().unwrap();
    let rules = rules_file(
        &dir,
        "[gate]\nrules = [\"p99_ms: regression <= 10%\", \"busy_rate < 0.01\"]\n",
    );
    let o = harness(&[
        "gate",
        "--baseline",
        &fixture("base"),
        "--candidate",
        &fixture("cand-worse"),
        "--rules",
        &rules,
    ]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    let fails: Vec<&str> = o.stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(fails.len(), 4, "{}", o.stdout);
    assert!(fails
        .iter()
        .all(|l| l.contains("significant regression beyond 10%") && l.contains("U-test p=")));
    // Without --rules, every default metric is held to the noise threshold.
    let o = harness(&[
        "gate",
        "--baseline",
        &fixture("base"),
        "--candidate",
        &fixture("cand-worse"),
    ]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(o.stdout.contains("rule `busy_rate: regression <= 5%`"));
}

#[test]
fn gate_exit_2_when_too_few_repetitions_to_decide() {
    let dir = tempfile::tempdir().unwrap();
    let rules = rules_file(
        &dir,
        "rules = [\"p99_ms: regression <= 10%\", \"valid == true\"]\n",
    );
    let o = harness(&[
        "gate",
        "--baseline",
        &fixture("base3"),
        "--candidate",
        &fixture("cand3-worse"),
        "--rules",
        &rules,
    ]);
    assert_eq!(o.code, 2, "{}", o.stdout);
    let lines: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("INCONCLUSIVE"))
        .collect();
    assert_eq!(lines.len(), 4);
    assert!(
        lines[0].contains("cannot decide: 3 vs 3 repetitions cannot reach p<0.05"),
        "{}",
        lines[0]
    );
    // A change within the limit needs no test at all: pass.
    let rules = rules_file(&dir, "rules = [\"p99_ms: regression <= 50%\"]\n");
    let o = harness(&[
        "gate",
        "--baseline",
        &fixture("base3"),
        "--candidate",
        &fixture("cand3-worse"),
        "--rules",
        &rules,
    ]);
    assert_eq!(o.code, 0, "{}", o.stdout);
    // An absolute rule on an unknown (empty) value is inconclusive too.
    let rules = rules_file(&dir, "rules = [\"period_in_queue_max_ms < 1000\"]\n");
    let o = harness(&[
        "gate",
        "--candidate",
        &fixture("smoke-base"),
        "--rules",
        &rules,
    ]);
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(o.stdout.contains("a value is unknown"));
}

#[test]
fn gate_exit_3_on_invalid_run_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let rules = rules_file(&dir, "rules = [\"sent == ok + busy + timeouts\"]\n");
    let o = harness(&[
        "gate",
        "--candidate",
        &fixture("cand-invalid"),
        "--rules",
        &rules,
    ]);
    assert_eq!(o.code, 3, "{}", o.stdout);
    let invalid: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("INVALID"))
        .collect();
    assert_eq!(invalid.len(), 1);
    assert!(
        invalid[0].contains("rep 2  valid=false (harness_cpu_max 97% > 90%)"),
        "{}",
        invalid[0]
    );
    for allow in [
        "allow_invalid = true",
        "allow_invalid = [{ \"param_broker.sendMessageThreadPoolNums\" = 4, \"broker.useReentrantLockWhenPutMessage\" = false }]",
    ] {
        let rules = rules_file(&dir, &format!("{allow}\nrules = [\"sent == ok + busy + timeouts\"]\n"));
        let o = harness(&["gate", "--candidate", &fixture("cand-invalid"), "--rules", &rules]);
        assert_eq!(o.code, 0, "{allow}: {}", o.stdout);
    }
    // Allowing a different cell does not help.
    let rules = rules_file(
        &dir,
        "allow_invalid = [{ \"broker.sendMessageThreadPoolNums\" = 1 }]\nrules = []\n",
    );
    let o = harness(&[
        "gate",
        "--candidate",
        &fixture("cand-invalid"),
        "--rules",
        &rules,
    ]);
    assert_eq!(o.code, 3);
}

#[test]
fn gate_exit_3_on_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let ok_rules = rules_file(&dir, "rules = [\"busy >= 0\"]\n");
    // Unreadable or malformed result.
    let o = harness(&[
        "gate",
        "--candidate",
        &fixture("bad-number"),
        "--rules",
        &ok_rules,
    ]);
    assert_eq!(o.code, 3);
    assert!(
        o.stderr.contains("gate: invalid input:") && o.stderr.contains("line 4"),
        "{}",
        o.stderr
    );
    let o = harness(&[
        "gate",
        "--baseline",
        &fixture("missing-column"),
        "--candidate",
        &fixture("base"),
        "--rules",
        &ok_rules,
    ]);
    assert_eq!(o.code, 3);
    assert!(
        o.stderr.contains("missing column `repetition`"),
        "{}",
        o.stderr
    );
    let o = harness(&[
        "gate",
        "--candidate",
        &fixture("base"),
        "--rules",
        &fixture("no-such-rules.toml"),
    ]);
    assert_eq!(o.code, 3);
    assert!(o.stderr.contains("cannot read rules file"), "{}", o.stderr);
    // Rules that do not parse, or do not fit the run.
    let cases = [
        (
            "rules = [\"p99_ms <<< 5\"]",
            "stderr",
            "rule `p99_ms <<< 5`",
        ),
        (
            "[gate]\nthreshhold = 5",
            "stderr",
            "unknown field `threshhold`",
        ),
        ("[load]\nrate = 1", "stderr", "no [gate] table"),
        ("rules = [\"p42_ms < 5\"]", "stdout", "no column `p42_ms`"),
        (
            "rules = [\"p99_ms: regression <= 5%\"]",
            "stdout",
            "relative rule needs --baseline",
        ),
        (
            "[[rule]]\nexpr = \"busy > 0\"\nwhere = { \"broker.waitTimeMillsInSendQueue\" = 200 }",
            "stdout",
            "where: no parameter `broker.waitTimeMillsInSendQueue`",
        ),
        (
            "[[rule]]\nexpr = \"busy > 0\"\nwhere = { \"broker.sendMessageThreadPoolNums\" = 64 }",
            "stdout",
            "matches no cell of the candidate",
        ),
        (
            "rules = [\"busy <= at(busy, broker.sendMessageThreadPoolNums = 64)\"]",
            "stdout",
            "at(): no cell with broker.sendMessageThreadPoolNums=64",
        ),
    ];
    for (text, stream, needle) in cases {
        let rules = rules_file(&dir, text);
        let o = harness(&["gate", "--candidate", &fixture("base"), "--rules", &rules]);
        assert_eq!(o.code, 3, "{text}: {}{}", o.stdout, o.stderr);
        let s = if stream == "stderr" {
            &o.stderr
        } else {
            &o.stdout
        };
        assert!(
            s.contains(needle),
            "{text}: expected `{needle}` in {stream}:\n{s}"
        );
    }
}

#[test]
fn gate_same_run_ratios_and_profile_gate_table() {
    let dir = tempfile::tempdir().unwrap();
    // A profile with other tables: only [gate] is read.
    let profile = r#"
[broker]
flushDiskType = "ASYNC_FLUSH"

[matrix]
"broker.useReentrantLockWhenPutMessage" = [false, true]

[gate]
rules = ["valid == true"]

[[gate.rule]]
# spin lock vs reentrant lock in the same run: at most 30% more p99, and busy only with the spin lock
expr = "p99_ms <= 1.3 * at(p99_ms, broker.useReentrantLockWhenPutMessage = false)"
where = { "param_broker.useReentrantLockWhenPutMessage" = "true" }

[[gate.rule]]
expr = "busy_rate > 10 * at(busy_rate, broker.useReentrantLockWhenPutMessage = false)"
where = { "broker.useReentrantLockWhenPutMessage" = true }
"#;
    let rules = rules_file(&dir, profile);
    let o = harness(&[
        "gate",
        "--candidate",
        &fixture("base"),
        "--rules",
        &rules,
        "-v",
    ]);
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert_eq!(
        o.stdout.lines().filter(|l| l.starts_with("PASS")).count(),
        4 + 2 + 2
    );
    // The same rule with a tight factor fails in at least one repetition of some cell.
    let rules = rules_file(
        &dir,
        "[[gate.rule]]\nexpr = \"p99_ms <= 0.9 * at(p99_ms, broker.useReentrantLockWhenPutMessage = false)\"\nwhere = { \"broker.useReentrantLockWhenPutMessage\" = true }\n",
    );
    let o = harness(&["gate", "--candidate", &fixture("base"), "--rules", &rules]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(o.stdout.lines().next().unwrap().contains("repetitions"));
}
