//! A job's fault moments and reconciliation figures as the page and the overlays read them
//! from the result files: which per-second columns mark a moment, and which summary columns
//! reconcile a fault job. A leaf both `page` and `overlay` read.

use super::table::Table;
use super::view::RunView;

/// Per-second text columns that mark a fault moment when not empty.
const EVENT_COLUMNS: &[&str] = &["fault", "event"];

/// summary.csv columns that reconcile a fault job's answers with its store, in words.
pub(super) const RECONCILIATION: &[(&str, &str)] = &[
    ("acked_lost", "acknowledged but lost"),
    ("phantom", "stored but never acknowledged"),
    ("duplicates", "stored twice"),
    ("recovery_ms", "recovery (ms)"),
    ("app_recovery_ms", "application's recovery (ms)"),
];

/// The job's seconds (0-based, in order) with a fault moment, and what happened.
pub(super) fn events(run: &RunView, seconds: &[&Vec<String>]) -> Vec<(usize, String)> {
    seconds
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let what = event_text(&run.series, r);
            (!what.is_empty()).then_some((i, what))
        })
        .collect()
}

/// The second's fault moments as written (`kill restart`), from every event column.
pub(super) fn event_text(s: &Table, row: &[String]) -> String {
    EVENT_COLUMNS
        .iter()
        .map(|c| s.text(row, c).trim())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
