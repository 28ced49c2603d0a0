//! The HTML page: a small template around the charts and tables of one or two runs.

use std::fmt::Write as _;

use super::charts::{self, KneePlot, Second, Timeline};
use super::consumer::{self as consumer_chart, ConsumerPlot};
use super::error::ReportError;
use super::events::{event_text, events, RECONCILIATION};
use super::ladder::{self, Rung};
use super::marks::Mark;
use super::overlay;
use super::replication::{self, Picture};
use super::tables::{capacity_table, csv_table, esc, summary_table};
use super::view::{Job, RunView};
use super::words::words;
use crate::compare::Comparison;

/// Per-second columns charted across jobs, one line per job, once a run has them (the
/// consumer's own seconds are in its per-job chart).
const EXTRA_SERIES: &[&str] = &["e2e_p99_ms"];

/// A verdict table longer than this is folded when the overlays show each cell's verdicts.
const FOLD_VERDICTS: usize = 40;

/// A put lock held this long is a stall worth marking on the timeline (`page_cache_lock_ms`:
/// the second's longest hold where the broker counts it, `storePutLockMaxHoldMillis`).
const STALL_LOCK_MS: f64 = 100.0;

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}\
h1{font-size:1.4em}h2{font-size:1.2em;border-bottom:1px solid #ccc}h3{font-size:1em}\
.runs{display:grid;gap:1.5em;grid-template-columns:minmax(0,1fr)}\
figure{margin:.5em 0}svg{max-width:100%;height:auto}\
div.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:11px;margin:.5em 0;white-space:nowrap}\
td,th{border:1px solid #ddd;padding:2px 4px;text-align:right}td:first-child,th:first-child{text-align:left}\
th{white-space:normal}td.cell{white-space:normal;min-width:8em;overflow-wrap:anywhere}td[data-col=slo_failed],td[data-col=knee_limited_by],td[data-col=invalid_reason]{white-space:normal;text-align:left;min-width:7em;max-width:24em;overflow-wrap:anywhere}\
.note{color:#555;font-size:13px}\
.pair{display:grid;gap:1em;grid-template-columns:minmax(0,2fr) minmax(0,1fr);align-items:start}\
table.verdicts td:first-child{white-space:normal;overflow-wrap:anywhere}\
table.compare td[data-col=note],table.compare td[data-col=cell]{white-space:normal;text-align:left;min-width:10em;max-width:22em}";

/// The script only counts the charts (the browser test reads it back).
const SCRIPT: &str =
    "document.body.dataset.charts = document.querySelectorAll('figure.chart svg').length;";

/// The whole page for one run, or two runs side by side with `compare`'s verdicts (the model
/// and its CSV).
pub fn render(
    runs: &[RunView],
    compare: Option<(&Comparison, &str)>,
) -> Result<String, ReportError> {
    let title = runs
        .iter()
        .map(|r| {
            r.dir
                .file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned())
        })
        .collect::<Vec<_>>()
        .join(" vs ");
    let mut h = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head>\n<body>\n<h1>harness report: {t}</h1>\n",
        t = esc(&title)
    );
    if let Some((c, csv)) = compare {
        let overlays = match runs {
            [a, b] => overlay::section(a, b, c)?,
            _ => String::new(),
        };
        h.push_str("<h2>compare: verdicts</h2>\n");
        // Beside the overlays, each cell's verdicts stand next to its chart: a long table (a
        // stepped or wide matrix) is folded, so that the charts are not pages down.
        let fold = !overlays.is_empty() && c.rows.len() > FOLD_VERDICTS;
        let _ = write!(
            h,
            "<details{}><summary>every verdict: {} rows (harness compare --format csv)</summary>\n{}</details>\n",
            if fold { "" } else { " open" },
            c.rows.len(),
            csv_table(csv, "compare")
        );
        h.push_str(&overlays);
    }
    // Two runs are side by side in the overlays above; their own sections follow one under
    // the other, at full width, so that every table fits the page.
    let _ = writeln!(
        h,
        "<div class=\"runs{}\">",
        if runs.len() > 1 { " two" } else { "" }
    );
    for (i, run) in runs.iter().enumerate() {
        h.push_str(&run_section(run, i)?);
    }
    let _ = write!(h, "</div>\n<script>{SCRIPT}</script>\n</body></html>\n");
    Ok(h)
}

/// A chart in its figure; `columns` (the CSV columns drawn) are the figure's tooltip.
fn figure(
    kind: &str,
    run: usize,
    job: Option<&Job>,
    (svg, columns): (&str, &str),
    caption: &str,
) -> String {
    let job = job.map_or(String::new(), |j| {
        format!(" data-job=\"{}/r{}\"", esc(&j.0), esc(&j.1))
    });
    format!(
        "<figure class=\"chart\" data-chart=\"{kind}\" data-run=\"{run}\"{job} title=\"columns: {}\">{svg}<figcaption class=\"note\">{}</figcaption></figure>\n",
        esc(columns),
        esc(caption)
    )
}

/// The one line that stands for a chart with nothing to show.
fn empty(kind: &str, run: usize, columns: &str, text: &str) -> String {
    format!(
        "<p class=\"empty note\" data-empty=\"{kind}\" data-run=\"{run}\" title=\"columns: {}\">{}</p>\n",
        esc(columns),
        esc(text)
    )
}

/// "a, b or c".
fn or_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

fn run_section(run: &RunView, idx: usize) -> Result<String, ReportError> {
    let mut h = format!(
        "<section class=\"run\" data-run=\"{idx}\">\n<h2>{} <span class=\"note\">({})</span></h2>\n",
        esc(&run.profile),
        esc(&run.dir.display().to_string())
    );
    let jobs = run.jobs();
    if run.is_knee() {
        h.push_str(&capacity_table(run, &jobs));
    }
    // A knee run has a row per probe: the table is there for the audit, folded.
    let _ = write!(
        h,
        "<details{}><summary>summary.csv: {} rows</summary>\n{}</details>\n",
        if run.is_knee() { "" } else { " open" },
        run.summary.rows.len(),
        summary_table(run, idx)
    );
    let reps = jobs
        .iter()
        .map(|j| &j.1)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let job_label = |j: &Job| {
        let l = run.label(&j.0);
        if reps > 1 {
            format!("{l} r{}", j.1)
        } else {
            l
        }
    };

    // The column is there in every run; a run with consumers fills it.
    let consumers = run
        .series
        .rows
        .iter()
        .any(|r| run.series.num(r, "consumer_lag").is_some());
    if consumers {
        h.push_str(&consumer_section(run, idx, &jobs, &job_label)?);
    }

    // Across the matrix: the key metric (the knee in a knee run) per cell.
    let knee = run.is_knee();
    let metric = if knee {
        "knee_rate"
    } else {
        run.key_metric.as_str()
    };
    let mut cells: Vec<(String, Vec<f64>)> = Vec::new();
    for j in &jobs {
        let rows = run.job_rows(j);
        // A knee search has one result per job; a staircase one bar per stair.
        let take = if knee { 1 } else { rows.len() };
        for r in rows.into_iter().take(take) {
            let step = run.summary.text(r, "step");
            let label = match step {
                _ if knee || step.is_empty() => run.label(&j.0),
                _ => format!("{} step={step}", run.label(&j.0)),
            };
            let value = run.summary.num(r, metric);
            match cells.iter_mut().find(|c| c.0 == label) {
                Some(c) => c.1.extend(value),
                None => cells.push((label, value.into_iter().collect())),
            }
        }
    }
    if cells.iter().any(|c| !c.1.is_empty()) {
        let svg = charts::bars(
            &format!("{} per cell", words(metric)),
            words(metric),
            &cells,
        )?;
        h.push_str(&figure(
            "matrix",
            idx,
            None,
            (&svg, metric),
            "bar: median over repetitions; black line: min–max of the repetitions",
        ));
    }

    if knee {
        h.push_str(&probe_ladder(run, idx, &jobs, &job_label)?);
        for (col, title, scale, floor) in [
            ("p99_ms", "knee search: p99 by offered rate", 1.0, 0.05),
            (
                "busy_rate",
                "knee search: busy answers (%) by offered rate",
                100.0,
                0.001,
            ),
        ] {
            let probes: Vec<(String, charts::Probes)> = jobs
                .iter()
                .map(|j| {
                    let pts = run
                        .job_rows(j)
                        .into_iter()
                        .filter_map(|r| {
                            let s = &run.summary;
                            Some((
                                s.num(r, "target_rate")?,
                                s.num(r, col)? * scale,
                                s.text(r, "slo_met") == "true",
                            ))
                        })
                        .collect();
                    (job_label(j), pts)
                })
                .collect();
            let limit = run
                .slo_limits
                .iter()
                .find(|l| l.0 == col)
                .map(|l| (l.1 * scale, l.2.clone()));
            let svg = charts::knee(&KneePlot {
                title,
                y_desc: if col == "p99_ms" {
                    "send latency p99 (ms, log scale)"
                } else {
                    "busy answers (% of sends, log scale)"
                },
                cells: probes,
                limit,
                floor,
            })?;
            h.push_str(&figure(
                "knee",
                idx,
                None,
                (&svg, &format!("target_rate, {col}, slo_met")),
                "filled: the probe met the SLO; hollow: it did not",
            ));
        }
    }

    let spectra: Vec<(String, Vec<(f64, f64)>)> = jobs
        .iter()
        .filter_map(|j| Some((job_label(j), run.spectrum(j)?)))
        .collect();
    if !spectra.is_empty() {
        let what = if knee {
            "at each cell's knee"
        } else {
            "over the measured seconds"
        };
        let svg = charts::spectrum(&format!("latency by percentile, {what}"), &spectra)?;
        h.push_str(&figure(
            "spectrum",
            idx,
            None,
            (&svg, "latency.hlog"),
            "from latency.hlog; x: percentile on HdrHistogram's log axis",
        ));
    }

    for col in EXTRA_SERIES.iter().filter(|c| run.series.has(c)) {
        let series: Vec<(String, Vec<(f64, f64)>)> = jobs
            .iter()
            .map(|j| {
                let pts = run
                    .job_seconds(j)
                    .into_iter()
                    .enumerate()
                    .filter_map(|(i, r)| Some((i as f64 + 0.5, run.series.num(r, col)?)))
                    .collect();
                (job_label(j), pts)
            })
            .collect();
        // Zero or absent throughout: one line of text, not a flat chart (nothing at all in a
        // run without consumers, where these columns are empty by design).
        if !consumers && series.iter().all(|s| s.1.is_empty()) {
            continue;
        }
        if series.iter().all(|s| s.1.iter().all(|p| p.1 == 0.0)) {
            h.push_str(&empty(
                "series",
                idx,
                col,
                &format!("no {} in this run", words(col)),
            ));
            continue;
        }
        let (marks, moments) = job_marks(run, &jobs, &job_label);
        let svg = charts::lines(words(col), words(col), &series, &marks)?;
        let mut caption = String::from("one line per cell");
        let mut columns = (*col).to_owned();
        if !moments.is_empty() {
            caption.push_str(&format!("; red lines: {}", moments.join(", ")));
            columns.push_str(", event");
        }
        h.push_str(&figure("series", idx, None, (&svg, &columns), &caption));
    }

    if run.series.has("second") {
        h.push_str("<h3>per cell, second by second</h3>\n");
        for j in &jobs {
            let t = timeline(run, j, job_label(j));
            if t.seconds.is_empty() {
                continue;
            }
            let svg = charts::timeline(&t)?;
            let mut caption = String::from("bars: ok and busy answers by class; red marks at the top: a put-lock hold ≥ 100 ms in the second (page_cache_lock_ms: the longest hold on broker-under-test, a once-a-second sample of the hold in progress on Apache); red lines: a fault (kill, restart, pause, resume); grey lines: a new step or probe");
            caption.push_str(&reconciliation(run, j));
            h.push_str(&figure(
                "timeline",
                idx,
                Some(j),
                (
                    &svg,
                    "target_rate, ok, busy_*, p99_ms, page_cache_lock_ms, event",
                ),
                &caption,
            ));
            let (seconds, title) = (run.job_seconds(j), format!("{}: replication", job_label(j)));
            let picture = if run.pairs {
                replication::picture(&run.series, &seconds, title, &events(run, &seconds))?
            } else {
                None
            };
            match picture {
                Some(Picture::Chart(svg, c)) => h.push_str(&figure(
                    "replication",
                    idx,
                    Some(j),
                    (&svg, replication::COLUMNS),
                    &c,
                )),
                Some(Picture::Quiet(line)) => {
                    h.push_str(&empty("replication", idx, replication::COLUMNS, line))
                }
                None => {}
            }
        }
    }
    h.push_str("</section>\n");
    Ok(h)
}

/// The knee search's probes in order, one line per job, the failing term named.
fn probe_ladder(
    run: &RunView,
    idx: usize,
    jobs: &[Job],
    job_label: &dyn Fn(&Job) -> String,
) -> Result<String, ReportError> {
    let s = &run.summary;
    let cells: Vec<(String, Vec<Rung>)> = jobs
        .iter()
        .map(|j| {
            let rungs = run
                .job_rows(j)
                .into_iter()
                .filter_map(|r| {
                    let failed = s.text(r, "slo_failed");
                    let met = s.text(r, "slo_met") == "true";
                    Some((
                        s.num(r, "step")?,
                        s.num(r, "target_rate")?,
                        (!met).then(|| failed.to_owned()),
                    ))
                })
                .collect();
            (job_label(j), rungs)
        })
        .collect();
    let svg = ladder::ladder(&cells)?;
    Ok(figure(
        "ladder",
        idx,
        None,
        (&svg, "step, target_rate, slo_met, slo_failed"),
        "each cell's probes in the order tried: filled met the SLO, hollow did not; a label names the first failed term where it changes",
    ))
}

/// A consumer run opens with its story, one chart per job: produce vs consume, lag, cache
/// against the thresholds with the flow-control marks; the gates that never fired are named in
/// one line instead of being drawn.
fn consumer_section(
    run: &RunView,
    idx: usize,
    jobs: &[Job],
    job_label: &dyn Fn(&Job) -> String,
) -> Result<String, ReportError> {
    let mut h = String::from("<h3>consumers, second by second</h3>\n");
    for j in jobs {
        let seconds = run.job_seconds(j);
        if seconds.is_empty() {
            continue;
        }
        let events = events(run, &seconds);
        let plot = ConsumerPlot::new(
            format!("{}: produce vs consume, lag, consumer cache", job_label(j)),
            &run.series,
            &seconds,
            run.thresholds.get(&j.0).copied(),
            events,
        );
        let mut caption: Vec<String> = plot
            .active_gates()
            .iter()
            .map(|(gate, total, first)| {
                format!(
                    "flow control, {gate} gate: {total} pulls delayed, the first in second {}",
                    first + 1
                )
            })
            .collect();
        if !plot.events.is_empty() {
            let moments: Vec<String> = plot
                .events
                .iter()
                .map(|(i, what)| format!("{what} in second {}", i + 1))
                .collect();
            caption.push(format!("red lines: {}", moments.join(", ")));
        }
        let quiet = plot.quiet_gates();
        if !quiet.is_empty() {
            caption.push(format!("no {} flow control in this run", or_list(&quiet)));
        }
        // Runs from before the per-second failure columns say nothing here.
        if run.series.header.iter().any(|c| c == "consumer_failures") && !plot.any_failures() {
            caption.push("no listener failures, redeliveries or DLQ sends in this run".into());
        }
        if let Some(line) = run
            .job_rows(j)
            .first()
            .and_then(|r| consumer_chart::failures_line(&run.summary, r))
        {
            caption.push(line);
        }
        let svg = consumer_chart::chart(&plot)?;
        h.push_str(&figure(
            "consumer",
            idx,
            Some(j),
            (
                &svg,
                "ok, consumed, consumer_failures, consumer_retries, consumer_dlq, consumer_lag, consumer_cached, consumer_cached_mib, consumer_fc_*",
            ),
            &caption.join("; "),
        ));
    }
    Ok(h)
}

/// A fault job's reconciliation figures for the timeline's caption; empty for other jobs.
fn reconciliation(run: &RunView, job: &Job) -> String {
    let rows = run.job_rows(job);
    let Some(r) = rows.first() else {
        return String::new();
    };
    let figures: Vec<String> = RECONCILIATION
        .iter()
        .filter_map(|(col, what)| {
            let v = run.summary.text(r, col);
            (!v.is_empty()).then(|| format!("{what} {v} ({col})"))
        })
        .collect();
    if figures.is_empty() {
        String::new()
    } else {
        format!(". Reconciliation: {}", figures.join(", "))
    }
}

/// Every job's fault moments for a chart that draws all jobs on one axis of seconds, and the
/// caption's words for them; a mark names its job when more than one job has moments.
fn job_marks(
    run: &RunView,
    jobs: &[Job],
    job_label: &dyn Fn(&Job) -> String,
) -> (Vec<Mark>, Vec<String>) {
    let per_job: Vec<(String, Vec<(usize, String)>)> = jobs
        .iter()
        .map(|j| (job_label(j), events(run, &run.job_seconds(j))))
        .filter(|(_, e)| !e.is_empty())
        .collect();
    let several = per_job.len() > 1;
    let mut marks = Vec::new();
    let mut moments = Vec::new();
    for (label, evs) in per_job {
        for (i, what) in evs {
            moments.push(format!("{what} in second {} of {label}", i + 1));
            let text = if several {
                format!("{what} ({label})")
            } else {
                what
            };
            marks.push(Mark::new(i, text));
        }
    }
    (marks, moments)
}

fn timeline(run: &RunView, job: &Job, title: String) -> Timeline {
    let s = &run.series;
    let classes: Vec<String> = s
        .header
        .iter()
        .filter(|c| c.starts_with("busy_"))
        .map(|c| c.trim_start_matches("busy_").to_owned())
        .collect();
    let mut prev_step: Option<String> = None;
    let seconds = run
        .job_seconds(job)
        .into_iter()
        .map(|r| {
            let step = s.text(r, "step").to_owned();
            let boundary = prev_step.as_ref().is_some_and(|p| *p != step);
            prev_step = Some(step);
            Second {
                offered: s.num(r, "target_rate"),
                ok: s.num(r, "ok").unwrap_or(0.0),
                busy: classes
                    .iter()
                    .map(|c| s.num(r, &format!("busy_{c}")).unwrap_or(0.0))
                    .collect(),
                p99_ms: s.num(r, "p99_ms"),
                stall: s
                    .num(r, "page_cache_lock_ms")
                    .is_some_and(|v| v >= STALL_LOCK_MS),
                event: event_text(s, r),
                boundary,
            }
        })
        .collect();
    Timeline {
        title,
        classes,
        seconds,
    }
}
