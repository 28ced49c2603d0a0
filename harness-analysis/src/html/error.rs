//! Why a report could not be written. Every variant names the file.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{path}: not a result folder (it needs summary.csv; pass a folder written by `harness run`)")]
    NotARun { path: PathBuf },
    #[error("{path}: line {line}: malformed CSV: {message}")]
    Csv {
        path: PathBuf,
        line: u64,
        message: String,
    },
    #[error("{path}: {message}")]
    Hlog { path: PathBuf, message: String },
    #[error("drawing a chart: {0}")]
    Chart(String),
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `compare`'s verdicts for two runs could not be built.
    #[error(transparent)]
    Compare(#[from] crate::compare::CompareError),
    #[error(transparent)]
    Render(#[from] crate::compare::RenderError),
}
