//! Reading `latency.hlog` back: every interval histogram with its tag and its place on the wall
//! clock (the log's base time plus the interval's start).

use std::path::Path;

use base64::Engine;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use crate::merge::error::MergeError;

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
pub fn decode(encoded: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("not an HdrHistogram: {e:?}"))
}

/// Reads `path`.
pub fn read(path: &Path) -> Result<Hlog, MergeError> {
    let text = std::fs::read(path).map_err(|source| MergeError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse(&text).map_err(|reason| MergeError::Hlog {
        path: path.to_owned(),
        reason,
    })
}

/// Parses the text of an interval log.
pub fn parse(text: &[u8]) -> Result<Hlog, String> {
    let mut log = Hlog::default();
    for (n, item) in IntervalLogIterator::new(text).enumerate() {
        match item.map_err(|e| format!("entry {}: malformed: {e:?}", n + 1))? {
            LogEntry::BaseTime(t) => log.base = t.as_secs_f64(),
            LogEntry::StartTime(_) => {}
            LogEntry::Interval(i) => {
                let tag = i
                    .tag()
                    .map(|t| t.as_str().to_owned())
                    .ok_or_else(|| format!("entry {}: an interval without a tag", n + 1))?;
                let hist = decode(i.encoded_histogram())
                    .map_err(|e| format!("entry {} ({tag}): {e}", n + 1))?;
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
