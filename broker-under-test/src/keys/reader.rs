//! Typed reads from an effective `key → value` map, shared by the broker and store configs.

use std::{collections::BTreeMap, fmt, str::FromStr, time::Duration};

/// A value that does not parse as its key's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue {
    pub key: String,
    pub value: String,
    pub reason: String,
}

/// Reads typed values out of a map that holds every known key.
pub struct Reader<'a> {
    pub map: &'a BTreeMap<String, String>,
}

impl Reader<'_> {
    pub fn raw(&self, key: &str) -> &str {
        // Every key read here is in the key table, whose defaults seed the map.
        self.map.get(key).map(String::as_str).unwrap_or("")
    }

    pub fn get<T: FromStr>(&self, key: &str) -> Result<T, BadValue>
    where
        T::Err: fmt::Display,
    {
        let raw = self.raw(key);
        raw.parse::<T>().map_err(|e| BadValue {
            key: key.to_owned(),
            value: raw.to_owned(),
            reason: e.to_string(),
        })
    }

    /// Java's `Boolean.parseBoolean` accepts anything (non-"true" is false); we are stricter so
    /// that a typo does not silently switch a mode.
    pub fn bool(&self, key: &str) -> Result<bool, BadValue> {
        match self.raw(key).to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(BadValue {
                key: key.to_owned(),
                value: other.to_owned(),
                reason: "expected true or false".into(),
            }),
        }
    }

    pub fn millis(&self, key: &str) -> Result<Duration, BadValue> {
        Ok(Duration::from_millis(self.get::<u64>(key)?))
    }
}
