//! RocketMQ's properties format and `--set` arguments.

use super::error::ConfigError;

/// One explicitly set key, with where it was set, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: String,
    /// `path:line`, `--set`, or `(given)` for pairs handed in by code.
    pub origin: String,
}

/// Parses RocketMQ's properties format: `key=value` (or `key:value`, `key value`), `#` and `!`
/// comments, surrounding whitespace trimmed. Continuation lines are not supported.
pub fn parse_properties(text: &str, origin: &str) -> Result<Vec<(String, String)>, ConfigError> {
    Ok(parse_entries(text, origin)?
        .into_iter()
        .map(|e| (e.key, e.value))
        .collect())
}

/// [`parse_properties`], keeping each key's `origin:line`.
pub fn parse_entries(text: &str, origin: &str) -> Result<Vec<Entry>, ConfigError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let split = line
            .find(['=', ':'])
            .or_else(|| line.find(char::is_whitespace));
        let syntax = || ConfigError::Syntax {
            path: origin.to_owned(),
            line: i + 1,
            text: raw.to_owned(),
        };
        let Some(pos) = split else {
            return Err(syntax());
        };
        let key = line[..pos].trim();
        let value = line[pos + 1..].trim();
        if key.is_empty() {
            return Err(syntax());
        }
        out.push(Entry {
            key: key.to_owned(),
            value: value.to_owned(),
            origin: format!("{origin}:{}", i + 1),
        });
    }
    Ok(out)
}

/// Splits a `--set key=value` argument.
pub fn parse_override(arg: &str) -> Result<(String, String), ConfigError> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(ConfigError::Syntax {
            path: "--set".into(),
            line: 0,
            text: arg.to_owned(),
        }),
    }
}
