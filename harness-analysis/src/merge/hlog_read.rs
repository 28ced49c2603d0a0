//! Reading `latency.hlog` back: every interval histogram with its tag and its place on the wall
//! clock (the log's base time plus the interval's start).

use std::path::Path;

use base64::Engine;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use crate::merge::error::MergeError;

/// Why an interval log, or one histogram in it, cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum HlogError {
    #[error("not base64: {0}")]
    Base64(#[source] base64::DecodeError),
    #[error("not an HdrHistogram: {0}")]
    Histogram(String),
    #[error("entry {entry}: malformed: {detail}")]
    Malformed { entry: usize, detail: String },
    #[error("entry {0}: an interval without a tag")]
    NoTag(usize),
    #[error("entry {entry} ({tag}): {source}")]
    Entry {
        entry: usize,
        tag: String,
        #[source]
        source: Box<HlogError>,
    },
}

/// One interval of the log.
#[derive(Debug, Clone)]
pub struct Entry {
    pub tag: String,
    /// Seconds since the log's base time.
    pub start: f64,
    pub len: f64,
    pub hist: Histogram<u64>,
}

/// A whole interval log.
#[derive(Debug, Clone, Default)]
pub struct Hlog {
    /// Unix seconds; 0 when the log has no BaseTime (starts are then absolute).
    pub base: f64,
    pub entries: Vec<Entry>,
}

impl Entry {
    /// When the interval ended, Unix seconds.
    pub fn end_unix(&self, base: f64) -> f64 {
        base + self.start + self.len
    }
}

/// Decodes one V2 (deflate or not) histogram as the log stores it (base64).
pub fn decode(encoded: &str) -> Result<Histogram<u64>, HlogError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(HlogError::Base64)?;
    // The deserializer's error is Debug only.
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| HlogError::Histogram(format!("{e:?}")))
}

/// Reads `path`.
pub fn read(path: &Path) -> Result<Hlog, MergeError> {
    let text = std::fs::read(path).map_err(|source| MergeError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse(&text).map_err(|e| MergeError::Hlog {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

/// Parses the text of an interval log.
pub fn parse(text: &[u8]) -> Result<Hlog, HlogError> {
    let mut log = Hlog::default();
    for (n, item) in IntervalLogIterator::new(text).enumerate() {
        let malformed = |e| HlogError::Malformed {
            entry: n + 1,
            detail: format!("{e:?}"),
        };
        match item.map_err(malformed)? {
            LogEntry::BaseTime(t) => log.base = t.as_secs_f64(),
            LogEntry::StartTime(_) => {}
            LogEntry::Interval(i) => {
                let tag = i
                    .tag()
                    .map(|t| t.as_str().to_owned())
                    .ok_or(HlogError::NoTag(n + 1))?;
                let hist = decode(i.encoded_histogram()).map_err(|e| HlogError::Entry {
                    entry: n + 1,
                    tag: tag.clone(),
                    source: Box::new(e),
                })?;
                log.entries.push(Entry {
                    tag,
                    start: i.start_timestamp().as_secs_f64(),
                    len: i.duration().as_secs_f64(),
                    hist,
                });
            }
        }
    }
    Ok(log)
}
