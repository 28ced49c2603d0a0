//! One shard's result folder as the merge reads it: `run.json`, `summary.csv` (through
//! compare's reader, so the merge reads exactly what `compare` and `gate` read),
//! `timeseries.csv` as raw rows, and `latency.hlog`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::merge::error::MergeError;
use crate::merge::hlog_read::{self, Hlog};
use harness_results::read::{self as load, RunData};

/// `timeseries.csv` as written: its header and rows of text.
#[derive(Debug, Clone, Default)]
pub struct Series {
    pub header: Vec<String>,
    pub rows: Vec<csv::StringRecord>,
}

impl Series {
    /// The text of `column` in `row` ("" when absent).
    pub fn field<'a>(&self, row: &'a csv::StringRecord, column: &str) -> &'a str {
        self.header
            .iter()
            .position(|h| h == column)
            .and_then(|i| row.get(i))
            .unwrap_or("")
            .trim()
    }
}

/// A shard's folder, read whole.
#[derive(Debug, Clone)]
pub struct ShardFolder {
    pub path: PathBuf,
    pub run: Value,
    pub shard: u32,
    pub shards: u32,
    pub summary: RunData,
    pub series: Series,
    pub hlog: Hlog,
}

impl ShardFolder {
    /// `I/N (path)`, how messages name this shard.
    pub fn name(&self) -> String {
        format!(
            "shard {}/{} ({})",
            self.shard,
            self.shards,
            self.path.display()
        )
    }
}

fn not_a_result(path: &Path, reason: impl Into<String>) -> MergeError {
    MergeError::NotAResult {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// Reads the folder at `path`.
pub fn read(path: &Path) -> Result<ShardFolder, MergeError> {
    if !path.is_dir() {
        return Err(not_a_result(
            path,
            "not a folder (pass the result folders written by `harness run --shard I/N`)",
        ));
    }
    let run_path = path.join("run.json");
    let text = std::fs::read_to_string(&run_path).map_err(|source| MergeError::Io {
        path: run_path.clone(),
        source,
    })?;
    let run: Value = serde_json::from_str(&text)
        .map_err(|e| not_a_result(&run_path, format!("not JSON: {e}")))?;
    let number = |key: &str, default: u64| -> Result<u32, MergeError> {
        match &run[key] {
            Value::Null => Ok(default as u32),
            v => v.as_u64().map(|n| n as u32).ok_or_else(|| {
                not_a_result(&run_path, format!("`{key}` is {v}, not a whole number"))
            }),
        }
    };
    // Folders from before sharding are the whole schedule: shard 0 of 1.
    let shard = number("shard", 0)?;
    let shards = number("shards", 1)?;
    let summary = load::load(path).map_err(|e| not_a_result(path, e.to_string()))?;
    let series = read_series(&path.join("timeseries.csv"))?;
    let hlog = hlog_read::read(&path.join("latency.hlog"))?;
    Ok(ShardFolder {
        path: path.to_owned(),
        run,
        shard,
        shards,
        summary,
        series,
        hlog,
    })
}

fn read_series(path: &Path) -> Result<Series, MergeError> {
    let file = std::fs::File::open(path).map_err(|source| MergeError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(file);
    let csv_err = |e: csv::Error| not_a_result(path, format!("malformed CSV: {e}"));
    let header: Vec<String> = reader
        .headers()
        .map_err(csv_err)?
        .iter()
        .map(|h| h.trim().to_owned())
        .collect();
    let mut rows = Vec::new();
    for rec in reader.records() {
        rows.push(rec.map_err(csv_err)?);
    }
    Ok(Series { header, rows })
}
