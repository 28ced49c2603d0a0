//! The page's tables: summary.csv as written, a knee run's capacity lines, compare's verdicts.
//! Each fits a 1,280 px page: labels break after a parameter, headers after `_`, reasons wrap.

use std::fmt::Write as _;

use super::view::{Job, RunView};
use super::words::words;

/// Text made safe for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// summary.csv columns shown in the table, when the run has them (cells copied as written).
const TABLE_COLUMNS: &[&str] = &[
    "step",
    "target_rate",
    "achieved_rate",
    "ok_rate",
    "busy_rate",
    "p50_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "timeouts",
    "dropped",
    "broker_cpu_avg",
    "valid",
    "slo_met",
    "slo_failed",
    "knee_rate",
    "knee_limited_by",
    "consume_rate",
    "consumer_lag_max",
    "e2e_p99_ms",
    "consumer_lost",
    "consumer_duplicates",
];

pub fn summary_table(run: &RunView, idx: usize) -> String {
    let s = &run.summary;
    // A column empty in every row (a knee column in a consumer run) has nothing to show.
    let cols: Vec<&str> = TABLE_COLUMNS
        .iter()
        .copied()
        .filter(|c| s.rows.iter().any(|r| !s.text(r, c).is_empty()))
        .collect();
    let mut h = format!(
        "<div class=\"scroll\"><table class=\"summary\" data-run=\"{idx}\"><tr><th>cell</th><th>rep</th>"
    );
    for c in &cols {
        h.push_str(&header_cell(c));
    }
    h.push_str("</tr>\n");
    for r in &s.rows {
        let id = s.text(r, "cell_id");
        let _ = write!(
            h,
            "<tr data-cell-id=\"{}\" data-repetition=\"{}\" data-step=\"{}\"><td class=\"cell\">{}</td><td>{}</td>",
            esc(id),
            esc(s.text(r, "repetition")),
            esc(s.text(r, "step")),
            label_cell(&run.label(id)),
            esc(s.text(r, "repetition"))
        );
        for c in &cols {
            let _ = write!(h, "<td data-col=\"{}\">{}</td>", esc(c), esc(s.text(r, c)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></div>\n");
    h
}

/// One line per job of a knee run: its knee and the figures of the probe at the knee.
pub fn capacity_table(run: &RunView, jobs: &[Job]) -> String {
    let s = &run.summary;
    let cols = [
        "knee_rate",
        "p99_ms",
        "busy_rate",
        "broker_cpu_avg",
        "knee_limited_by",
    ];
    let mut h = String::from(
        "<div class=\"scroll\"><table class=\"capacity\"><tr><th>cell</th><th>rep</th><th>probes</th>",
    );
    for c in cols {
        h.push_str(&header_cell(c));
    }
    h.push_str("</tr>\n");
    for j in jobs {
        let rows = run.job_rows(j);
        let step = run.spectrum_step(j);
        let at = rows
            .iter()
            .find(|r| step.as_deref() == Some(s.text(r, "step")))
            .or(rows.first());
        let _ = write!(
            h,
            "<tr><td class=\"cell\">{}</td><td>{}</td><td>{}</td>",
            label_cell(&run.label(&j.0)),
            esc(&j.1),
            rows.len()
        );
        for c in cols {
            let v = at.map_or("", |r| s.text(r, c));
            let _ = write!(h, "<td data-col=\"{c}\">{}</td>", esc(v));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></div>\n");
    h
}

/// A cell's label, breakable after each parameter (`a=1,b=2`): a long label wraps in its
/// column instead of widening the table.
fn label_cell(label: &str) -> String {
    esc(label).replace(',', ",<wbr>")
}

/// A column's header: its name, breakable after each `_` so a narrow column's header wraps
/// instead of widening the table, with the name in words as the tooltip.
fn header_cell(column: &str) -> String {
    format!(
        "<th title=\"{}\">{}</th>",
        esc(words(column)),
        esc(column).replace('_', "_<wbr>")
    )
}

/// A number short enough for a narrow column: four significant digits (integers whole).
pub fn short(v: Option<f64>) -> String {
    match v {
        None => String::new(),
        Some(x) if x == 0.0 || x.abs() >= 1000.0 => format!("{x:.0}"),
        Some(x) => {
            let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
            format!("{x:.digits$}")
        }
    }
}

/// compare's CSV as a table that fits the page: headers break after `_`, a number written with
/// more than four significant digits is shown with four (the figure as written is its
/// tooltip), and the `cell` and `note` texts wrap.
pub fn csv_table(csv: &str, class: &str) -> String {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(csv.as_bytes());
    let mut h = format!("<div class=\"scroll\"><table class=\"{class}\">");
    let mut header: Vec<String> = Vec::new();
    for (i, rec) in reader.records().filter_map(Result::ok).enumerate() {
        h.push_str("<tr>");
        for (k, cell) in rec.iter().enumerate() {
            if i == 0 {
                header.push(cell.to_owned());
                let _ = write!(h, "<th>{}</th>", esc(cell).replace('_', "_<wbr>"));
                continue;
            }
            let col = header.get(k).map_or("", String::as_str);
            let shown = match cell.parse::<f64>() {
                Ok(x) if x.is_finite() && cell.len() > 8 => short(Some(x)),
                _ => cell.to_owned(),
            };
            if shown == cell {
                let _ = write!(h, "<td data-col=\"{}\">{}</td>", esc(col), esc(cell));
            } else {
                let _ = write!(
                    h,
                    "<td data-col=\"{}\" title=\"{}\">{}</td>",
                    esc(col),
                    esc(cell),
                    esc(&shown)
                );
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></div>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_significant_digits() {
        let got: Vec<String> = [
            None,
            Some(0.0),
            Some(0.012345),
            Some(4.56789),
            Some(123.456),
            Some(98765.4),
        ]
        .map(short)
        .to_vec();
        assert_eq!(got, ["", "0", "0.01235", "4.568", "123.5", "98765"]);
    }

    #[test]
    fn a_long_figure_is_shortened_with_the_written_one_as_tooltip() {
        let h = csv_table("metric,ci_low,n\np99_ms,-102.1043739828639,1\n", "compare");
        assert!(h.contains("<th>ci_<wbr>low</th>"), "{h}");
        assert!(
            h.contains("<td data-col=\"ci_low\" title=\"-102.1043739828639\">-102.1</td>"),
            "{h}"
        );
        assert!(h.contains("<td data-col=\"n\">1</td>"), "{h}");
    }
}
