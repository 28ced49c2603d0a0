//! `latency.hlog`: the HdrHistogram interval log of every sampled second, appended to the file
//! as each second ends. Each second's lines go out in one `write` and the header is written
//! first, so the file is a valid interval log at every moment, even after a kill; and nothing of
//! a second is kept in memory once it is written.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use hdrhistogram::Histogram;

/// The interval log of one run, open for appending.
pub struct HlogWriter {
    file: File,
    pending: Vec<u8>,
    /// The first histogram of this second that could not be serialized: reported by
    /// [`HlogWriter::flush_second`], so a lost histogram fails the job instead of vanishing.
    failed: Option<String>,
}

impl HlogWriter {
    /// Creates `path` (truncating it) and writes the log header with `start` as base time.
    pub fn create(path: &Path, start: std::time::SystemTime) -> std::io::Result<HlogWriter> {
        let mut text = Vec::new();
        let mut ser = hdrhistogram::serialization::V2DeflateSerializer::new();
        hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder::new()
            .add_comment("harness latency log: tags <cell_id>/r<repetition>/<histogram>, values in microseconds")
            .with_start_time(start)
            .with_base_time(start)
            .begin_log_with(&mut text, &mut ser)
            .map_err(|e| std::io::Error::other(format!("hlog header: {e:?}")))?;
        text.extend_from_slice(b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n");
        let mut file = File::create(path)?;
        file.write_all(&text)?;
        Ok(HlogWriter {
            file,
            pending: Vec::new(),
            failed: None,
        })
    }

    /// Adds one interval histogram to the current second; `start` is seconds since the log's
    /// base time. Written by [`HlogWriter::flush_second`], which also reports a failure here.
    pub fn push(&mut self, tag: &str, start: f64, len: f64, h: &Histogram<u64>) {
        use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
        let mut ser = hdrhistogram::serialization::V2DeflateSerializer::new();
        // A tag the log format cannot carry would be written without it: as lost as unwritten.
        let written = Tag::new(tag)
            .ok_or_else(|| "the tag has a character the log format forbids".to_owned())
            .and_then(|tag| {
                let mut w = IntervalLogWriterBuilder::new()
                    .begin_log_with(&mut self.pending, &mut ser)
                    .map_err(|e| format!("{e:?}"))?;
                w.write_histogram(
                    h,
                    std::time::Duration::from_secs_f64(start.max(0.0)),
                    std::time::Duration::from_secs_f64(len),
                    Some(tag),
                )
                .map_err(|e| format!("{e:?}"))
            });
        if let Err(e) = written {
            self.failed
                .get_or_insert(format!("latency.hlog: histogram {tag} not written: {e}"));
        }
    }

    /// Writes the current second's lines in one `write`.
    /// Fails if a histogram of this second could not be serialized or the write fails.
    pub fn flush_second(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.failed.take() {
            self.pending.clear();
            return Err(std::io::Error::other(e));
        }
        if self.pending.is_empty() {
            return Ok(());
        }
        self.file.write_all(&self.pending)?;
        self.pending.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_that_cannot_be_written_fails_the_second() {
        let dir = tempfile::tempdir().unwrap();
        let mut log =
            HlogWriter::create(&dir.path().join("l.hlog"), std::time::SystemTime::now()).unwrap();
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record(100).unwrap();
        log.push("ok/latency", 0.0, 1.0, &h);
        log.flush_second().unwrap();
        // A tag with a comma cannot be written in the log's CSV-like lines.
        log.push("bad,tag", 1.0, 1.0, &h);
        let e = log.flush_second().unwrap_err().to_string();
        assert!(e.contains("histogram bad,tag not written"), "{e}");
        // The failure is reported once; the next second is written again.
        log.push("ok/latency", 2.0, 1.0, &h);
        log.flush_second().unwrap();
        let text = std::fs::read_to_string(dir.path().join("l.hlog")).unwrap();
        assert_eq!(text.matches("Tag=ok/latency").count(), 2, "{text}");
        assert!(!text.contains("bad"), "{text}");
    }
}
