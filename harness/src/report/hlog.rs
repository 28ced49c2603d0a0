//! `latency.hlog`: the HdrHistogram interval log of every sampled second.

use hdrhistogram::Histogram;

/// Interval-log lines for one run: appended per interval, header written once.
pub struct HlogBuffer {
    text: Vec<u8>,
}

impl HlogBuffer {
    pub fn new(start: std::time::SystemTime) -> HlogBuffer {
        let mut text = Vec::new();
        let mut ser = hdrhistogram::serialization::V2DeflateSerializer::new();
        let _ = hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder::new()
            .add_comment("harness latency log: tags <cell_id>/r<repetition>/<histogram>, values in microseconds")
            .with_start_time(start)
            .with_base_time(start)
            .begin_log_with(&mut text, &mut ser);
        text.extend_from_slice(b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n");
        HlogBuffer { text }
    }

    /// Appends one interval histogram; `start` is seconds since the log's base time.
    pub fn push(&mut self, tag: &str, start: f64, len: f64, h: &Histogram<u64>) {
        let mut lines = Vec::new();
        let mut ser = hdrhistogram::serialization::V2DeflateSerializer::new();
        let Ok(mut w) = hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder::new()
            .begin_log_with(&mut lines, &mut ser)
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
        drop(w);
        self.text.extend_from_slice(&lines);
    }

    pub fn bytes(&self) -> &[u8] {
        &self.text
    }
}
