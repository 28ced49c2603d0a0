//! `harness report` opened in a real browser: headless Chromium from the system packages loads
//! the page from disk, and the test checks that it loaded without console errors, that the
//! expected charts are there, and that every number in its summary table equals summary.csv.
//! The browser checks are tests of their own: without Chromium they are `#[ignore]`d with the
//! install hint (harness/build.rs decides), so the test count shows them as ignored, never as
//! passed; run with `--ignored` they fail with the hint. The file checks run everywhere.
//!
//! The committed runs in tests/data/report/ are real (short) runs: `knee` is
//! profiles/capacity.toml with two cells and 1 s probes, `smoke` is profiles/smoke.toml.

use std::path::{Path, PathBuf};
use std::process::Command;

use harness::html::{write_report, ReportArgs};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/report")
        .join(name)
}

/// The install hint a browser test fails with when it runs without Chromium (`--ignored`).
const NO_CHROMIUM: &str =
    "no chromium: install it (apt-get install chromium) to run the browser checks";

/// The system's Chromium; its absence fails the test that needs it, with the install hint.
fn chromium() -> PathBuf {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{NO_CHROMIUM}"))
}

/// Loads `page` in headless Chromium: (the DOM after scripts ran, console lines).
fn browse(bin: &Path, page: &Path) -> (String, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_owned)
        .collect();
    (String::from_utf8(out.stdout).unwrap(), console)
}

fn report(run: &str, run2: Option<&str>, out: &Path) -> String {
    let path = write_report(&ReportArgs {
        run: data(run),
        run2: run2.map(data),
        out: Some(out.to_owned()),
    })
    .unwrap();
    let html = std::fs::read_to_string(path).unwrap();
    // Self-contained: nothing is fetched (the SVG namespace is a name, not a request).
    let without_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for needle in ["http://", "https://", " src=", "<link", "@import"] {
        assert!(
            !without_ns.contains(needle),
            "the page must not load anything: found `{needle}`"
        );
    }
    html
}

fn count(dom: &str, needle: &str) -> usize {
    dom.matches(needle).count()
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// `(cell_id, repetition, step)` of a table row.
type RowKey = (String, String, String);

/// `(cell_id, repetition, step)` → `column → text` of the summary table in the DOM.
fn dom_table(dom: &str) -> Vec<(RowKey, Vec<(String, String)>)> {
    let attr = |tag: &str, name: &str| -> String {
        let key = format!("{name}=\"");
        let start = tag.find(&key).map(|i| i + key.len()).unwrap_or(0);
        unescape(&tag[start..start + tag[start..].find('"').unwrap_or(0)])
    };
    dom.split("<tr ")
        .skip(1)
        .filter(|row| row.starts_with("data-cell-id"))
        .map(|row| {
            let row = &row[..row.find("</tr>").unwrap()];
            let open = &row[..row.find('>').unwrap()];
            let key = (
                attr(open, "data-cell-id"),
                attr(open, "data-repetition"),
                attr(open, "data-step"),
            );
            let cells = row
                .split("<td data-col=\"")
                .skip(1)
                .map(|c| {
                    let (col, rest) = c.split_once("\">").unwrap();
                    (
                        col.to_owned(),
                        unescape(&rest[..rest.find("</td>").unwrap()]),
                    )
                })
                .collect();
            (key, cells)
        })
        .collect()
}

fn check_table_equals_csv(dom: &str, run: &str) {
    let mut csv = csv::Reader::from_path(data(run).join("summary.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    let table = dom_table(dom);
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    let mine: Vec<_> = table.iter().take(rows.len()).collect();
    assert_eq!(mine.len(), rows.len(), "one table row per summary.csv row");
    let mut compared = 0;
    for rec in &rows {
        let get = |c: &str| {
            rec.get(header.iter().position(|h| h == c).unwrap())
                .unwrap()
                .to_owned()
        };
        let key = (get("cell_id"), get("repetition"), get("step"));
        let (_, cells) = mine
            .iter()
            .find(|(k, _)| *k == key)
            .unwrap_or_else(|| panic!("no table row for {key:?}"));
        for (col, text) in cells {
            assert_eq!(
                *text,
                get(col),
                "{key:?} column {col}: table vs summary.csv"
            );
            compared += 1;
        }
        assert!(cells.iter().any(|(c, _)| c == "p99_ms"), "p99_ms is shown");
    }
    assert!(compared >= rows.len() * 10, "compared {compared} cells");
}

#[test]
fn the_report_of_a_knee_run_has_its_charts() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("knee.html");
    let html = report("knee", None, &page);
    let jobs = 2;
    // The charts are in the file whatever the browser: the matrix, the two knee plots, the
    // spectrum at the knee and one timeline per job.
    for (kind, n) in [
        ("matrix", 1),
        ("knee", 2),
        ("spectrum", 1),
        ("timeline", jobs),
    ] {
        assert_eq!(
            count(&html, &format!("data-chart=\"{kind}\"")),
            n,
            "{kind} charts"
        );
    }
}

#[test]
#[cfg_attr(no_chromium, ignore = "no chromium: apt-get install chromium")]
fn the_report_of_a_knee_run_in_a_browser_has_its_charts_and_the_csvs_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("knee.html");
    report("knee", None, &page);
    let jobs = 2;
    let (dom, console) = browse(&chromium(), &page);
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(
        dom.contains(&format!("data-charts=\"{}\"", 4 + jobs)),
        "the page's script counted every chart"
    );
    assert_eq!(
        count(&dom, "<svg"),
        4 + jobs,
        "every chart is an inline SVG in the DOM"
    );
    assert!(
        dom.contains("SLO: p99_ms &lt;= 50"),
        "the SLO line is labelled"
    );
    check_table_equals_csv(&dom, "knee");
}

#[test]
fn two_runs_side_by_side_with_the_compare_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("two.html");
    let html = report("smoke", Some("smoke"), &page);
    assert_eq!(count(&html, "<section class=\"run\""), 2);
    assert!(html.contains("<table class=\"compare\">"));
    for (kind, n) in [("matrix", 2), ("spectrum", 2), ("timeline", 4), ("knee", 0)] {
        assert_eq!(
            count(&html, &format!("data-chart=\"{kind}\"")),
            n,
            "{kind} charts"
        );
    }
}

#[test]
#[cfg_attr(no_chromium, ignore = "no chromium: apt-get install chromium")]
fn two_runs_side_by_side_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("two.html");
    report("smoke", Some("smoke"), &page);
    let (dom, console) = browse(&chromium(), &page);
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(dom.contains("data-charts=\"8\""));
    // The same run on both sides: every verdict is "no significant change".
    let verdicts = &dom[dom.find("<table class=\"compare\">").unwrap()..];
    let verdicts = &verdicts[..verdicts.find("</table>").unwrap()];
    assert!(verdicts.contains("verdict"), "{verdicts}");
    assert!(
        !verdicts.contains(">worse<") && !verdicts.contains(">better<"),
        "{verdicts}"
    );
    check_table_equals_csv(&dom, "smoke");
}

/// The console check can fail: a page with a script error is caught.
#[test]
#[cfg_attr(no_chromium, ignore = "no chromium: apt-get install chromium")]
fn a_script_error_is_seen_on_the_console() {
    let bin = chromium();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("broken.html");
    std::fs::write(
        &page,
        "<html><body><script>no_such_function();</script></body></html>",
    )
    .unwrap();
    let (_, console) = browse(&bin, &page);
    assert!(
        console
            .iter()
            .any(|l| l.contains("Uncaught ReferenceError")),
        "{console:#?}"
    );
}
