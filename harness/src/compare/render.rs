//! Rendering a [`Comparison`]: aligned table, CSV, JSON, Markdown. Pure functions of the
//! model so every format shows the same numbers.

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
                "block bootstrap {:.0}% CI of diff [{}, {}]",
                (1.0 - alpha) * 100.0,
                num(Some(lo)),
                num(Some(hi))
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
                r.verdict.label().to_string(),
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
    v
}

fn footer_lines(c: &Comparison) -> Vec<String> {
    let mut v = Vec::new();
    if c.rows.is_empty() {
        v.push("no matched cells".to_string());
    }
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

pub fn table(c: &Comparison) -> String {
    let body = cells(c);
    let mut widths = HEADERS.map(str::len);
    for row in &body {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |row: &[String]| {
        let mut s = String::new();
        for (i, (cell, w)) in row.iter().zip(widths.iter()).enumerate() {
            // Numbers right-aligned, text left-aligned.
            if (2..=4).contains(&i) {
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
    out.push_str("\n\n");
    out.push_str(&line(&HEADERS.map(String::from)));
    out.push('\n');
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&rule.join("  "));
    out.push('\n');
    for row in &body {
        out.push_str(&line(row));
        out.push('\n');
    }
    for f in footer_lines(c) {
        out.push('\n');
        out.push_str(&f);
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

pub fn markdown(c: &Comparison) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = String::new();
    for h in header_lines(c) {
        out.push_str(&format!("{h}  \n"));
    }
    out.push('\n');
    out.push_str("| cell | metric | base | candidate | change | verdict | evidence |\n");
    out.push_str("|---|---|---:|---:|---:|---|---|\n");
    for row in cells(c) {
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
    for f in footer_lines(c) {
        out.push_str(&format!("\n{}\n", esc(&f)));
    }
    out
}

pub fn csv(c: &Comparison) -> anyhow::Result<String> {
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
            r.verdict.label().to_string(),
            r.note.clone(),
        ])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

pub fn json(c: &Comparison) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(c)?;
    s.push('\n');
    Ok(s)
}

pub fn render(c: &Comparison, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Table => table(c),
        Format::Markdown => markdown(c),
        Format::Csv => csv(c)?,
        Format::Json => json(c)?,
    })
}
