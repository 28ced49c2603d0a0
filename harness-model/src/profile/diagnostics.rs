//! Errors that point at a line of the profile (or at the `--set` argument), with "did you
//! mean" help.

use std::ops::Range;
use std::path::PathBuf;

/// A profile problem, located in the file (or on the command line for `--set`).
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    // The io error is shown in the message, not chained as a source, so `{:#}` says it once.
    #[error("cannot read profile {file}: {error}")]
    Io {
        file: PathBuf,
        error: std::io::Error,
    },
    #[error("{file}:{line}:{column}: {message}{}", help.as_deref().map(|h| format!("\n  help: {h}")).unwrap_or_default())]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        message: String,
        help: Option<String>,
    },
    #[error("--set {arg}: {message}")]
    Set { arg: String, message: String },
    #[error(transparent)]
    Cluster(#[from] PerBrokerKeyError),
}

/// A per-broker key (`broker.<i>.<key>`) for a broker the profile does not start; the message
/// starts with where the key was given (`file:line:column` or `--set ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: broker key `{key}` names broker {broker}, but the profile starts {brokers} broker{} (add [cluster] brokers = {} or more; brokers count from 0)", if *brokers == 1 { "" } else { "s" }, broker + 1)]
pub struct PerBrokerKeyError {
    pub origin: String,
    pub key: String,
    pub broker: usize,
    pub brokers: usize,
}

/// Why a table with one key replaced (`--set`, a matrix axis, a matrix cell) is refused:
/// serde's message for a key of the wrong type or name, or the table's own domain check.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TableError {
    /// Boxed: toml's error is large, and a cell's error carries one.
    #[error("{}", .0.message())]
    Toml(Box<toml::de::Error>),
    /// `key` is the key the check names, for the line a message points at.
    #[error("{message}")]
    Invalid { key: &'static str, message: String },
}

/// Why a whole section (`[knee]`, `[slo]`) given with `--set` is refused; the message starts
/// with the section's name.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SectionError {
    #[error("[{section}]: {}", .error.message().trim())]
    Toml {
        section: &'static str,
        error: Box<toml::de::Error>,
    },
    #[error("[{section}] is missing")]
    Missing { section: &'static str },
    #[error("[{section}]: {message}")]
    Invalid {
        section: &'static str,
        message: String,
    },
}

pub(super) struct Source<'a> {
    pub(super) file: String,
    pub(super) text: &'a str,
}

impl Source<'_> {
    pub(super) fn err(
        &self,
        span: Option<Range<usize>>,
        message: impl Into<String>,
        help: Option<String>,
    ) -> ProfileError {
        let (line, column) = match span {
            Some(r) => line_col(self.text, r.start),
            None => (1, 1),
        };
        ProfileError::Invalid {
            file: self.file.clone(),
            line,
            column,
            message: message.into(),
            help,
        }
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The closest candidate within a small (Levenshtein, in characters) edit distance; the first
/// listed wins a tie.
pub fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(word, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Adds "did you mean" / valid keys to serde's unknown-field and unknown-variant messages.
pub(super) fn help_for(message: &str) -> Option<String> {
    let quoted: Vec<&str> = message.split('`').skip(1).step_by(2).collect();
    let (bad, valid) = quoted.split_first()?;
    if !(message.starts_with("unknown field") || message.starts_with("unknown variant")) {
        return None;
    }
    let mut help = String::new();
    if let Some(best) = did_you_mean(bad, valid) {
        help.push_str(&format!("did you mean `{best}`? "));
    }
    help.push_str(&format!("valid: {}", valid.join(", ")));
    Some(help)
}

/// Best-effort span of `key = ...` inside `[table]`, for domain errors found after parsing.
pub(super) fn find_key_span(text: &str, table: &str, key: &str) -> Option<Range<usize>> {
    let header = format!("[{table}]");
    let start = text.find(&header)?;
    for line in text[start..].split_inclusive('\n').skip(1) {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') && !trimmed.starts_with("[[") {
            break;
        }
        if let Some(rest) = trimmed.strip_prefix(key) {
            if rest.trim_start().starts_with('=') {
                let pos = text[start..].find(line).map(|p| start + p)?;
                return Some(pos..pos + line.len());
            }
        }
    }
    Some(start..start + header.len())
}

/// Span of a quoted key such as `"broker.sendMessageThreadPoolNums" = [...]` (matrix axes).
pub(super) fn find_quoted_key_span(text: &str, key: &str) -> Option<Range<usize>> {
    let quoted = format!("\"{key}\"");
    let at = text.find(&quoted)?;
    Some(at..at + quoted.len())
}
