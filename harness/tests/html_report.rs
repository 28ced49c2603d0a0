//! `harness report` opened in a real browser: headless Chromium from the system packages loads
//! the page from disk, and the test checks that it loaded without console errors, that the
//! expected charts are there, and that every number in its summary table equals summary.csv.
//! The browser checks are tests of their own: without Chromium they are `#[ignore]`d with the
//! install hint (harness/build.rs decides), so the test count shows them as ignored, never as
//! passed; run with `--ignored` they fail with the hint. The file checks run everywhere.
//!
//! The committed runs in tests/data/report/ are real (short) runs: `knee` is
//! profiles/capacity.toml with two cells and 1 s probes, `smoke` is profiles/smoke.toml,
//! `consumer` is profiles/slow-consumer.toml cut down to one cell in which the count gate fires:
//! `harness run profiles/slow-consumer.toml --set workload.rate=200 --set workload.duration=10s
//! --set workload.warmup=2s --set consumer.consume_threads=1 --set consumer.processing_time=10ms
//! --set consumer.drain_timeout=30s --set consumer.pull_threshold_for_queue=100` (its CSVs,
//! run.json and latency.hlog kept). `fault` is profiles/durability.toml with one cell
//! (ASYNC_FLUSH, no pool), one repetition, 500 sends/s for 6 s after 1 s of warm-up, `kill =
//! "2s"` with restart and `pause = "4s for 500ms"`. `dlq` is profiles/dlq.toml cut down, a
//! listener failing one message in 10: `harness run profiles/dlq.toml --set workload.duration=8s
//! --set workload.rate=100 --set consumer.max_reconsume_times=3 --set
//! consumer.drain_timeout=30s` (regenerated with the per-second consumer_failures,
//! consumer_retries and consumer_dlq). `ha` is profiles/ha-slave-stall.toml cut down to one
//! cell: `harness run profiles/ha-slave-stall.toml --set broker.slaveTimeout=1000 --set
//! workload.rate=200 --set workload.duration=6s --set workload.warmup=1s`.

mod browser;

use std::path::{Path, PathBuf};

use browser::{browse, chromium};
use harness::html::{write_report, ReportArgs};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/report")
        .join(name)
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

/// Measures the laid-out page at 1,280 px (the window `browse` opens): appended to a copy of
/// the page, it writes into the body's data attributes the charts that draw no data (no
/// coloured line that moves, no dot, no bar) and the tables wider than the page.
const PROBE: &str = r#"<script>
const page = document.documentElement.clientWidth;
const empty = [...document.querySelectorAll('figure.chart')].filter(f => {
  const moving = [...f.querySelectorAll('polyline')].some(l => {
    if ((l.getAttribute('stroke') || '').toUpperCase() === '#000000') return false;
    const ys = new Set(l.getAttribute('points').trim().split(/\s+/).map(p => p.split(',')[1]));
    return ys.size > 1;
  });
  const bars = [...f.querySelectorAll('rect')].some(r => {
    const fill = (r.getAttribute('fill') || '').toUpperCase();
    return fill !== '#FFFFFF' && fill !== '#000000'
      && r.getAttribute('width') * r.getAttribute('height') > 120;
  });
  return !(moving || bars || f.querySelector('circle'));
}).map(f => f.dataset.chart);
const wide = [...document.querySelectorAll('table')]
  .filter(t => t.getBoundingClientRect().right > page + 0.5)
  .map(t => t.className + ':' + Math.round(t.getBoundingClientRect().right));
document.body.dataset.page = page;
document.body.dataset.emptyCharts = empty.join(' ');
document.body.dataset.wideTables = wide.join(' ');
</script>"#;

/// `page` with [`PROBE`] run after the page's own script: the DOM and console lines.
fn browse_probed(bin: &Path, page: &Path) -> (String, Vec<String>) {
    let html = std::fs::read_to_string(page).unwrap();
    let probed = page.with_extension("probed.html");
    std::fs::write(&probed, html.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let (dom, console) = browse(bin, &probed);
    let (_, _, page_px) = probe_findings(&dom);
    // 1,280 px less a scroll bar, if the window draws one.
    assert!(
        (1200..=1280).contains(&page_px),
        "the probe ran at 1,280 px, not {page_px}"
    );
    (dom, console)
}

/// What the probe found: (charts drawing nothing, tables wider than the page, page width).
fn probe_findings(dom: &str) -> (String, String, u32) {
    let attr = |name: &str| {
        let key = format!("{name}=\"");
        dom.find(&key).map_or(String::from("<missing>"), |i| {
            let rest = &dom[i + key.len()..];
            rest[..rest.find('"').unwrap()].to_owned()
        })
    };
    (
        attr("data-empty-charts"),
        attr("data-wide-tables"),
        attr("data-page").parse().unwrap_or(0),
    )
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
    // The charts are in the file whatever the browser: the matrix, the probe ladder, the two
    // knee plots, the spectrum at the knee and one timeline per job.
    for (kind, n) in [
        ("matrix", 1),
        ("ladder", 1),
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
    let (dom, console) = browse_probed(&chromium(), &page);
    assert!(console.is_empty(), "console messages: {console:#?}");
    let (empty, wide, _) = probe_findings(&dom);
    assert_eq!(empty, "", "charts that draw nothing");
    // The capacity table's long reasons wrap instead of running off the page.
    assert_eq!(wide, "", "tables wider than the page at 1,280 px");
    assert!(
        dom.contains(&format!("data-charts=\"{}\"", 5 + jobs)),
        "the page's script counted every chart"
    );
    assert_eq!(
        count(&dom, "<svg"),
        5 + jobs,
        "every chart is an inline SVG in the DOM"
    );
    assert!(
        dom.contains("SLO: p99_ms &lt;= 50"),
        "the SLO line is labelled"
    );
    for title in [
        "knee: highest offered rate meeting the SLO (sends/s) per cell",
        "knee search: offered rate by probe (hollow: failed, named by its first failed term)",
        "knee search: p99 by offered rate",
        "knee search: busy answers (%) by offered rate",
        "latency by percentile, at each cell's knee",
    ] {
        assert!(
            dom.contains(&format!(">\n{title}\n</text>")),
            "no chart titled `{title}`"
        );
    }
    // The ladder names the failed terms, shortened: `valid (lag p99 …)` as `valid`.
    for term in ["busy_rate &lt;= 0.1%", "p99_ms &lt;= 50", "valid"] {
        assert!(
            dom.contains(&format!(">\n{term}\n</text>")),
            "the ladder names `{term}`"
        );
    }
    check_table_equals_csv(&dom, "knee");
}

/// The consumer run's chart kinds, as `(data-chart, count)`: its one story chart per job,
/// the matrix bar, the spectrum, the end-to-end latency and the timeline.
const CONSUMER_CHARTS: [(&str, usize); 6] = [
    ("consumer", 1),
    ("matrix", 1),
    ("spectrum", 1),
    ("series", 1),
    ("timeline", 1),
    ("knee", 0),
];

#[test]
fn the_report_of_a_consumer_run_tells_its_story_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("consumer.html");
    let html = report("consumer", None, &page);
    for (kind, n) in CONSUMER_CHARTS {
        assert_eq!(
            count(&html, &format!("data-chart=\"{kind}\"")),
            n,
            "{kind} charts"
        );
    }
    // The story chart comes first, before the matrix.
    assert!(html.find("data-chart=\"consumer\"") < html.find("data-chart=\"matrix\""));
    // The count gate fired (pullThresholdForQueue 100 × 2 queues): marks and a threshold line;
    // the three quiet gates are one line of text, not three flat charts.
    for needle in [
        "flow control, count gate: ",
        "count threshold 200\n<",
        "no size, span or not-locked flow control in this run",
        "messages behind\n<",
        "cached messages\n<",
        "end-to-end latency p99 (ms)\n<",
        "title=\"columns: e2e_p99_ms\"",
    ] {
        assert!(html.contains(needle), "missing `{needle}`");
    }
    // Axes and titles in words: no raw column name is drawn as chart text.
    for raw in [
        "e2e_p99_ms",
        "consumer_lag",
        "consumer_fc_",
        "p99_ms per cell",
    ] {
        assert!(
            !html
                .split("<text")
                .skip(1)
                .any(|t| t[..t.find("</text>").unwrap()].contains(raw)),
            "`{raw}` drawn as chart text"
        );
    }
}

#[test]
#[cfg_attr(no_chromium, ignore = "no chromium: apt-get install chromium")]
fn the_report_of_a_consumer_run_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("consumer.html");
    report("consumer", None, &page);
    let (dom, console) = browse_probed(&chromium(), &page);
    assert!(console.is_empty(), "console messages: {console:#?}");
    let charts: usize = CONSUMER_CHARTS.iter().map(|c| c.1).sum();
    assert!(dom.contains(&format!("data-charts=\"{charts}\"")));
    for title in [
        "(base): produce vs consume, lag, consumer cache",
        "end-to-end latency p99 (ms)",
        "send latency p99 (ms) per cell",
    ] {
        assert!(
            dom.contains(&format!(">\n{title}\n</text>")),
            "no chart titled `{title}`"
        );
    }
    let (empty, wide, _) = probe_findings(&dom);
    assert_eq!(empty, "", "charts that draw nothing");
    assert_eq!(wide, "", "tables wider than the page at 1,280 px");
    check_table_equals_csv(&dom, "consumer");
}

/// A fault in a run with consumers is marked on every chart over seconds: the consumer
/// story, the cross-cell end-to-end chart and the timeline (the consumer run with a kill
/// written into its fifth second's `event`).
#[test]
fn a_fault_moment_is_marked_on_every_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    for f in ["latency.hlog", "run.json", "summary.csv"] {
        std::fs::copy(data("consumer").join(f), run.join(f)).unwrap();
    }
    let mut r = csv::Reader::from_path(data("consumer").join("timeseries.csv")).unwrap();
    // The committed run predates the column: it is added at the end, where the run puts it.
    let mut header: Vec<String> = r.headers().unwrap().iter().map(str::to_owned).collect();
    let had_event = header.iter().any(|h| h == "event");
    if !had_event {
        header.push("event".into());
    }
    let event = header.iter().position(|h| h == "event").unwrap();
    let mut w = csv::Writer::from_path(run.join("timeseries.csv")).unwrap();
    w.write_record(&header).unwrap();
    for (i, rec) in r.records().enumerate() {
        let mut rec: Vec<String> = rec.unwrap().iter().map(str::to_owned).collect();
        if !had_event {
            rec.push(String::new());
        }
        if i == 4 {
            rec[event] = "kill restart".into();
        }
        w.write_record(&rec).unwrap();
    }
    w.flush().unwrap();
    let page = dir.path().join("marked.html");
    write_report(&ReportArgs {
        run: run.clone(),
        run2: None,
        out: Some(page.clone()),
    })
    .unwrap();
    let html = std::fs::read_to_string(page).unwrap();
    for kind in ["consumer", "series", "timeline"] {
        let fig = &html[html.find(&format!("data-chart=\"{kind}\"")).unwrap()..];
        let fig = &fig[..fig.find("</figure>").unwrap()];
        assert!(
            fig.contains(">\nkill restart\n</text>"),
            "the {kind} chart names the kill"
        );
    }
    assert!(html.contains("title=\"columns: e2e_p99_ms, event\""));
    assert!(html.contains("red lines: kill restart in second 5 of (base)"));
}

/// The probe can fail: a flat line and a table wider than the page are both seen.
#[test]
#[cfg_attr(no_chromium, ignore = "no chromium: apt-get install chromium")]
fn the_probe_sees_an_empty_chart_and_a_wide_table() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<html><body><figure class=\"chart\" data-chart=\"flat\"><svg width=\"200\" height=\"100\">\
         <polyline stroke=\"#FF0000\" points=\"0,50 100,50 200,50 \"/></svg></figure>\
         <table class=\"wide\"><tr><td><div style=\"width:2000px\">x</div></td></tr></table></body></html>",
    )
    .unwrap();
    let (dom, _) = browse_probed(&chromium(), &page);
    let (empty, wide, _) = probe_findings(&dom);
    assert_eq!(empty, "flat");
    assert!(wide.starts_with("wide:"), "{wide}");
}

/// The fault run (profiles/durability.toml cut down, see the module comment): kill + restart
/// in second 3, SIGSTOP in second 5, SIGCONT in second 6.
#[test]
fn the_report_of_a_fault_run_marks_its_moments_and_reconciles() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("fault.html");
    let html = report("fault", None, &page);
    for (kind, n) in [
        ("timeline", 1),
        ("matrix", 1),
        ("spectrum", 1),
        ("consumer", 0),
        ("series", 0),
    ] {
        assert_eq!(
            count(&html, &format!("data-chart=\"{kind}\"")),
            n,
            "{kind} charts"
        );
    }
    // No consumers: no consumer chart and no line about their missing latency either.
    assert!(
        !html.contains("data-empty="),
        "nothing to collapse without consumers"
    );
    let timeline = &html[html.find("data-chart=\"timeline\"").unwrap()..];
    for moment in ["kill restart", "pause", "resume"] {
        assert!(
            timeline.contains(&format!(">\n{moment}\n</text>")),
            "the timeline names `{moment}`"
        );
    }
    assert!(
        timeline.contains(
            "Reconciliation: acknowledged but lost 0 (acked_lost), stored but never acknowledged 0 (phantom), stored twice 0 (duplicates), recovery (ms) 103.0 (recovery_ms)"
        ),
        "the reconciliation figures are under the timeline"
    );
}

#[test]
#[cfg_attr(no_chromium, ignore = "no chromium: apt-get install chromium")]
fn the_report_of_a_fault_run_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("fault.html");
    report("fault", None, &page);
    let (dom, console) = browse_probed(&chromium(), &page);
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(dom.contains("data-charts=\"3\""));
    for title in [
        "acknowledged sends (/s) per cell",
        "latency by percentile, over the measured seconds",
        "flushDiskType=ASYNC_FLUSH,transientStorePoolEnable=false",
    ] {
        assert!(
            dom.contains(&format!(">\n{title}\n</text>")),
            "no chart titled `{title}`"
        );
    }
    // The timeline draws its fault moments.
    for moment in ["kill restart", "pause", "resume"] {
        assert!(dom.contains(&format!(">\n{moment}\n</text>")), "{moment}");
    }
    let (empty, wide, _) = probe_findings(&dom);
    assert_eq!(empty, "", "charts that draw nothing");
    assert_eq!(wide, "", "tables wider than the page at 1,280 px");
    check_table_equals_csv(&dom, "fault");
}

/// A matrix run (smoke: two cells, producers only).
#[test]
#[cfg_attr(no_chromium, ignore = "no chromium: apt-get install chromium")]
fn the_report_of_a_matrix_run_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("smoke.html");
    let html = report("smoke", None, &page);
    assert_eq!(count(&html, "data-chart=\"timeline\""), 2, "one per cell");
    let (dom, console) = browse_probed(&chromium(), &page);
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(dom.contains("data-charts=\"4\""));
    for title in [
        "busy answers (share of sends) per cell",
        "latency by percentile, over the measured seconds",
    ] {
        assert!(
            dom.contains(&format!(">\n{title}\n</text>")),
            "no chart titled `{title}`"
        );
    }
    let (empty, wide, _) = probe_findings(&dom);
    assert_eq!(empty, "", "charts that draw nothing");
    assert_eq!(wide, "", "tables wider than the page at 1,280 px");
    check_table_equals_csv(&dom, "smoke");
}

/// Consumer and fault runs side by side: each cell once with both runs overlaid and its
/// verdicts beside it (the consumer and fault figures among them), then each run's own charts.
#[test]
fn two_consumer_or_fault_runs_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let html = report("consumer", Some("dlq"), &dir.path().join("c.html"));
    assert!(html.contains("<table class=\"compare\">"));
    assert_eq!(count(&html, "data-chart=\"overlay\""), 1);
    assert_eq!(count(&html, "data-chart=\"consumer\""), 2);
    let overlay = &html[html.find("data-chart=\"overlay\"").unwrap()..];
    let overlay = &overlay[..overlay.find("</figure>").unwrap()];
    for needle in [
        ">\n(base): A against B, consumers\n</text>",
        ">\nA consumed (messages/s)\n</text>",
        ">\nB messages behind\n</text>",
        ">\nB cached in the consumers (messages)\n</text>",
    ] {
        assert!(overlay.contains(needle), "the overlay lacks `{needle}`");
    }
    // The cell's verdicts, next to the chart, include the consumers' and the DLQ's.
    let verdicts = &html[html.find("<table class=\"verdicts\">").unwrap()..];
    let verdicts = &verdicts[..verdicts.find("</table>").unwrap()];
    for metric in ["p99_ms", "consume_rate", "consumer_lag_max", "consumer_dlq"] {
        assert!(
            verdicts.contains(&format!("data-metric=\"{metric}\"")),
            "no verdict on {metric}: {verdicts}"
        );
    }
    // B's listener failed: its figures join its consumer picture; A's did not.
    assert_eq!(
        count(
            &html,
            "Failures: listener failures 360 (consumer_failures), redelivered from the retry topic 270 (consumer_retries), sent to the DLQ 90 (consumer_dlq)"
        ),
        1
    );

    let html = report("fault", Some("fault"), &dir.path().join("f.html"));
    assert!(html.contains("<table class=\"compare\">"));
    assert_eq!(count(&html, "data-chart=\"overlay\""), 1);
    assert_eq!(count(&html, ">\nkill restart\n</text>"), 2);
    assert_eq!(count(&html, "Reconciliation: "), 2);
    for moment in [
        "A: kill restart",
        "B: kill restart",
        "A: pause",
        "B: resume",
    ] {
        assert_eq!(
            count(&html, &format!(">\n{moment}\n</text>")),
            1,
            "{moment}"
        );
    }
    assert!(html.contains(
        "Reconciliation, A | B: acknowledged but lost 0 | 0 (acked_lost), stored but never acknowledged 0 | 0 (phantom), stored twice 0 | 0 (duplicates), recovery (ms) 103.0 | 103.0 (recovery_ms)"
    ));
    assert!(html.contains("data-metric=\"recovery_ms\""));
}

/// The side-by-side pages of a consumer pair and a fault pair, laid out at 1,280 px.
#[test]
#[cfg_attr(no_chromium, ignore = "no chromium: apt-get install chromium")]
fn two_consumer_or_fault_runs_side_by_side_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    for (a, b, title, charts) in [
        (
            "consumer",
            "dlq",
            "(base): A against B, consumers",
            1 + 2 * 5,
        ),
        (
            "fault",
            "fault",
            "flushDiskType=ASYNC_FLUSH,transientStorePoolEnable=false: A against B, producers",
            1 + 2 * 3,
        ),
    ] {
        let page = dir.path().join(format!("{a}-{b}.html"));
        report(a, Some(b), &page);
        let (dom, console) = browse_probed(&chromium(), &page);
        assert!(
            console.is_empty(),
            "{a} vs {b}: console messages: {console:#?}"
        );
        assert!(
            dom.contains(&format!("data-charts=\"{charts}\"")),
            "{a} vs {b}: {charts} charts"
        );
        assert!(
            dom.contains(&format!(">\n{title}\n</text>")),
            "{a} vs {b}: no chart titled `{title}`"
        );
        let (empty, wide, _) = probe_findings(&dom);
        assert_eq!(empty, "", "{a} vs {b}: charts that draw nothing");
        assert_eq!(
            wide, "",
            "{a} vs {b}: tables wider than the page at 1,280 px"
        );
    }
}

/// Two knee runs: a verdict per probe and metric is too many to stand beside a chart, so each
/// cell lists only its better and worse ones and the whole table is folded above.
#[test]
fn two_knee_runs_fold_their_verdicts_by_step() {
    let dir = tempfile::tempdir().unwrap();
    let html = report("knee", Some("knee"), &dir.path().join("k.html"));
    assert_eq!(count(&html, "data-chart=\"overlay\""), 2);
    assert!(html.contains("<details><summary>every verdict: "), "folded");
    // The same run on both sides: nothing better or worse, every verdict counted.
    assert_eq!(count(&html, "<tr data-metric="), 0);
    assert_eq!(
        count(&html, " more verdicts by step, none better or worse"),
        2
    );
    assert!(html.contains(
        ">\nsendMessageThreadPoolNums=2,useReentrantLockWhenPutMessage=true: A against B, producers\n</text>"
    ));
}

#[test]
fn two_runs_side_by_side_with_the_compare_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("two.html");
    let html = report("smoke", Some("smoke"), &page);
    assert_eq!(count(&html, "<section class=\"run\""), 2);
    assert!(html.contains("<table class=\"compare\">"));
    // A short table stays open above the overlays.
    assert!(html.contains("<details open><summary>every verdict: "));
    for (kind, n) in [
        ("matrix", 2),
        ("spectrum", 2),
        ("timeline", 4),
        ("knee", 0),
        ("overlay", 2),
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
fn two_runs_side_by_side_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("two.html");
    report("smoke", Some("smoke"), &page);
    let (dom, console) = browse_probed(&chromium(), &page);
    assert!(console.is_empty(), "console messages: {console:#?}");
    // Each run's four, and one overlay per cell.
    assert!(dom.contains("data-charts=\"10\""));
    let (empty, wide, _) = probe_findings(&dom);
    assert_eq!(empty, "", "charts that draw nothing");
    assert_eq!(wide, "", "tables wider than the page at 1,280 px");
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

/// A failing listener's seconds (the `dlq` run): its failures, redeliveries and DLQ sends are
/// series on the consumer picture's time axis, each named in words with its total.
#[test]
fn the_consumer_picture_draws_failures_retries_and_dlq_per_second() {
    let dir = tempfile::tempdir().unwrap();
    let html = report("dlq", None, &dir.path().join("dlq.html"));
    for needle in [
        ">\nlistener failures / s\n</text>",
        ">\nredelivered (reconsumeTimes &gt; 0) / s\n</text>",
        ">\nsent to the DLQ / s\n</text>",
        "title=\"columns: ok, consumed, consumer_failures, consumer_retries, consumer_dlq,",
    ] {
        assert!(html.contains(needle), "missing `{needle}`");
    }
    assert!(!html.contains("no listener failures"));
    // A healthy listener in a run with the columns: one line instead of three flat series.
    let healthy = dir.path().join("healthy");
    std::fs::create_dir(&healthy).unwrap();
    for f in ["run.json", "summary.csv", "latency.hlog", "timeseries.csv"] {
        let text = std::fs::read(data("dlq").join(f)).unwrap();
        std::fs::write(healthy.join(f), text).unwrap();
    }
    let series = std::fs::read_to_string(healthy.join("timeseries.csv")).unwrap();
    let mut lines = series.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let zero: Vec<usize> = ["consumer_failures", "consumer_retries", "consumer_dlq"]
        .iter()
        .map(|c| header.iter().position(|h| h == c).unwrap())
        .collect();
    let mut out = vec![header.join(",")];
    for l in lines {
        let mut cells: Vec<&str> = l.split(',').collect();
        for i in &zero {
            cells[*i] = "0";
        }
        out.push(cells.join(","));
    }
    std::fs::write(healthy.join("timeseries.csv"), out.join("\n") + "\n").unwrap();
    let path = write_report(&ReportArgs {
        run: healthy,
        run2: None,
        out: Some(dir.path().join("healthy.html")),
    })
    .unwrap();
    let html = std::fs::read_to_string(path).unwrap();
    assert!(html.contains("no listener failures, redeliveries or DLQ sends in this run"));
    assert!(!html.contains("listener failures / s"));
}

/// An HA pair's cell (`ha`: profiles/ha-slave-stall.toml cut down, see the top) gets its
/// replication picture under its timeline: lag, slave wait p99 and the 12s, in words.
#[test]
fn an_ha_cell_draws_its_replication_series() {
    let dir = tempfile::tempdir().unwrap();
    let html = report("ha", None, &dir.path().join("ha.html"));
    assert_eq!(count(&html, "data-chart=\"replication\""), 1);
    assert!(html.find("data-chart=\"timeline\"") < html.find("data-chart=\"replication\""));
    for needle in [
        ">\n(base): replication\n</text>",
        ">\nlag (KiB)\n</text>",
        ">\nslave wait p99 (ms)\n</text>",
        ">\nFLUSH_SLAVE_TIMEOUT (12) answers / s\n</text>",
        "FLUSH_SLAVE_TIMEOUT (12) answers / s: 101 in all, the first in second 5",
    ] {
        assert!(html.contains(needle), "missing `{needle}`");
    }
    // The slave answered every put in time: no 11 series is drawn.
    assert!(!html.contains("SLAVE_NOT_AVAILABLE (11) answers / s\n"));
    // A run without a pair has no replication picture at all.
    let html = report("dlq", None, &dir.path().join("dlq.html"));
    assert!(!html.contains("data-chart=\"replication\""));
    assert!(!html.contains("data-empty=\"replication\""));
}

/// The failing listener's and the HA pair's pages in a browser: the expected charts, no chart
/// that draws nothing.
#[test]
#[cfg_attr(no_chromium, ignore = "no chromium: apt-get install chromium")]
fn the_failure_and_replication_pictures_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    for (run, titles) in [
        (
            "dlq",
            &["(base): produce vs consume, lag, consumer cache"][..],
        ),
        ("ha", &["(base)", "(base): replication"][..]),
    ] {
        let page = dir.path().join(format!("{run}.html"));
        report(run, None, &page);
        let (dom, console) = browse_probed(&chromium(), &page);
        assert!(console.is_empty(), "{run}: console messages: {console:#?}");
        for title in titles {
            assert!(
                dom.contains(&format!(">\n{title}\n</text>")),
                "{run}: no chart titled `{title}`"
            );
        }
        let (empty, wide, _) = probe_findings(&dom);
        assert_eq!(empty, "", "{run}: charts that draw nothing");
        assert_eq!(wide, "", "{run}: tables wider than the page at 1,280 px");
        check_table_equals_csv(&dom, run);
    }
}
