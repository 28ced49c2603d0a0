//! Why a configuration could not be loaded.

use std::path::PathBuf;

use thiserror::Error;

use crate::keys::BadValue;

/// Why a configuration could not be loaded.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: expected key=value, got {text:?}")]
    Syntax {
        path: String,
        line: usize,
        text: String,
    },
    #[error("bad value for {key}: {value:?} ({reason})")]
    BadValue {
        key: String,
        value: String,
        reason: String,
    },
    /// `--strict` only: a key the broker does not know.
    #[error(
        "{origin}: unknown configuration key {key}{}",
        did_you_mean(suggestion)
    )]
    UnknownKey {
        key: String,
        /// `path:line` or `--set`.
        origin: String,
        suggestion: Option<String>,
    },
    #[error("contradictory configuration: {0}")]
    Contradiction(String),
}

/// `; did you mean X?`, or nothing.
pub(crate) fn did_you_mean(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!("; did you mean {s}?"),
        None => String::new(),
    }
}

impl From<BadValue> for ConfigError {
    fn from(b: BadValue) -> Self {
        ConfigError::BadValue {
            key: b.key,
            value: b.value,
            reason: b.reason,
        }
    }
}
