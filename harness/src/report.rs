//! Outputs: `summary.csv` and `timeseries.csv` (a contract with `harness compare`), the
//! HdrHistogram interval log, `run.json`, and the final table. Every file is rewritten
//! atomically (temp file in the same directory + rename) after each cell.

use std::io::Write;
use std::path::Path;

use hdrhistogram::Histogram;

use crate::recorder::{BusyClass, Segment};

/// `summary.csv` columns before the `param_<key>` columns.
pub const SUMMARY_LEADING: &[&str] = &["profile", "cell_id", "repetition", "step"];

/// `summary.csv` columns after the `param_<key>` columns.
pub const SUMMARY_METRICS: &[&str] = &[
    "target_rate",
    "achieved_rate",
    "ok_rate",
    "duration_s",
    "sent",
    "ok",
    "busy",
    "busy_rate",
    "busy_pcbusy_clean_queue",
    "busy_timeout_clean_queue",
    "busy_rejectrequest",
    "busy_overload",
    "busy_pc_synchronized",
    "busy_other",
    "system_error",
    "flush_disk_timeout",
    "message_illegal",
    "other_codes",
    "timeouts",
    "dropped",
    "connection_errors",
    "attempts",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "service_p50_ms",
    "service_p99_ms",
    "service_max_ms",
    "lag_p50_us",
    "lag_p99_us",
    "lag_max_us",
    "busy_p99_ms",
    "period_in_queue_p50_ms",
    "period_in_queue_max_ms",
    "size_of_queue_max",
    "broker_cpu_avg",
    "broker_cpu_max",
    "broker_rss_max_mb",
    "harness_cpu_max",
    "broker_flow_control_total",
    "broker_counters_match",
    "valid",
    "invalid_reason",
];

/// `timeseries.csv` columns.
pub const TIMESERIES_COLUMNS: &[&str] = &[
    "profile",
    "cell_id",
    "repetition",
    "step",
    "second",
    "phase",
    "target_rate",
    "achieved_rate",
    "ok",
    "busy",
    "busy_pcbusy_clean_queue",
    "busy_timeout_clean_queue",
    "busy_rejectrequest",
    "busy_overload",
    "busy_pc_synchronized",
    "busy_other",
    "errors",
    "timeouts",
    "dropped",
    "p50_ms",
    "p99_ms",
    "max_ms",
    "broker_cpu",
    "broker_rss_mb",
    "harness_cpu",
    "send_queue_size",
    "send_queue_head_wait_ms",
    "page_cache_lock_ms",
];

/// The full `summary.csv` header for these axis keys.
pub fn summary_header(axis_keys: &[String]) -> Vec<String> {
    SUMMARY_LEADING
        .iter()
        .map(|s| s.to_string())
        .chain(axis_keys.iter().map(|k| format!("param_{k}")))
        .chain(SUMMARY_METRICS.iter().map(|s| s.to_string()))
        .collect()
}

/// Resource figures of a run, from the sampler.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    pub broker_cpu_avg: Option<f64>,
    pub broker_cpu_max: Option<f64>,
    pub broker_rss_max_mb: Option<f64>,
    pub harness_cpu_max: Option<f64>,
    pub broker_flow_control_total: Option<u64>,
    pub broker_counters_match: Option<bool>,
}

/// One `summary.csv` row.
#[derive(Debug, Clone)]
pub struct SummaryRow {
    pub profile: String,
    pub cell_id: String,
    pub label: String,
    pub repetition: u32,
    pub step: Option<usize>,
    pub params: Vec<String>,
    /// None in the closed loop.
    pub target_rate: Option<f64>,
    pub duration_s: f64,
    pub seg: SegmentFigures,
    pub res: Resources,
    pub valid: bool,
    pub invalid_reason: String,
}

/// The figures of one segment that go into a row.
#[derive(Debug, Clone, Default)]
pub struct SegmentFigures {
    pub sent: u64,
    pub ok: u64,
    pub busy: [u64; 6],
    pub system_error: u64,
    pub flush_disk_timeout: u64,
    pub message_illegal: u64,
    pub other_codes: u64,
    pub timeouts: u64,
    pub dropped: u64,
    pub connection_errors: u64,
    pub attempts: u64,
    /// Latency percentiles in µs: p50, p90, p99, p99.9, max.
    pub latency_us: [u64; 5],
    pub service_us: [u64; 3],
    pub lag_us: [u64; 3],
    pub busy_p99_us: u64,
    pub period_in_queue_ms: [u64; 2],
    pub size_of_queue_max: u64,
}

fn q(h: &Histogram<u64>, p: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(p)
    }
}

fn max(h: &Histogram<u64>) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.max()
    }
}

impl SegmentFigures {
    pub fn from_segment(s: &Segment) -> SegmentFigures {
        let c = &s.counts;
        SegmentFigures {
            sent: s.sent,
            ok: c.ok,
            busy: c.busy,
            system_error: c.system_error,
            flush_disk_timeout: c.flush_disk_timeout,
            message_illegal: c.message_illegal,
            other_codes: c.other_codes,
            timeouts: c.timeouts,
            dropped: c.dropped,
            connection_errors: c.connection_errors,
            attempts: s.attempts,
            latency_us: [
                q(&s.latency, 0.5),
                q(&s.latency, 0.9),
                q(&s.latency, 0.99),
                q(&s.latency, 0.999),
                max(&s.latency),
            ],
            service_us: [q(&s.service, 0.5), q(&s.service, 0.99), max(&s.service)],
            lag_us: [q(&s.lag, 0.5), q(&s.lag, 0.99), max(&s.lag)],
            busy_p99_us: q(&s.busy_latency, 0.99),
            period_in_queue_ms: [q(&s.period_in_queue, 0.5), max(&s.period_in_queue)],
            size_of_queue_max: max(&s.size_of_queue),
        }
    }

    pub fn busy_total(&self) -> u64 {
        self.busy.iter().sum()
    }
}

fn ms(us: u64) -> String {
    format!("{:.3}", us as f64 / 1000.0)
}

fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| format!("{v:.1}"))
}

impl SummaryRow {
    pub fn achieved_rate(&self) -> f64 {
        if self.duration_s > 0.0 {
            (self.seg.sent - self.seg.dropped) as f64 / self.duration_s
        } else {
            0.0
        }
    }

    pub fn ok_rate(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.seg.ok as f64 / self.duration_s
        } else {
            0.0
        }
    }

    pub fn busy_rate(&self) -> f64 {
        let on_wire = self.seg.sent - self.seg.dropped;
        if on_wire == 0 {
            0.0
        } else {
            self.seg.busy_total() as f64 / on_wire as f64
        }
    }

    /// The value of a `key_metric` column.
    pub fn metric(&self, name: &str) -> f64 {
        let s = &self.seg;
        match name {
            "ok_rate" => self.ok_rate(),
            "achieved_rate" => self.achieved_rate(),
            "busy_rate" => self.busy_rate(),
            "busy" => s.busy_total() as f64,
            "p50_ms" => s.latency_us[0] as f64 / 1000.0,
            "p90_ms" => s.latency_us[1] as f64 / 1000.0,
            "p99_ms" => s.latency_us[2] as f64 / 1000.0,
            "p999_ms" => s.latency_us[3] as f64 / 1000.0,
            "max_ms" => s.latency_us[4] as f64 / 1000.0,
            "service_p99_ms" => s.service_us[1] as f64 / 1000.0,
            "broker_cpu_avg" => self.res.broker_cpu_avg.unwrap_or(0.0),
            "timeouts" => s.timeouts as f64,
            _ => 0.0,
        }
    }

    pub fn record(&self) -> Vec<String> {
        let s = &self.seg;
        let mut r = vec![
            self.profile.clone(),
            self.cell_id.clone(),
            self.repetition.to_string(),
            self.step.map_or(String::new(), |i| i.to_string()),
        ];
        r.extend(self.params.iter().cloned());
        r.push(
            self.target_rate
                .map_or(String::new(), |t| format!("{t:.1}")),
        );
        r.push(format!("{:.1}", self.achieved_rate()));
        r.push(format!("{:.1}", self.ok_rate()));
        r.push(format!("{:.3}", self.duration_s));
        r.push(s.sent.to_string());
        r.push(s.ok.to_string());
        r.push(s.busy_total().to_string());
        r.push(format!("{:.6}", self.busy_rate()));
        r.extend(BusyClass::ALL.iter().map(|c| s.busy[c.index()].to_string()));
        for v in [
            s.system_error,
            s.flush_disk_timeout,
            s.message_illegal,
            s.other_codes,
            s.timeouts,
            s.dropped,
            s.connection_errors,
            s.attempts,
        ] {
            r.push(v.to_string());
        }
        r.extend(s.latency_us.iter().map(|&v| ms(v)));
        r.extend(s.service_us.iter().map(|&v| ms(v)));
        r.extend(s.lag_us.iter().map(|v| v.to_string()));
        r.push(ms(s.busy_p99_us));
        r.push(s.period_in_queue_ms[0].to_string());
        r.push(s.period_in_queue_ms[1].to_string());
        r.push(s.size_of_queue_max.to_string());
        r.push(opt(self.res.broker_cpu_avg));
        r.push(opt(self.res.broker_cpu_max));
        r.push(opt(self.res.broker_rss_max_mb));
        r.push(opt(self.res.harness_cpu_max));
        r.push(
            self.res
                .broker_flow_control_total
                .map_or(String::new(), |v| v.to_string()),
        );
        r.push(
            self.res
                .broker_counters_match
                .map_or(String::new(), |b| b.to_string()),
        );
        r.push(self.valid.to_string());
        r.push(self.invalid_reason.clone());
        r
    }
}

/// One `timeseries.csv` row (already formatted).
pub type TimeseriesRow = Vec<String>;

/// Writes `bytes` to `path` atomically: a temp file in the same directory, then rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = dir.join(format!(".{name}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// Renders a CSV document.
pub fn csv_bytes(header: &[String], rows: &[Vec<String>]) -> std::io::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header).map_err(std::io::Error::other)?;
    for r in rows {
        w.write_record(r).map_err(std::io::Error::other)?;
    }
    w.into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))
}

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

/// The final table, sorted by `key_metric` (best first), best and worst marked.
pub fn table(rows: &[SummaryRow], key_metric: &str, higher_better: bool) -> String {
    let mut order: Vec<&SummaryRow> = rows.iter().collect();
    order.sort_by(|a, b| {
        let (x, y) = (a.metric(key_metric), b.metric(key_metric));
        let o = x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
        if higher_better {
            o.reverse()
        } else {
            o
        }
    });
    let valid: Vec<&&SummaryRow> = order.iter().filter(|r| r.valid).collect();
    let best = valid
        .first()
        .map(|r| (r.cell_id.clone(), r.repetition, r.step));
    let worst = (valid.len() > 1)
        .then(|| {
            valid
                .last()
                .map(|r| (r.cell_id.clone(), r.repetition, r.step))
        })
        .flatten();
    // Wide enough for every label, so cells that differ only in their last value stay apart.
    let w = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 100);
    let mut out = String::new();
    out.push_str(&format!(
        "{:<2} {:<w$} {:>3} {:>4} {:>9} {:>9} {:>9} {:>7} {:>7} {:>8} {:>8} {:>9} {:>6} {:>6} {:>7}  {}\n",
        "", "cell", "rep", "step", "target/s", "achieved", "ok/s", "busy", "busy%", "p50 ms", "p99 ms", "max ms", "tmo", "drop", "brkCPU%", "valid"
    ));
    for r in order {
        let id = (r.cell_id.clone(), r.repetition, r.step);
        let mark = if Some(&id) == best.as_ref() {
            "★"
        } else if Some(&id) == worst.as_ref() {
            "✗"
        } else {
            ""
        };
        let mut label = r.label.clone();
        if label.chars().count() > w {
            label = label.chars().take(w - 1).collect::<String>() + "…";
        }
        out.push_str(&format!(
            "{:<2} {:<w$} {:>3} {:>4} {:>9} {:>9.0} {:>9.0} {:>7} {:>6.2}% {:>8.3} {:>8.3} {:>9.3} {:>6} {:>6} {:>7}  {}\n",
            mark,
            label,
            r.repetition,
            r.step.map_or("-".into(), |s| s.to_string()),
            r.target_rate.map_or("closed".into(), |t| format!("{t:.0}")),
            r.achieved_rate(),
            r.ok_rate(),
            r.seg.busy_total(),
            r.busy_rate() * 100.0,
            r.seg.latency_us[0] as f64 / 1000.0,
            r.seg.latency_us[2] as f64 / 1000.0,
            r.seg.latency_us[4] as f64 / 1000.0,
            r.seg.timeouts,
            r.seg.dropped,
            r.res.broker_cpu_avg.map_or("-".into(), |c| format!("{c:.0}")),
            if r.valid { "yes".to_owned() } else { format!("NO: {}", r.invalid_reason) }
        ));
    }
    out.push_str(&format!(
        "sorted by {key_metric} ({} is better); ★ best, ✗ worst among valid rows\n",
        if higher_better { "higher" } else { "lower" }
    ));
    out
}
