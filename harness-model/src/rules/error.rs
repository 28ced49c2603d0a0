//! Why a rule or a rules file does not parse. The texts are the ones users see after
//! `rule `...`: ` or the rules file's path; tests in rules/tests.rs pin the words.

use std::fmt;

/// The one shape a relative rule has, repeated in each of its messages.
const RELATIVE_SHAPE: &str = "write `METRIC: regression <= N%`";

/// Where the parser stood when it wanted something else.
#[derive(Debug, Clone, PartialEq)]
pub enum Place {
    End,
    /// Before this token, as shown to the user (`` `50` ``, `"x"`).
    Before(String),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::End => f.write_str("at the end"),
            Place::Before(token) => write!(f, "before {token}"),
        }
    }
}

/// What is wrong with the text of one rule. Tokens are carried as shown to the user.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SyntaxError {
    #[error("`{0}` is not a number")]
    NotANumber(String),
    #[error("unterminated string")]
    UnterminatedString,
    #[error("unexpected character `{0}`")]
    UnexpectedChar(char),
    #[error("expected `{op}` {at}")]
    Expected { op: &'static str, at: Place },
    #[error("expected a name or value, found {0}")]
    NameOrValue(String),
    #[error("expected a name or value at the end")]
    NameOrValueAtEnd,
    #[error("expected a value, found {0}")]
    Value(String),
    #[error("expected a value at the end")]
    ValueAtEnd,
    #[error("at(...) takes a column name first")]
    AtColumn,
    #[error("at(column, param = value, ...) needs at least one parameter")]
    AtParameters,
    #[error("unknown function `{0}` (known: abs, min, max, at)")]
    UnknownFunction(String),
    #[error("expected a metric before `:`, found {0}")]
    RelativeMetric(String),
    #[error("unknown relative rule; {RELATIVE_SHAPE}")]
    RelativeWord,
    #[error("expected `<=` or `<`; {RELATIVE_SHAPE}")]
    RelativeComparison,
    #[error("expected a percentage; {RELATIVE_SHAPE}")]
    RelativeLimit,
    #[error("expected `%` at the end; {RELATIVE_SHAPE}")]
    RelativePercent,
    #[error("expected a comparison (< <= > >= == !=) after the left side")]
    Comparison,
    /// Text left after a whole rule: the first token left over.
    #[error("unexpected {0}")]
    Trailing(String),
}

/// A rule that does not parse: its text and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("rule `{rule}`: {problem}")]
pub struct RuleError {
    pub rule: String,
    pub problem: SyntaxError,
}

/// Why a rules file (or a profile's `[gate]` table) cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RulesFileError {
    /// Not TOML at all; toml's own message names the line.
    /// (toml's errors are boxed: they are large, and callers wrap this one in their own.)
    #[error("{0}")]
    Toml(Box<toml::de::Error>),
    #[error("`gate` must be a table")]
    GateNotATable,
    #[error("no [gate] table (and no top-level `rules`/`[[rule]]`) found")]
    NoGate,
    /// A key of `[gate]` of the wrong type, or one it does not know.
    #[error("[gate]: {0}")]
    Gate(Box<toml::de::Error>),
    #[error(transparent)]
    Rule(#[from] RuleError),
    /// A `where` value that is a table or a list (`value` as written in TOML).
    #[error("where.{key}: `{value}` must be a string, number or boolean")]
    ScopeValue { key: String, value: toml::Value },
    #[error("threshold = {0}: must be a percentage in 0..=1000")]
    Threshold(f64),
    #[error("alpha = {0}: must be in (0, 1)")]
    Alpha(f64),
}
