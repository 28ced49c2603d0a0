//! Reading result folders: `summary.csv` (one row per cell, repetition and step) and,
//! when present, `timeseries.csv` (one row per second). Columns are matched by name so
//! extra or reordered columns are fine; errors name the file, the line and the fix.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Columns of `summary.csv` that are text, never numbers.
const TEXT_COLUMNS: &[&str] = &[
    "profile",
    "cell_id",
    "step",
    "invalid_reason",
    // `;`-separated kind names (`InvalidKind::cell`).
    "invalid_kinds",
    "phase",
    "slo_failed",
    "knee_limited_by",
    // What a fault injector did in the second (timeseries.csv).
    "event",
    // Per-broker counts of a cluster, `broker-0=N;broker-1=M`.
    "broker_ok",
    "broker_busy",
    // Where a job's order was checked: `pull` or `store` (summary.csv).
    "order_source",
    "broker_consumed",
    "broker_lag_max",
    "broker_acked_lost",
    "broker_phantom",
    "broker_duplicates",
    "knee_broker_share",
    // A cluster's per-broker disk-full figures (harness/src/report/disk_cols.rs).
    "broker_not_available_disk_full",
    "broker_write_blocks",
    "broker_write_block_ms",
    // The brokerName a fault hit.
    "fault_broker",
];
/// Columns every `summary.csv` must have for cells to be matched at all.
const REQUIRED_SUMMARY: &[&str] = &["cell_id", "repetition"];
/// Columns a `timeseries.csv` must have to be usable for the block bootstrap.
const REQUIRED_TIMESERIES: &[&str] = &["cell_id", "repetition", "phase"];

/// Why a result could not be read. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: no such file or folder (pass a result folder holding summary.csv, or a summary.csv file)")]
    NotFound { path: PathBuf },
    #[error(
        "{path}: cannot read (pass a result folder holding summary.csv, or a summary.csv file)"
    )]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: line {line}: malformed CSV: {message} (every row needs the same number of fields as the header)")]
    Csv {
        path: PathBuf,
        line: u64,
        message: String,
    },
    #[error("{path}: missing column `{column}` (the header must name it; was this file written by `harness run`?)")]
    MissingColumn { path: PathBuf, column: String },
    #[error("{path}: line {line}: column `{column}`: `{value}` is not a number (write a number, true/false, or leave it empty for unknown)")]
    NotNumeric {
        path: PathBuf,
        line: u64,
        column: String,
        value: String,
    },
    #[error("{path}: no data rows (the run produced no results)")]
    Empty { path: PathBuf },
}

/// Identity of a cell across runs: its parameter values plus the step. `cell_id` is not
/// part of it on purpose, because two runs of different profiles number cells differently.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct CellKey {
    /// `param_*` columns with the prefix removed, e.g. `broker.sendMessageThreadPoolNums`.
    pub params: BTreeMap<String, String>,
    /// Empty except in step-load runs.
    pub step: String,
}

impl CellKey {
    /// Compact label: `k=v,k=v[,step=s]`, or `-` for a run with a single unparameterised cell.
    /// Keys are shortened to their last dotted segment (`broker.x` → `x`) when that stays
    /// unambiguous among `keys`.
    pub fn label(&self, keys: &[String]) -> String {
        let short = |k: &str| -> String {
            let tail = k.rsplit('.').next().unwrap_or(k);
            let clashes = keys
                .iter()
                .filter(|o| o.rsplit('.').next().unwrap_or(o) == tail)
                .count();
            if clashes > 1 {
                k.to_string()
            } else {
                tail.to_string()
            }
        };
        let mut parts: Vec<String> = keys
            .iter()
            .filter_map(|k| self.params.get(k).map(|v| format!("{}={v}", short(k))))
            .collect();
        if !self.step.is_empty() {
            parts.push(format!("step={}", self.step));
        }
        if parts.is_empty() {
            "-".to_string()
        } else {
            parts.join(",")
        }
    }
}

/// (cell_id, repetition, step) of a per-second series.
pub type SeriesId = (String, String, String);
type Records = Vec<(u64, csv::StringRecord)>;

/// The column asked for exists neither in summary.csv nor as a derived metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no such column")]
pub struct NoSuchColumn;

/// One `summary.csv` row.
#[derive(Debug, Clone)]
pub struct Row {
    pub line: u64,
    pub cell_id: String,
    pub repetition: String,
    pub key: CellKey,
    /// Numeric values by column name; `None` means the cell was empty ("unknown").
    /// Booleans are stored as 1.0 / 0.0.
    pub values: BTreeMap<String, Option<f64>>,
    /// Text values by column name (profile, invalid_reason, unknown extra text columns).
    pub text: BTreeMap<String, String>,
}

impl Row {
    /// Value of a column, also answering derived per-class busy rates
    /// (`busy_<class>_rate` = `busy_<class>` / (`sent` − `dropped`), the denominator of
    /// `busy_rate`). `Err` if no such column exists.
    pub fn get(&self, name: &str) -> Result<Option<f64>, NoSuchColumn> {
        if let Some(v) = self.values.get(name) {
            return Ok(*v);
        }
        if let Some(class) = name.strip_suffix("_rate") {
            if class.starts_with("busy_") && self.values.contains_key(class) {
                let count = self.values.get(class).copied().flatten();
                let dropped = self.values.get("dropped").copied().flatten().unwrap_or(0.0);
                let sent = self
                    .values
                    .get("sent")
                    .copied()
                    .flatten()
                    .map(|s| s - dropped);
                return Ok(match (count, sent) {
                    (Some(c), Some(s)) if s > 0.0 => Some(c / s),
                    (Some(_), Some(_)) => Some(0.0),
                    _ => None,
                });
            }
        }
        Err(NoSuchColumn)
    }

    /// `valid` column: `None` when absent or empty.
    pub fn valid(&self) -> Option<bool> {
        self.values
            .get("valid")
            .copied()
            .flatten()
            .map(|v| v != 0.0)
    }

    /// The kinds of an invalid row, from `invalid_kinds` (empty when absent: a folder written
    /// before the column has no kinds, and its rows get no advice, only their reason's text).
    pub fn invalid_kinds(&self) -> Vec<crate::InvalidKind> {
        self.text
            .get("invalid_kinds")
            .map_or_else(Vec::new, |c| crate::InvalidKind::parse_cell(c))
    }
}

/// One `measure` second of `timeseries.csv`.
#[derive(Debug, Clone, Default)]
pub struct Second {
    pub values: BTreeMap<String, Option<f64>>,
}

impl Second {
    pub fn get(&self, name: &str) -> Option<f64> {
        self.values.get(name).copied().flatten()
    }
}

/// A loaded result: rows grouped by cell, plus per-second series when available.
#[derive(Debug, Clone)]
pub struct RunData {
    pub source: PathBuf,
    pub rows: Vec<Row>,
    /// Cells in first-seen order, each with the indices of its rows (one per repetition).
    pub cells: BTreeMap<CellKey, Vec<usize>>,
    /// Per (cell_id, repetition, step): the measure-phase seconds in order.
    pub series: BTreeMap<SeriesId, Vec<Second>>,
    /// Parameter names present in this run (without `param_`).
    pub param_keys: Vec<String>,
    /// Column names present in summary.csv.
    pub columns: Vec<String>,
}

impl RunData {
    /// Per-second series of every repetition of a cell, in repetition order; empty if the
    /// run has no timeseries.csv.
    pub fn cell_series(&self, key: &CellKey) -> Vec<&[Second]> {
        let Some(idx) = self.cells.get(key) else {
            return Vec::new();
        };
        idx.iter()
            .filter_map(|&i| {
                let r = &self.rows[i];
                self.series
                    .get(&(r.cell_id.clone(), r.repetition.clone(), r.key.step.clone()))
                    .map(|s| s.as_slice())
            })
            .filter(|s| !s.is_empty())
            .collect()
    }

    pub fn cell_rows(&self, key: &CellKey) -> Vec<&Row> {
        self.cells
            .get(key)
            .map(|idx| idx.iter().map(|&i| &self.rows[i]).collect())
            .unwrap_or_default()
    }

    pub fn has_column(&self, name: &str) -> bool {
        self.columns.iter().any(|c| c == name)
    }
}

/// Locate summary.csv and (optional) timeseries.csv for a folder or file argument.
/// For a file `X.csv` other than `summary.csv`, the series is looked up as `X.timeseries.csv`
/// so a committed baseline `smoke.csv` can travel with `smoke.timeseries.csv`.
fn locate(path: &Path) -> (PathBuf, Option<PathBuf>) {
    if path.is_dir() {
        let ts = path.join("timeseries.csv");
        return (path.join("summary.csv"), ts.is_file().then_some(ts));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let ts = if path.file_name().is_some_and(|n| n == "summary.csv") {
        dir.join("timeseries.csv")
    } else {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        dir.join(format!("{stem}.timeseries.csv"))
    };
    (path.to_path_buf(), ts.is_file().then_some(ts))
}

fn parse_value(path: &Path, line: u64, column: &str, raw: &str) -> Result<Option<f64>, LoadError> {
    let v = raw.trim();
    if v.is_empty() {
        return Ok(None);
    }
    match v.to_ascii_lowercase().as_str() {
        "true" => return Ok(Some(1.0)),
        "false" => return Ok(Some(0.0)),
        _ => {}
    }
    // "NaN" parses as a float but carries no value: treat it like an empty cell.
    v.parse::<f64>()
        .map(|x| (!x.is_nan()).then_some(x))
        .map_err(|_| LoadError::NotNumeric {
            path: path.to_path_buf(),
            line,
            column: column.to_string(),
            value: v.to_string(),
        })
}

fn open_csv(path: &Path) -> Result<(Vec<String>, Records), LoadError> {
    let file = std::fs::File::open(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(file);
    let csv_err = |e: csv::Error| LoadError::Csv {
        path: path.to_path_buf(),
        line: e.position().map(|p| p.line()).unwrap_or(1),
        message: e.to_string(),
    };
    let header: Vec<String> = reader
        .headers()
        .map_err(csv_err)?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    let mut rows = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(csv_err)?;
        let line = rec.position().map(|p| p.line()).unwrap_or(0);
        if rec.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        rows.push((line, rec));
    }
    Ok((header, rows))
}

fn require(path: &Path, header: &[String], cols: &[&str]) -> Result<(), LoadError> {
    for c in cols {
        if !header.iter().any(|h| h == c) {
            return Err(LoadError::MissingColumn {
                path: path.to_path_buf(),
                column: (*c).to_string(),
            });
        }
    }
    Ok(())
}

/// Load a result folder or a summary CSV file.
pub fn load(path: &Path) -> Result<RunData, LoadError> {
    if !path.exists() {
        return Err(LoadError::NotFound {
            path: path.to_path_buf(),
        });
    }
    let (summary, ts) = locate(path);
    let (header, records) = open_csv(&summary)?;
    require(&summary, &header, REQUIRED_SUMMARY)?;
    if records.is_empty() {
        return Err(LoadError::Empty { path: summary });
    }
    let param_keys: Vec<String> = header
        .iter()
        .filter_map(|h| h.strip_prefix("param_").map(str::to_string))
        .collect();
    let mut rows = Vec::with_capacity(records.len());
    let mut cells: BTreeMap<CellKey, Vec<usize>> = BTreeMap::new();
    for (line, rec) in records {
        let mut key = CellKey {
            params: BTreeMap::new(),
            step: String::new(),
        };
        let mut values = BTreeMap::new();
        let mut text = BTreeMap::new();
        let (mut cell_id, mut repetition) = (String::new(), String::new());
        for (col, raw) in header.iter().zip(rec.iter()) {
            let raw = raw.trim();
            if let Some(p) = col.strip_prefix("param_") {
                key.params.insert(p.to_string(), raw.to_string());
            } else if col == "step" {
                key.step = raw.to_string();
            } else if col == "cell_id" {
                cell_id = raw.to_string();
            } else if col == "repetition" {
                repetition = raw.to_string();
            } else if TEXT_COLUMNS.contains(&col.as_str()) {
                text.insert(col.clone(), raw.to_string());
            } else {
                match parse_value(&summary, line, col, raw) {
                    Ok(v) => {
                        values.insert(col.clone(), v);
                    }
                    // Unknown extra columns may legitimately hold text: keep them as text.
                    Err(_) if !is_summary_numeric(col) => {
                        text.insert(col.clone(), raw.to_string());
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        cells.entry(key.clone()).or_default().push(rows.len());
        rows.push(Row {
            line,
            cell_id,
            repetition,
            key,
            values,
            text,
        });
    }
    let series = match ts {
        Some(ts) => load_series(&ts)?,
        None => BTreeMap::new(),
    };
    Ok(RunData {
        source: path.to_path_buf(),
        rows,
        cells,
        series,
        param_keys,
        columns: header,
    })
}

fn load_series(path: &Path) -> Result<BTreeMap<SeriesId, Vec<Second>>, LoadError> {
    let (header, records) = open_csv(path)?;
    require(path, &header, REQUIRED_TIMESERIES)?;
    let mut out: BTreeMap<(String, String, String), Vec<(f64, Second)>> = BTreeMap::new();
    for (line, rec) in records {
        let field = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .and_then(|i| rec.get(i))
                .unwrap_or("")
                .trim()
                .to_string()
        };
        if field("phase") != "measure" {
            continue;
        }
        let id = (field("cell_id"), field("repetition"), field("step"));
        let mut sec = Second::default();
        for (col, raw) in header.iter().zip(rec.iter()) {
            if TEXT_COLUMNS.contains(&col.as_str())
                || col == "cell_id"
                || col == "repetition"
                || col == "profile"
            {
                continue;
            }
            match parse_value(path, line, col, raw) {
                Ok(v) => {
                    sec.values.insert(col.clone(), v);
                }
                Err(_) if !is_series_numeric(col) => {}
                Err(e) => return Err(e),
            }
        }
        let order = sec.get("second").unwrap_or(line as f64);
        out.entry(id).or_default().push((order, sec));
    }
    Ok(out
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut secs: Vec<Second> = v.into_iter().map(|(_, s)| s).collect();
            trim_drain(&mut secs);
            (k, secs)
        })
        .collect())
}

/// Drop trailing seconds in which nothing was sent although a rate was targeted: they are
/// the drain after the schedule (answers still arriving), not intervals of the load, and
/// would drag per-second means down. Such a second in the middle of a run is kept — there
/// it means the generator stalled, which is data.
fn trim_drain(secs: &mut Vec<Second>) {
    while secs.last().is_some_and(|s| {
        s.get("achieved_rate") == Some(0.0) && s.get("target_rate").is_some_and(|t| t > 0.0)
    }) {
        secs.pop();
    }
}

/// Whether `col` is a numeric column of the `summary.csv` contract ([`crate::columns`]): a
/// non-number there is an error, not text.
fn is_summary_numeric(col: &str) -> bool {
    crate::columns::SUMMARY_METRICS.contains(&col) && !TEXT_COLUMNS.contains(&col)
}

/// Whether `col` is a numeric column of the `timeseries.csv` contract.
fn is_series_numeric(col: &str) -> bool {
    crate::columns::TIMESERIES_COLUMNS.contains(&col) && !TEXT_COLUMNS.contains(&col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sec(target: f64, achieved: f64) -> Second {
        let mut s = Second::default();
        s.values.insert("target_rate".into(), Some(target));
        s.values.insert("achieved_rate".into(), Some(achieved));
        s
    }

    #[test]
    fn a_consumer_runs_order_source_is_text_not_a_bad_number() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("summary.csv"),
            "cell_id,repetition,order_source,ok_rate\nc1,1,pull,5\n",
        )
        .unwrap();
        let run = load(dir.path()).expect("a run with consumers loads");
        assert_eq!(run.rows.len(), 1);
        assert_eq!(run.rows[0].get("ok_rate"), Ok(Some(5.0)));
    }

    #[test]
    fn a_cluster_run_s_per_broker_disk_columns_are_text() {
        // Every [cluster] job writes them (fidelity row 8 met them first: "broker-0=0").
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("summary.csv"),
            "cell_id,repetition,broker_not_available_disk_full,broker_write_blocks,broker_write_block_ms,ok_rate\n\
             c1,1,broker-0=0,broker-0=0,broker-0=,5\n",
        )
        .unwrap();
        let run = load(dir.path()).expect("a cluster run loads");
        assert_eq!(run.rows[0].get("ok_rate"), Ok(Some(5.0)));
    }

    /// The kinds a row was written with are the kinds it is read back with.
    #[test]
    fn invalid_kinds_are_written_and_read_back_as_kinds() {
        use crate::summary::{summary_csv, SummaryRow};
        use crate::InvalidKind;
        let row = |cell: &str, kinds: Vec<InvalidKind>| SummaryRow {
            cell_id: cell.into(),
            valid: kinds.is_empty(),
            invalid_reason: if kinds.is_empty() { "" } else { "why" }.into(),
            invalid_kinds: kinds,
            ..SummaryRow::default()
        };
        let rows = [
            row("a", vec![InvalidKind::LagP99]),
            row(
                "b",
                vec![InvalidKind::BrokerExited, InvalidKind::ConsumersBehind],
            ),
            row("c", Vec::new()),
        ];
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("summary.csv"),
            summary_csv(&[], &rows).unwrap(),
        )
        .unwrap();
        let run = load(dir.path()).expect("loads");
        let back: Vec<Vec<InvalidKind>> = run.rows.iter().map(Row::invalid_kinds).collect();
        let written: Vec<Vec<InvalidKind>> = rows.iter().map(|r| r.invalid_kinds.clone()).collect();
        assert_eq!(back, written);
    }

    #[test]
    fn trailing_drain_seconds_are_dropped() {
        let mut v = vec![
            sec(10.0, 10.0),
            sec(10.0, 0.0),
            sec(10.0, 9.0),
            sec(10.0, 0.0),
            sec(10.0, 0.0),
        ];
        trim_drain(&mut v);
        assert_eq!(v.len(), 3, "only the trailing zero-send seconds go");
        let mut v = vec![sec(0.0, 0.0)];
        trim_drain(&mut v);
        assert_eq!(v.len(), 1, "no target rate: nothing to judge");
    }
}
