//! `harness report RUN_DIR [RUN_DIR2] [--out FILE]`: one self-contained HTML file (inline SVG
//! charts drawn with plotters, no network, opens from disk) for a result folder, or for two
//! side by side with `compare`'s verdicts.
//!
//! * table.rs  — a CSV as text cells, columns by name (extra columns are tolerated)
//! * hlog.rs   — latency spectra from latency.hlog
//! * view.rs   — one result folder: CSVs, run.json labels and `[slo]`, spectra per job
//! * charts.rs — the plotters charts
//! * consumer.rs — a consumer job's chart: rates, lag, cache against thresholds, flow control
//! * ladder.rs — a knee run's probes in order, met or failed and why
//! * marks.rs  — fault moments as vertical lines on every chart over a job's seconds
//! * overlay.rs — two runs' jobs on shared axes, each pair's compare verdicts beside them
//! * words.rs  — column names in words with units (titles, axes)
//! * page.rs   — the HTML template, the charts in their figures
//! * tables.rs — the tables, made to fit the page
//! * error.rs  — why a report could not be written

mod charts;
mod consumer;
mod error;
mod events;
mod hlog;
mod ladder;
mod marks;
mod overlay;
mod page;
mod replication;
mod style;
mod table;
mod tables;
mod view;
mod words;

use std::path::PathBuf;

pub use error::ReportError;
pub use view::RunView;

#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// A result folder written by `harness run`.
    pub run: PathBuf,
    /// A second result folder: shown side by side, with `compare`'s verdicts.
    pub run2: Option<PathBuf>,
    /// The HTML file to write. Default: report.html in the (second) result folder.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// summary.csv columns compared beyond `compare`'s defaults when either run has them filled:
/// the consumers' story and, for a failing listener, its retries and DLQ.
const CONSUMER_METRICS: &[&str] = &[
    "consume_rate",
    "consumer_lag_max",
    "consumer_cached_max",
    "e2e_p99_ms",
    "consumer_lost",
    "consumer_duplicates",
    "consumer_retries",
    "consumer_dlq",
    "retry_delay_p99_ms",
];

/// A fault run's reconciliation, compared when either run has it.
const FAULT_METRICS: &[&str] = &["acked_lost", "phantom", "duplicates", "recovery_ms"];

/// `compare`'s default metrics, then the consumer and fault columns that both runs have and
/// either filled (an empty list would mean the defaults alone, as `harness compare` has).
fn verdict_metrics(runs: &[RunView]) -> Vec<String> {
    let filled = |col: &str| {
        runs.iter().all(|r| r.summary.has(col))
            && runs.iter().any(|r| {
                r.summary
                    .rows
                    .iter()
                    .any(|row| !r.summary.text(row, col).is_empty())
            })
    };
    let extra: Vec<String> = CONSUMER_METRICS
        .iter()
        .chain(FAULT_METRICS)
        .filter(|c| filled(c))
        .map(|c| (*c).to_owned())
        .collect();
    if extra.is_empty() {
        return Vec::new();
    }
    crate::compare::model::METRICS
        .iter()
        .map(|m| m.name.to_string())
        .chain(extra)
        .collect()
}

/// Writes the report; returns its path.
pub fn write_report(args: &ReportArgs) -> Result<PathBuf, ReportError> {
    let mut runs = vec![RunView::load(&args.run)?];
    let mut verdicts = None;
    if let Some(second) = &args.run2 {
        runs.push(RunView::load(second)?);
        let c = crate::compare::build_comparison(&crate::compare::CompareArgs {
            base: args.run.clone(),
            candidate: Some(second.clone()),
            reference: None,
            format: crate::compare::Format::Csv,
            metrics: verdict_metrics(&runs),
            all: false,
            stats: crate::compare::StatArgs {
                threshold: None,
                alpha: None,
                block: 5,
                resamples: 2000,
                seed: 0x5eed,
            },
        })?;
        let csv = crate::compare::render::csv(&c)?;
        verdicts = Some((c, csv));
    }
    let html = page::render(&runs, verdicts.as_ref().map(|(c, csv)| (c, csv.as_str())))?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.run2.as_ref().unwrap_or(&args.run).join("report.html"));
    harness_results::write_atomic(&out, html.as_bytes()).map_err(|source| ReportError::Write {
        path: out.clone(),
        source,
    })?;
    Ok(out)
}
