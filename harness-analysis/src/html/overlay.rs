//! `harness report A B`: every cell that both runs measured, drawn once with both runs on shared
//! axes (A solid, B dashed), and beside the chart that cell's verdicts from `compare`. A
//! consumer cell shows the consumers' story (consumed per second, lag, cache), any other cell
//! the producer's (acknowledged sends per second, p99); the fault moments of both runs are red
//! lines (B's dashed) and a fault cell's reconciliation figures stand under the chart.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use plotters::prelude::*;

use crate::compare::model::{Comparison, MetricComparison, Verdict};

use super::error::ReportError;
use super::events::{events, RECONCILIATION};
use super::marks::{self, Mark, Stroke};
use super::style::{chart_err, color, legend, max_of, svg, FONT};
use super::tables::{esc, short};
use super::view::{Job, RunView};
use super::words::words;

/// The per-second columns a consumer cell's chart draws, one panel each.
const CONSUMER_PANELS: [&str; 3] = ["consumed", "consumer_lag", "consumer_cached"];
/// The per-second columns any other cell's chart draws.
const PRODUCER_PANELS: [&str; 2] = ["ok", "p99_ms"];

/// Height of one panel of a pair's chart (px).
const PANEL_PX: u32 = 170;

/// One run's side of a pair: the run, its job, the name its lines carry and how they are drawn.
struct Side<'a> {
    run: &'a RunView,
    job: Job,
    name: &'static str,
    stroke: Stroke,
}

impl Side<'_> {
    /// `column` second by second (None where the second has no value).
    fn series(&self, column: &str) -> Vec<Option<f64>> {
        self.run
            .job_seconds(&self.job)
            .into_iter()
            .map(|r| self.run.series.num(r, column))
            .collect()
    }

    fn has_consumers(&self) -> bool {
        self.series("consumer_lag").iter().any(Option::is_some)
    }

    fn marks(&self) -> Vec<Mark> {
        events(self.run, &self.run.job_seconds(&self.job))
            .into_iter()
            .map(|(i, what)| Mark {
                second: i,
                text: format!("{}: {what}", self.name),
                stroke: self.stroke,
            })
            .collect()
    }

    /// A summary.csv figure of the job's first row, as written.
    fn figure(&self, column: &str) -> String {
        self.run
            .job_rows(&self.job)
            .first()
            .map_or(String::new(), |r| {
                self.run.summary.text(r, column).to_owned()
            })
    }
}

/// A job's parameters as compare keys its cells: `param_*` columns without the prefix.
fn params(run: &RunView, job: &Job) -> BTreeMap<String, String> {
    let rows = run.job_rows(job);
    let Some(row) = rows.first() else {
        return BTreeMap::new();
    };
    run.summary
        .header
        .iter()
        .filter_map(|h| {
            let p = h.strip_prefix("param_")?;
            Some((p.to_owned(), run.summary.text(row, h).trim().to_owned()))
        })
        .collect()
}

/// The first job (repetition 1 where there is one) of `run` with these parameters.
fn job_with(run: &RunView, wanted: &BTreeMap<String, String>) -> Option<Job> {
    run.jobs().into_iter().find(|j| params(run, j) == *wanted)
}

/// The section under the verdicts: one figure and verdict table per cell both runs measured.
pub fn section(a: &RunView, b: &RunView, c: &Comparison) -> Result<String, ReportError> {
    // The cells in compare's order, each once (a stepped cell has a row per step).
    let mut cells: Vec<&BTreeMap<String, String>> = Vec::new();
    for r in &c.rows {
        if !cells.contains(&&r.key.params) {
            cells.push(&r.key.params);
        }
    }
    let mut h = String::new();
    for p in cells {
        let (Some(ja), Some(jb)) = (job_with(a, p), job_with(b, p)) else {
            continue;
        };
        // The cell's label as run.json has it (compare's names a step too).
        let label = a.label(&ja.0);
        let cell = label.as_str();
        let sides = [
            Side {
                run: a,
                job: ja,
                name: "A",
                stroke: Stroke::Solid,
            },
            Side {
                run: b,
                job: jb,
                name: "B",
                stroke: Stroke::Dashed,
            },
        ];
        let rows: Vec<&MetricComparison> = c.rows.iter().filter(|r| r.key.params == *p).collect();
        h.push_str(&pair(&sides, cell, &rows)?);
    }
    if h.is_empty() {
        return Ok(h);
    }
    Ok(format!(
        "<h2>A against B, cell by cell</h2>\n<p class=\"note\">A: {} (solid lines), B: {} (dashed lines); each cell's first repetition is drawn, the verdicts use every repetition.</p>\n{h}",
        esc(&a.dir.display().to_string()),
        esc(&b.dir.display().to_string())
    ))
}

/// One cell: the overlaid chart (or its one line of text) and the cell's verdicts beside it.
fn pair(sides: &[Side; 2], cell: &str, rows: &[&MetricComparison]) -> Result<String, ReportError> {
    let consumers = sides.iter().any(Side::has_consumers);
    let panels: &[&str] = if consumers {
        &CONSUMER_PANELS
    } else {
        &PRODUCER_PANELS
    };
    // Panels with nothing to show on either side collapse into words.
    let (drawn, quiet): (Vec<&str>, Vec<&str>) = panels.iter().partition(|col| {
        sides
            .iter()
            .any(|s| s.series(col).iter().flatten().any(|v| *v != 0.0))
    });
    let title = format!(
        "{cell}: A against B, {}",
        if consumers { "consumers" } else { "producers" }
    );
    let mut h = format!("<div class=\"pair\" data-cell=\"{}\">\n<div>\n", esc(cell));
    let columns = format!("{}, event", panels.join(", "));
    if drawn.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"empty note\" data-empty=\"overlay\" title=\"columns: {}\">{}: nothing to draw, {} zero or absent on both sides</p>",
            esc(&columns),
            esc(cell),
            esc(&quiet.iter().map(|c| words(c)).collect::<Vec<_>>().join(", "))
        );
    } else {
        let svg = chart(sides, &title, &drawn)?;
        let mut caption: Vec<String> = Vec::new();
        if !quiet.is_empty() {
            caption.push(format!(
                "no {} on either side",
                quiet
                    .iter()
                    .map(|c| words(c))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        caption.extend(reconciliation(sides));
        let _ = writeln!(
            h,
            "<figure class=\"chart\" data-chart=\"overlay\" data-cell=\"{}\" title=\"columns: {}\">{svg}<figcaption class=\"note\">{}</figcaption></figure>",
            esc(cell),
            esc(&columns),
            esc(&caption.join(". "))
        );
    }
    h.push_str("</div>\n");
    h.push_str(&verdicts(rows));
    h.push_str("</div>\n");
    Ok(h)
}

/// "Reconciliation, A | B: acknowledged but lost 0 | 0 (acked_lost), …" for a fault cell.
fn reconciliation(sides: &[Side; 2]) -> Option<String> {
    let figures: Vec<String> = RECONCILIATION
        .iter()
        .filter_map(|(col, what)| {
            let (a, b) = (sides[0].figure(col), sides[1].figure(col));
            (!a.is_empty() || !b.is_empty()).then(|| format!("{what} {a} | {b} ({col})"))
        })
        .collect();
    (!figures.is_empty()).then(|| format!("Reconciliation, A | B: {}", figures.join(", ")))
}

/// The cell's verdicts: a metric that is zero or absent on both sides is left out, as in
/// `harness compare`'s table. A cell with steps (stairs, knee probes) has a verdict per step
/// and metric, too many to stand beside one chart: only its better and worse ones are listed,
/// the others counted (they are all in the table above).
fn verdicts(rows: &[&MetricComparison]) -> String {
    let mut h = String::from(
        "<table class=\"verdicts\"><tr><th>metric</th><th>A</th><th>B</th><th>change</th><th>verdict</th></tr>\n",
    );
    let stepped = rows.iter().any(|r| !r.key.step.is_empty());
    let mut untold = 0;
    for r in rows {
        let zero = |v: Option<f64>| v.is_none_or(|x| x == 0.0);
        if zero(r.base) && zero(r.candidate) {
            continue;
        }
        if stepped && !matches!(r.verdict, Verdict::Better | Verdict::Worse) {
            untold += 1;
            continue;
        }
        let change = match (r.new_from_zero, r.change_pct) {
            (true, _) => "from 0".to_owned(),
            (false, Some(p)) => format!("{p:+.1}%"),
            (false, None) => String::new(),
        };
        let step = if r.key.step.is_empty() {
            String::new()
        } else {
            format!(" (step {})", r.key.step)
        };
        let _ = writeln!(
            h,
            "<tr data-metric=\"{m}\"><td title=\"{m}\">{}{}</td><td>{}</td><td>{}</td><td>{}</td><td title=\"{}\">{}</td></tr>",
            esc(words(&r.metric)),
            esc(&step),
            short(r.base),
            short(r.candidate),
            esc(&change),
            esc(&r.note),
            r.verdict.label(),
            m = esc(&r.metric),
        );
    }
    if untold > 0 {
        let _ = writeln!(
            h,
            "<tr><td colspan=\"5\">{untold} more verdicts by step, none better or worse: see the table above</td></tr>"
        );
    }
    h.push_str("</table>\n");
    h
}

fn points(v: &[Option<f64>]) -> Vec<(f64, f64)> {
    v.iter()
        .enumerate()
        .filter_map(|(i, y)| y.map(|y| (i as f64 + 0.5, y)))
        .collect()
}

/// The panels stacked in one SVG on the pair's longer run of seconds; A solid, B dashed.
fn chart(sides: &[Side; 2], title: &str, panels: &[&str]) -> Result<String, ReportError> {
    let n = sides
        .iter()
        .map(|s| s.run.job_seconds(&s.job).len())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let marks: Vec<Mark> = sides.iter().flat_map(Side::marks).collect();
    let height = 30 + PANEL_PX * panels.len() as u32;
    svg(height, |root| {
        let root = root.titled(title, (FONT, 15)).map_err(chart_err)?;
        let areas = root.split_evenly((panels.len(), 1));
        for (k, (area, col)) in areas.iter().zip(panels).enumerate() {
            let data: Vec<Vec<(f64, f64)>> = sides.iter().map(|s| points(&s.series(col))).collect();
            let ymax = max_of(data.iter().flatten().map(|p| p.1), 1e-9);
            let last = k + 1 == panels.len();
            let mut chart = ChartBuilder::on(area)
                .margin(6)
                .x_label_area_size(if last { 34 } else { 22 })
                .y_label_area_size(60)
                .build_cartesian_2d(0f64..n, 0f64..ymax)
                .map_err(chart_err)?;
            let mut mesh = chart.configure_mesh();
            mesh.y_desc(words(col));
            if last {
                mesh.x_desc("second (sampled, in order)");
            }
            mesh.draw().map_err(chart_err)?;
            for (s, pts) in sides.iter().zip(data) {
                let c = color(k);
                let name = format!("{} {}", s.name, words(col));
                match s.stroke {
                    Stroke::Solid => chart
                        .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                        .map_err(chart_err)?
                        .label(name)
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(2))
                        }),
                    Stroke::Dashed => chart
                        .draw_series(DashedLineSeries::new(pts, 6, 4, c.stroke_width(2)))
                        .map_err(chart_err)?
                        .label(name)
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 5, y)], c.stroke_width(2))
                        }),
                };
            }
            marks::draw(&mut chart, &marks, ymax, k == 0)?;
            legend(&mut chart)?;
        }
        Ok(())
    })
}
