//! Why a comparison, a gate or a rendering could not be made. Every message names the flag,
//! the file or the column, and the fix; `harness` turns each into exit 3 (invalid input).

use std::path::PathBuf;

use harness_model::rules::{RuleError, RulesFileError};
use harness_results::read::LoadError;

/// Why `compare` or `gate` could not build its model from the arguments and the runs.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("--threshold {0}: must be a percentage >= 0")]
    Threshold(f64),
    #[error("--alpha {0}: must be in (0, 1)")]
    Alpha(f64),
    #[error("--block must be >= 1 second")]
    Block,
    #[error("--resamples {0}: use 100..=1000000 (>= 1000 recommended)")]
    Resamples(usize),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("--reference {0}: write KEY=VALUE, e.g. broker.useReentrantLockWhenPutMessage=false")]
    ReferenceSyntax(String),
    #[error(transparent)]
    Reference(#[from] PairError),
    #[error("give either CANDIDATE or --reference, not both")]
    Both,
    #[error("nothing to compare: give CANDIDATE (another run) or --reference KEY=VALUE (cells within {})", base.display())]
    Nothing { base: PathBuf },
    #[error("--metric {metric}: no such column in {}", run.display())]
    NoColumn { metric: String, run: PathBuf },
    #[error("{}: cannot read rules file", path.display())]
    ReadRules {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The rules file's own message (harness-model's parser names the line and the fix). Shown
    /// in the message rather than chained as a source, so `{:#}` says it once.
    #[error("{}: {error}", path.display())]
    Rules {
        path: PathBuf,
        error: RulesFileError,
    },
    /// A default `METRIC: regression <= T%` rule did not parse.
    #[error("{0}")]
    DefaultRule(RuleError),
}

/// Why `--reference KEY=VALUE` pairs no cells of a run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PairError {
    #[error("{}: no column `param_{key}`; parameters in this run: {}", run.display(), if params.is_empty() { "(none)".to_string() } else { params.join(", ") })]
    NoParameter {
        run: PathBuf,
        key: String,
        params: Vec<String>,
    },
    #[error("{}: no cell has {key}={value}; values present: {}", run.display(), present.join(", "))]
    NoValue {
        run: PathBuf,
        key: String,
        value: String,
        present: Vec<String>,
    },
}

/// A rule's `where` (or `allow_invalid`'s) names a parameter the run does not have.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("where: no parameter `{key}` in {} (parameters: {})", run.display(), params.join(", "))]
pub struct ScopeError {
    pub run: PathBuf,
    pub key: String,
    pub params: Vec<String>,
}

/// Writing a comparison as CSV or JSON failed (in memory: not expected to happen).
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    Csv(#[from] csv::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Utf8(#[from] std::string::FromUtf8Error),
}
