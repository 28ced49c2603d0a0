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
        })
    }

    /// Adds one interval histogram to the current second; `start` is seconds since the log's
    /// base time. Written by [`HlogWriter::flush_second`].
    pub fn push(&mut self, tag: &str, start: f64, len: f64, h: &Histogram<u64>) {
        let mut ser = hdrhistogram::serialization::V2DeflateSerializer::new();
        let Ok(mut w) = hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder::new()
            .begin_log_with(&mut self.pending, &mut ser)
        else {
            return;
        };
        let tag = hdrhistogram::serialization::interval_log::Tag::new(tag);
        let _ = w.write_histogram(
            h,
            std::time::Duration::from_secs_f64(start.max(0.0)),
            std::time::Duration::from_secs_f64(len),
            tag,
        );
    }

    /// Writes the current second's lines in one `write`.
    pub fn flush_second(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.file.write_all(&self.pending)?;
        self.pending.clear();
        Ok(())
    }
}
