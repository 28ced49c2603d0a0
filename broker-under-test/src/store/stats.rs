//! StoreStatsService (§10): put counters, the put-time distribution, latency percentiles and TPS.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock::epoch_millis;

/// `putMessageDistributeTime` labels, in RocketMQ's order.
const DISTRIBUTE_LABELS: [&str; 13] = [
    "<=0ms",
    "0~10ms",
    "10~50ms",
    "50~100ms",
    "100~200ms",
    "200~500ms",
    "500ms~1s",
    "1~2s",
    "2~3s",
    "3~4s",
    "4~5s",
    "5~10s",
    "10s~",
];

/// Samples kept for `putTps` (one per second).
const TPS_SAMPLES: usize = 601;

fn distribute_index(ms: u64) -> usize {
    match ms {
        0 => 0,
        1..=9 => 1,
        10..=49 => 2,
        50..=99 => 3,
        100..=199 => 4,
        200..=499 => 5,
        500..=999 => 6,
        1000..=1999 => 7,
        2000..=2999 => 8,
        3000..=3999 => 9,
        4000..=4999 => 10,
        5000..=9999 => 11,
        _ => 12,
    }
}

/// Upper bounds of the fine latency buckets behind `putLatency99`/`putLatency999`: 1 ms steps up
/// to 20, 2 ms to 50, 5 ms to 100, 10 ms to 200, 50 ms to 500, 100 ms to 1 s, 1 s to 10 s.
fn latency_bucket_bounds() -> Vec<u64> {
    let mut b = Vec::new();
    b.extend(1..=20);
    b.extend((22..=50).step_by(2));
    b.extend((55..=100).step_by(5));
    b.extend((110..=200).step_by(10));
    b.extend((250..=500).step_by(50));
    b.extend((600..=1000).step_by(100));
    b.extend((2000..=10_000).step_by(1000));
    b
}

struct Windows {
    /// Previous minute's distribution, None during the first minute (reported as `null`).
    last_distribute: Option<[u64; 13]>,
    last_latency: Option<Vec<u64>>,
    /// (epoch ms, putMessageTimesTotal) once per second.
    put_samples: VecDeque<(i64, u64)>,
    last_minute_roll: i64,
}

pub(crate) struct StoreStats {
    pub(crate) put_times_total: AtomicU64,
    pub(crate) put_size_total: AtomicU64,
    pub(crate) put_failed_times: AtomicU64,
    entire_time_max: AtomicU64,
    in_lock_max_micros: AtomicU64,
    in_lock_total_micros: AtomicU64,
    in_lock_count: AtomicU64,
    /// The longest put-lock hold (µs) since the last [`take_in_lock_window_max_micros`]
    /// (`storePutLockMaxHoldMillis`): the once-a-second sampler's view of every hold, where
    /// RocketMQ's `pageCacheLockTimeMills` shows only the hold in progress at the read.
    ///
    /// [`take_in_lock_window_max_micros`]: StoreStats::take_in_lock_window_max_micros
    in_lock_window_max_micros: AtomicU64,
    distribute: [AtomicU64; 13],
    latency_bounds: Vec<u64>,
    latency: Vec<AtomicU64>,
    windows: Mutex<Windows>,
}

impl StoreStats {
    pub(crate) fn new() -> Self {
        let bounds = latency_bucket_bounds();
        StoreStats {
            put_times_total: AtomicU64::new(0),
            put_size_total: AtomicU64::new(0),
            put_failed_times: AtomicU64::new(0),
            entire_time_max: AtomicU64::new(0),
            in_lock_max_micros: AtomicU64::new(0),
            in_lock_total_micros: AtomicU64::new(0),
            in_lock_count: AtomicU64::new(0),
            in_lock_window_max_micros: AtomicU64::new(0),
            distribute: Default::default(),
            latency: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            latency_bounds: bounds,
            windows: Mutex::new(Windows {
                last_distribute: None,
                last_latency: None,
                put_samples: VecDeque::with_capacity(TPS_SAMPLES + 1),
                last_minute_roll: epoch_millis(),
            }),
        }
    }

    /// `setPutMessageEntireTimeMax`: whole put time, including any flush wait.
    pub(crate) fn record_entire_time(&self, ms: u64) {
        self.entire_time_max.fetch_max(ms, Ordering::Relaxed);
        self.distribute[distribute_index(ms)].fetch_add(1, Ordering::Relaxed);
        // `ceilingEntry`: the smallest bucket bound ≥ the value; beyond 10 s nothing is counted.
        let idx = self.latency_bounds.partition_point(|&b| b < ms);
        if let Some(c) = self.latency.get(idx) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn record_in_lock(&self, micros: u64) {
        self.in_lock_max_micros.fetch_max(micros, Ordering::Relaxed);
        self.in_lock_total_micros
            .fetch_add(micros, Ordering::Relaxed);
        self.in_lock_count.fetch_add(1, Ordering::Relaxed);
        self.in_lock_window_max_micros
            .fetch_max(micros, Ordering::Relaxed);
    }

    /// The longest put-lock hold that ended since the previous call (µs), and a new window.
    pub(crate) fn take_in_lock_window_max_micros(&self) -> u64 {
        self.in_lock_window_max_micros.swap(0, Ordering::Relaxed)
    }

    /// Called once a second by the stats thread: TPS sample, and the minute roll of the windows.
    pub(crate) fn sample(&self) {
        let now = epoch_millis();
        let mut w = self.windows.lock();
        w.put_samples
            .push_back((now, self.put_times_total.load(Ordering::Relaxed)));
        while w.put_samples.len() > TPS_SAMPLES {
            w.put_samples.pop_front();
        }
        if now - w.last_minute_roll >= 60_000 {
            w.last_minute_roll = now;
            let mut d = [0u64; 13];
            for (slot, c) in d.iter_mut().zip(&self.distribute) {
                *slot = c.swap(0, Ordering::Relaxed);
            }
            w.last_distribute = Some(d);
            w.last_latency = Some(
                self.latency
                    .iter()
                    .map(|c| c.swap(0, Ordering::Relaxed))
                    .collect(),
            );
        }
    }

    fn tps(samples: &VecDeque<(i64, u64)>, window: usize) -> String {
        if samples.len() <= window {
            return String::new();
        }
        let (t1, n1) = samples[samples.len() - 1];
        let (t0, n0) = samples[samples.len() - 1 - window];
        let dt = (t1 - t0).max(1) as f64;
        java_double(n1.saturating_sub(n0) as f64 / dt * 1000.0)
    }

    /// `findPutMessageEntireTimePX`: linear interpolation inside the bucket holding the px-th put.
    fn percentile(bounds: &[u64], counts: &[u64], px: f64) -> f64 {
        let total: u64 = counts.iter().sum();
        let px_index = (total as f64 * px) as u64;
        let mut pass = 0u64;
        for (i, &count) in counts.iter().enumerate() {
            if px_index <= pass + count {
                let rel = (px_index - pass) as f64;
                let lo = if i == 0 { 0 } else { bounds[i - 1] } as f64;
                let hi = bounds[i] as f64;
                return if count == 0 {
                    lo
                } else {
                    lo + (hi - lo) * rel / count as f64
                };
            }
            pass += count;
        }
        0.0
    }

    /// The §10 keys this service owns.
    pub(crate) fn runtime_info(&self, out: &mut std::collections::BTreeMap<String, String>) {
        let w = self.windows.lock();
        let times = self.put_times_total.load(Ordering::Relaxed);
        let size = self.put_size_total.load(Ordering::Relaxed);
        // RocketMQ reports 1 when nothing was put (avoids a division by zero for the average).
        let times_reported = times.max(1);
        out.insert(
            "putMessageEntireTimeMax".into(),
            self.entire_time_max.load(Ordering::Relaxed).to_string(),
        );
        out.insert(
            "putMessageDistributeTime".into(),
            match &w.last_distribute {
                None => "null".into(),
                Some(d) => format_distribution(d),
            },
        );
        let (p99, p999) = match &w.last_latency {
            None => (0.0, 0.0),
            Some(l) => (
                Self::percentile(&self.latency_bounds, l, 0.99),
                Self::percentile(&self.latency_bounds, l, 0.999),
            ),
        };
        out.insert("putLatency99".into(), format!("{p99:.2}"));
        out.insert("putLatency999".into(), format!("{p999:.2}"));
        out.insert(
            "putTps".into(),
            format!(
                "{} {} {}",
                Self::tps(&w.put_samples, 10),
                Self::tps(&w.put_samples, 60),
                Self::tps(&w.put_samples, 600)
            ),
        );
        out.insert("putMessageTimesTotal".into(), times_reported.to_string());
        out.insert("putMessageSizeTotal".into(), size.to_string());
        out.insert(
            "putMessageFailedTimes".into(),
            self.put_failed_times.load(Ordering::Relaxed).to_string(),
        );
        out.insert(
            "putMessageAverageSize".into(),
            java_double(size as f64 / times_reported as f64),
        );
        // Extra keys (not RocketMQ's): the live distribution and in-lock time.
        let live: Vec<u64> = self
            .distribute
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        out.insert(
            "storePutDistributeTimeCurrentMinute".into(),
            format_distribution(&live),
        );
        out.insert(
            "storePutInLockMaxMicros".into(),
            self.in_lock_max_micros.load(Ordering::Relaxed).to_string(),
        );
        let n = self.in_lock_count.load(Ordering::Relaxed);
        let total = self.in_lock_total_micros.load(Ordering::Relaxed);
        out.insert(
            "storePutInLockAvgMicros".into(),
            total.checked_div(n).unwrap_or(0).to_string(),
        );
        out.insert("storePutInLockTimes".into(), n.to_string());
    }
}

fn format_distribution(counts: &[u64]) -> String {
    let mut s = String::new();
    for (label, n) in DISTRIBUTE_LABELS.iter().zip(counts) {
        s.push_str(&format!("[{label}]:{n} "));
    }
    s
}

/// Java's `Double.toString` for the values we print: plain decimal with at least one fractional
/// digit between 10^-3 and 10^7, computerized scientific notation (`1.0E7`) outside.
pub(crate) fn java_double(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "NaN".into()
        } else if v > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let a = v.abs();
    if a == 0.0 || (1e-3..1e7).contains(&a) {
        let s = format!("{v:?}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        let s = format!("{v:e}");
        let s = s.replace('e', "E");
        match s.split_once('E') {
            Some((m, e)) if !m.contains('.') => format!("{m}.0E{e}"),
            _ => s,
        }
    }
}

/// `MixAll.humanReadableByteCount(bytes, false)`: 1024-based, one decimal.
pub fn human_readable_bytes(bytes: i64) -> String {
    let unit = 1024f64;
    if (bytes as f64) < unit {
        return format!("{bytes} B");
    }
    let exp = ((bytes as f64).ln() / unit.ln()) as i32;
    let pre = "KMGTPE".as_bytes()[(exp - 1) as usize] as char;
    format!("{:.1} {pre}iB", bytes as f64 / unit.powi(exp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_has_rocketmq_labels_and_trailing_space() {
        let mut c = [0u64; 13];
        c[0] = 1;
        c[1] = 2;
        c[12] = 3;
        assert_eq!(
            format_distribution(&c),
            "[<=0ms]:1 [0~10ms]:2 [10~50ms]:0 [50~100ms]:0 [100~200ms]:0 [200~500ms]:0 \
             [500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:3 "
        );
        assert_eq!(distribute_index(10), 2);
        assert_eq!(distribute_index(9_999), 11);
    }

    #[test]
    fn java_number_formats() {
        assert_eq!(java_double(0.0), "0.0");
        assert_eq!(java_double(1234.5), "1234.5");
        assert_eq!(java_double(3.0), "3.0");
        assert_eq!(java_double(1.0e7), "1.0E7");
        assert_eq!(human_readable_bytes(1023), "1023 B");
        assert_eq!(human_readable_bytes(12_595), "12.3 KiB");
        assert_eq!(human_readable_bytes(1 << 30), "1.0 GiB");
    }

    #[test]
    fn percentile_interpolates_inside_the_bucket() {
        let bounds = latency_bucket_bounds();
        let mut counts = vec![0u64; bounds.len()];
        counts[0] = 100; // all puts ≤ 1 ms
        let p = StoreStats::percentile(&bounds, &counts, 0.99);
        assert!((p - 0.99).abs() < 1e-9, "{p}");
    }

    #[test]
    fn tps_windows_need_enough_samples() {
        let s = StoreStats::new();
        s.sample();
        let mut m = std::collections::BTreeMap::new();
        s.runtime_info(&mut m);
        assert_eq!(m["putTps"], "  ");
        assert_eq!(m["putMessageDistributeTime"], "null");
        assert_eq!(m["putMessageTimesTotal"], "1");
    }
}
