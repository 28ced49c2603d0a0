//! Rendering a [`Comparison`]: aligned table, CSV, JSON, Markdown. Pure functions of the
//! model so every format shows the same numbers.

use super::error::RenderError;
use super::model::{Comparison, Method, MetricComparison, Verdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Csv,
    Json,
    Markdown,
}

/// Compact, stable number formatting: 4 significant digits, no exponent for typical values.
pub fn num(v: Option<f64>) -> String {
    match v {
        None => "-".to_string(),
        Some(x) if !x.is_finite() => {
            if x > 0.0 {
                "inf".into()
            } else if x < 0.0 {
                "-inf".into()
            } else {
                "nan".into()
            }
        }
        Some(0.0) => "0".to_string(),
        // Counts (sent, busy, ...) read better without decimals.
        Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{x:.0}"),
        Some(x) if x.abs() >= 1000.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 100.0 => format!("{x:.1}"),
        Some(x) if x.abs() >= 1.0 => format!("{x:.2}"),
        Some(x) if x.abs() >= 0.001 => format!("{x:.4}"),
        Some(x) => format!("{x:.2e}"),
    }
}

pub fn change(r: &MetricComparison) -> String {
    if r.new_from_zero {
        return "new".to_string();
    }
    match r.change_pct {
        Some(c) => format!("{c:+.1}%"),
        None => "-".to_string(),
    }
}

/// "no change" when inside the noise threshold, "not significant" when a test ran and could
/// not tell the difference from noise; the model (and JSON) call both `no-change`.
pub fn verdict_label(r: &MetricComparison) -> &'static str {
    match (r.verdict, r.method) {
        (Verdict::NoChange, Method::MannWhitney | Method::BlockBootstrap) => "not significant",
        (v, _) => v.label(),
    }
}

/// One human-readable phrase with the evidence behind the verdict.
pub fn evidence(r: &MetricComparison, alpha: f64) -> String {
    match r.method {
        Method::Threshold => "within noise threshold".to_string(),
        Method::MannWhitney => match r.p_value {
            Some(p) if r.verdict == Verdict::Inconclusive => {
                format!("U-test p={p:.3}; {}", r.note)
            }
            Some(p) => format!("U-test p={p:.3} (n={}/{})", r.n_base, r.n_candidate),
            None => r.note.clone(),
        },
        Method::BlockBootstrap => match (r.ci_low, r.ci_high) {
            (Some(lo), Some(hi)) => format!(
                "block bootstrap {:.0}% CI of diff [{}, {}]{}{}",
                (1.0 - alpha) * 100.0,
                num(Some(lo)),
                num(Some(hi)),
                if r.note.is_empty() { "" } else { "; " },
                r.note
            ),
            _ => r.note.clone(),
        },
        Method::None => r.note.clone(),
    }
}

const HEADERS: [&str; 7] = [
    "cell",
    "metric",
    "base",
    "candidate",
    "change",
    "verdict",
    "evidence",
];

fn cells(c: &Comparison) -> Vec<[String; 7]> {
    c.rows
        .iter()
        .map(|r| {
            [
                r.cell.clone(),
                r.metric.clone(),
                num(r.base),
                num(r.candidate),
                change(r),
                verdict_label(r).to_string(),
                evidence(r, c.alpha),
            ]
        })
        .collect()
}

fn header_lines(c: &Comparison) -> Vec<String> {
    let mut v = vec![match &c.reference {
        Some(r) => format!("run: {}   reference: {r}", c.base),
        None => format!("base: {}   candidate: {}", c.base, c.candidate),
    }];
    v.push(format!(
        "noise threshold: {}%   alpha: {}",
        c.threshold_pct, c.alpha
    ));
    v.push(c.headline());
    v
}

fn footer_lines(c: &Comparison) -> Vec<String> {
    let mut v = Vec::new();
    if c.rows.is_empty() {
        v.push("no matched cells".to_string());
    }
    v.extend(c.notes.iter().cloned());
    let (b, cand) = if c.reference.is_some() {
        ("cells without a reference cell", "")
    } else {
        ("cells only in base", "cells only in candidate")
    };
    if !c.unmatched_base.is_empty() {
        v.push(format!("{b}: {}", c.unmatched_base.join("; ")));
    }
    if !c.unmatched_candidate.is_empty() {
        v.push(format!("{cand}: {}", c.unmatched_candidate.join("; ")));
    }
    v
}

/// Rows worth showing to a human: a metric that is 0 on both sides says nothing.
fn shown(c: &Comparison, all: bool) -> (Vec<[String; 7]>, usize) {
    let body = cells(c);
    if all {
        return (body, 0);
    }
    let before = body.len();
    let kept: Vec<[String; 7]> = body
        .into_iter()
        .zip(&c.rows)
        .filter(|(_, r)| !(r.base == Some(0.0) && r.candidate == Some(0.0)))
        .map(|(row, _)| row)
        .collect();
    let hidden = before - kept.len();
    (kept, hidden)
}

fn hidden_note(hidden: usize) -> Option<String> {
    (hidden > 0).then(|| format!("{hidden} rows with 0 on both sides hidden (--all shows them)"))
}

/// Aligned text, one section per cell.
pub fn table(c: &Comparison, all: bool) -> String {
    let (body, hidden) = shown(c, all);
    // Column 0 (the cell) is a section heading, so widths cover columns 1.. only.
    let mut widths: Vec<usize> = HEADERS[1..].iter().map(|h| h.len()).collect();
    for row in &body {
        for (w, cell) in widths.iter_mut().zip(row[1..].iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |row: &[String]| {
        let mut s = String::new();
        for (i, (cell, w)) in row.iter().zip(widths.iter()).enumerate() {
            // Numbers right-aligned, text left-aligned.
            if (1..=3).contains(&i) {
                s.push_str(&format!("{cell:>w$}"));
            } else if i + 1 == row.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}"));
            }
            if i + 1 < row.len() {
                s.push_str("  ");
            }
        }
        s.trim_end().to_string()
    };
    let mut out = header_lines(c).join("\n");
    out.push('\n');
    let mut current: Option<&str> = None;
    for row in &body {
        if current != Some(row[0].as_str()) {
            current = Some(row[0].as_str());
            out.push_str(&format!("\n== {}\n", row[0]));
            out.push_str(&line(&HEADERS.map(String::from)[1..]));
            out.push('\n');
        }
        out.push_str(&line(&row[1..]));
        out.push('\n');
    }
    for f in footer_lines(c).into_iter().chain(hidden_note(hidden)) {
        out.push('\n');
        out.push_str(&f);
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

pub fn markdown(c: &Comparison, all: bool) -> String {
    let (body, hidden) = shown(c, all);
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = String::new();
    for h in header_lines(c) {
        out.push_str(&format!("{h}  \n"));
    }
    out.push('\n');
    out.push_str("| cell | metric | base | candidate | change | verdict | evidence |\n");
    out.push_str("|---|---|---:|---:|---:|---|---|\n");
    for row in body {
        let verdict = match row[5].as_str() {
            "worse" => "**worse**".to_string(),
            v => v.to_string(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            esc(&row[0]),
            esc(&row[1]),
            row[2],
            row[3],
            row[4],
            verdict,
            esc(&row[6])
        ));
    }
    for f in footer_lines(c).into_iter().chain(hidden_note(hidden)) {
        out.push_str(&format!("\n{}\n", esc(&f)));
    }
    out
}

pub fn csv(c: &Comparison) -> Result<String, RenderError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "cell",
        "metric",
        "direction",
        "base",
        "candidate",
        "change_pct",
        "n_base",
        "n_candidate",
        "method",
        "p_value",
        "ci_low",
        "ci_high",
        "verdict",
        "note",
    ])?;
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for r in &c.rows {
        let change = if r.new_from_zero {
            "inf".to_string()
        } else {
            opt(r.change_pct)
        };
        w.write_record([
            r.cell.clone(),
            r.metric.clone(),
            serde_json::to_value(r.direction)?
                .as_str()
                .unwrap_or_default()
                .to_string(),
            opt(r.base),
            opt(r.candidate),
            change,
            r.n_base.to_string(),
            r.n_candidate.to_string(),
            serde_json::to_value(r.method)?
                .as_str()
                .unwrap_or_default()
                .to_string(),
            opt(r.p_value),
            opt(r.ci_low),
            opt(r.ci_high),
            verdict_label(r).to_string(),
            r.note.clone(),
        ])?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8(bytes)?)
}

pub fn json(c: &Comparison) -> Result<String, RenderError> {
    let mut s = serde_json::to_string_pretty(c)?;
    s.push('\n');
    Ok(s)
}

/// Render in `format`; `all` keeps rows that are 0 on both sides in table and markdown
/// (csv and json always hold every row).
pub fn render(c: &Comparison, format: Format, all: bool) -> Result<String, RenderError> {
    Ok(match format {
        Format::Table => table(c, all),
        Format::Markdown => markdown(c, all),
        Format::Csv => csv(c)?,
        Format::Json => json(c)?,
    })
}
