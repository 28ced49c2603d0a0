//! The files of an A/B result folder: `summary.csv` and `timeseries.csv` with the leading
//! `side`, `round` and `pass` columns (and `cpu_s_per_1k` at the end of the summary), and
//! `run.json` naming both sides. Each job's own folder (`jobs/<pass>-r<round>-<side>/`) keeps
//! the usual files of `harness run`.

use std::path::Path;

use serde::Serialize;

use crate::report::{summary_header, write_atomic, SummaryRecord, SummaryRow};

use super::verdict::{CPU_PER_1K_COLUMN, PASS_COLUMN, ROUND_COLUMN, SIDE_COLUMN};

/// One measured job of an A/B run.
#[derive(Debug, Clone)]
pub struct AbRow {
    pub side: &'static str,
    pub round: u32,
    pub pass: &'static str,
    /// Its summary row; `repetition` is the round, no `param_` columns.
    pub row: SummaryRow,
    /// The job's folder, relative to the A/B folder.
    pub dir: String,
}

impl AbRow {
    /// Broker CPU-seconds per 1,000 ok messages over the measured window: steadier than CPU %,
    /// because it does not move with the achieved rate.
    pub fn cpu_s_per_1k(&self) -> Option<f64> {
        let ok = self.row.seg.counts.ok;
        let cpu = self.row.res.broker_cpu_s?;
        (ok > 0).then(|| cpu / ok as f64 * 1000.0)
    }
}

#[derive(Serialize)]
struct AbRecord<'a> {
    side: &'a str,
    round: u32,
    pass: &'a str,
    summary: SummaryRecord<'a>,
    cpu_s_per_1k: Option<f64>,
}

/// The `summary.csv` header of an A/B folder.
pub fn ab_summary_header() -> Vec<String> {
    [SIDE_COLUMN, ROUND_COLUMN, PASS_COLUMN]
        .iter()
        .map(|s| s.to_string())
        .chain(summary_header(&[]))
        .chain([CPU_PER_1K_COLUMN.to_string()])
        .collect()
}

/// Rewrites `<dir>/summary.csv` atomically with every job so far.
pub fn write_summary(dir: &Path, rows: &[AbRow]) -> std::io::Result<()> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    w.write_record(ab_summary_header())
        .map_err(std::io::Error::other)?;
    for r in rows {
        w.serialize(AbRecord {
            side: r.side,
            round: r.round,
            pass: r.pass,
            summary: r.row.record(),
            cpu_s_per_1k: r.cpu_s_per_1k().map(|v| (v * 1e6).round() / 1e6),
        })
        .map_err(std::io::Error::other)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    write_atomic(&dir.join("summary.csv"), &bytes)
}

/// `<dir>/timeseries.csv`: every job's seconds, with `side`, `round`, `pass` in front and the
/// job's `repetition` replaced by its round.
pub fn write_timeseries(dir: &Path, rows: &[AbRow]) -> anyhow::Result<()> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    let mut header_written = false;
    let mut seen = std::collections::BTreeSet::new();
    for r in rows {
        if !seen.insert(r.dir.clone()) {
            continue;
        }
        let path = dir.join(&r.dir).join("timeseries.csv");
        let Ok(mut reader) = csv::Reader::from_path(&path) else {
            continue;
        };
        let header = reader.headers()?.clone();
        let rep = header.iter().position(|h| h == "repetition");
        if !header_written {
            let mut h = vec![SIDE_COLUMN, ROUND_COLUMN, PASS_COLUMN];
            h.extend(header.iter());
            w.write_record(&h)?;
            header_written = true;
        }
        let round = r.round.to_string();
        for rec in reader.records() {
            let rec = rec?;
            let mut out = vec![r.side, round.as_str(), r.pass];
            for (i, f) in rec.iter().enumerate() {
                out.push(if Some(i) == rep { round.as_str() } else { f });
            }
            w.write_record(&out)?;
        }
    }
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
    write_atomic(&dir.join("timeseries.csv"), &bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Resources, SegmentFigures};

    #[test]
    fn cpu_per_thousand_and_header() {
        let mut row = SummaryRow {
            profile: "p".into(),
            cell_id: "c".into(),
            label: "l".into(),
            repetition: 3,
            step: None,
            params: Vec::new(),
            target_rate: None,
            duration_s: 4.0,
            seg: SegmentFigures::default(),
            res: Resources {
                broker_cpu_s: Some(2.0),
                ..Resources::default()
            },
            valid: true,
            invalid_reason: String::new(),
            ..SummaryRow::default()
        };
        row.seg.counts.ok = 20_000;
        let r = AbRow {
            side: "a",
            round: 3,
            pass: "capacity",
            row,
            dir: "jobs/x".into(),
        };
        // 2 CPU-seconds over 20,000 messages = 0.1 s per 1,000.
        assert!((r.cpu_s_per_1k().unwrap() - 0.1).abs() < 1e-12);
        let h = ab_summary_header();
        assert_eq!(&h[..4], ["side", "round", "pass", "profile"]);
        assert_eq!(h.last().unwrap(), "cpu_s_per_1k");
        let dir = tempfile::tempdir().unwrap();
        write_summary(dir.path(), &[r]).unwrap();
        let text = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
        let line = text.lines().nth(1).unwrap();
        assert!(line.starts_with("a,3,capacity,p,c,3,"), "{line}");
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), h.len());
        let at = |name: &str| cells[h.iter().position(|c| c == name).unwrap()];
        assert_eq!(at("broker_cpu_s"), "2.000", "{line}");
        assert_eq!(at("valid"), "true", "{line}");
        assert_eq!(at("cpu_s_per_1k"), "0.1", "{line}");
    }
}
