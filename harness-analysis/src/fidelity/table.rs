//! Every row's outcome as table lines (one per check and release, or one saying why the row
//! has no figures), rendered as Markdown and CSV. The model first, then the renderings, as
//! `compare` does.

use std::collections::BTreeMap;
use std::path::Path;

use harness_results::read::{LoadError, RunData};

use super::figure::{evaluate_check, Verdict};
use super::rows::RowsFile;

/// What happened to a row in this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowStatus {
    /// Its profile ran; the result folder is `<out>/<id>`.
    Measured,
    /// The run ended before it (Ctrl-C, SIGTERM).
    Interrupted,
    /// Its profile failed to run, with the error.
    Failed(String),
    /// Not in this run (`--quick`, `--rows`).
    NotSelected,
}

/// One line of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableLine {
    pub row: String,
    pub title: String,
    pub check: String,
    pub version: String,
    pub relation: String,
    pub model: String,
    pub real: String,
    /// None when the row has no figures (see `status`).
    pub verdict: Option<Verdict>,
    pub status: String,
    pub note: String,
}

/// A row's lines, given what happened to it.
#[derive(Debug, Clone)]
pub struct RowOutcome {
    pub id: String,
    pub status: RowStatus,
}

/// The table: every row of `rows`, in order, judged on `<dir>/<id>` where it was measured.
pub fn table_for(rows: &RowsFile, outcomes: &[RowOutcome], dir: &Path) -> Vec<TableLine> {
    let status: BTreeMap<&str, &RowStatus> = outcomes
        .iter()
        .map(|o| (o.id.as_str(), &o.status))
        .collect();
    let mut lines = Vec::new();
    for spec in &rows.row {
        let blank = |status: String| TableLine {
            row: spec.id.clone(),
            title: spec.title.clone(),
            check: String::new(),
            version: String::new(),
            relation: String::new(),
            model: String::new(),
            real: String::new(),
            verdict: None,
            status,
            note: spec.note.clone(),
        };
        if let Some(why) = &spec.not_run {
            lines.push(blank(format!("not run: {why}")));
            continue;
        }
        let folder = dir.join(&spec.id);
        match status.get(spec.id.as_str()) {
            None | Some(RowStatus::NotSelected) => {
                lines.push(blank("not in this run".into()));
                continue;
            }
            Some(RowStatus::Interrupted) => {
                lines.push(blank("interrupted before this row ended".into()));
                continue;
            }
            Some(RowStatus::Failed(e)) => {
                lines.push(blank(format!("failed: {e}")));
                continue;
            }
            Some(RowStatus::Measured) => {}
        }
        let data = match load_row(&folder) {
            Ok(d) => d,
            Err(e) => {
                lines.push(blank(format!("no result: {e}")));
                continue;
            }
        };
        let only_release = apache_release(&folder);
        for check in &spec.check {
            for j in evaluate_check(&data, check) {
                let version = if j.version.is_empty() {
                    only_release.clone()
                } else {
                    j.version
                };
                lines.push(TableLine {
                    check: check.name.clone(),
                    version,
                    relation: check.relation.describe(check.tolerance),
                    model: j.model.text,
                    real: j.real.text,
                    verdict: Some(j.verdict),
                    status: "measured".into(),
                    ..blank(String::new())
                });
            }
        }
    }
    lines
}

/// A row's result: `<folder>/summary.csv`, or, for a row run once per broker (`rate_from`),
/// every `<folder>/<kind>-<version>/` together, each row tagged with its broker's kind and
/// version as if they had been matrix axes.
pub fn load_row(folder: &Path) -> Result<RunData, LoadError> {
    if folder.join("summary.csv").is_file() || !folder.is_dir() {
        return harness_results::read::load(folder);
    }
    let mut subs: Vec<_> = std::fs::read_dir(folder)
        .map_err(|source| LoadError::Io {
            path: folder.to_owned(),
            source,
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("summary.csv").is_file())
        .collect();
    subs.sort();
    let mut merged: Option<RunData> = None;
    for sub in subs {
        let name = sub
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (kind, version) = match name.strip_prefix("apache-") {
            Some(v) => ("apache", v.to_owned()),
            None => ("in-tree", name.trim_start_matches("in-tree-").to_owned()),
        };
        let mut data = harness_results::read::load(&sub)?;
        for r in &mut data.rows {
            r.key.params.insert("broker.kind".into(), kind.into());
            r.key
                .params
                .insert("broker.version".into(), version.clone());
        }
        match merged.as_mut() {
            None => merged = Some(data),
            Some(m) => m.rows.extend(data.rows),
        }
    }
    merged.ok_or_else(|| LoadError::NotFound {
        path: folder.join("summary.csv"),
    })
}

/// The one Apache version of a run without a `broker.version` axis (run.json's `brokers`), or
/// empty: the quick run collapses the axis with `--set broker.version=...`.
pub fn apache_release(folder: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(folder.join("run.json")) else {
        return String::new();
    };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
        return String::new();
    };
    let versions: Vec<&str> = json
        .get("brokers")
        .and_then(|b| b.as_array())
        .into_iter()
        .flatten()
        .filter(|b| b.get("kind").and_then(|k| k.as_str()) == Some("apache"))
        .filter_map(|b| b.get("version").and_then(|v| v.as_str()))
        .collect();
    match versions.as_slice() {
        [one] => (*one).to_owned(),
        _ => String::new(),
    }
}

/// Counts of the judged lines: (agree, differ, no figure).
pub fn counts(lines: &[TableLine]) -> (usize, usize, usize) {
    let n = |v: Verdict| lines.iter().filter(|l| l.verdict == Some(v)).count();
    (n(Verdict::Agree), n(Verdict::Differ), n(Verdict::Unknown))
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The table as Markdown: one line per check and release; rows without figures say why.
pub fn render_markdown(lines: &[TableLine]) -> String {
    let mut out = String::from(
        "| row | question | check | release | relation expected | broker-under-test | Apache | verdict |\n|---|---|---|---|---|---|---|---|\n",
    );
    let mut notes: Vec<(String, String)> = Vec::new();
    for l in lines {
        let verdict = l
            .verdict
            .map_or_else(|| cell(&l.status), |v| v.as_str().into());
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            cell(&l.row),
            cell(&l.title),
            cell(&l.check),
            cell(&l.version),
            cell(&l.relation),
            cell(&l.model),
            cell(&l.real),
            verdict
        ));
        if !l.note.is_empty() && !notes.iter().any(|(r, _)| r == &l.row) {
            notes.push((l.row.clone(), l.note.clone()));
        }
    }
    let (agree, differ, unknown) = counts(lines);
    out.push_str(&format!(
        "\n{agree} agree, {differ} differ, {unknown} without a figure.\n"
    ));
    if !notes.is_empty() {
        out.push('\n');
        for (row, note) in notes {
            out.push_str(&format!("- **Row {row}.** {}\n", note.trim()));
        }
    }
    out
}

/// The table as CSV, one record per line of the Markdown table.
pub fn render_csv(lines: &[TableLine]) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "row", "title", "check", "release", "relation", "model", "apache", "verdict", "status",
    ])?;
    for l in lines {
        w.write_record([
            l.row.as_str(),
            &l.title,
            &l.check,
            &l.version,
            &l.relation,
            &l.model,
            &l.real,
            l.verdict.map_or("", Verdict::as_str),
            &l.status,
        ])?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
