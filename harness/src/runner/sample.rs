//! One sampled second of a job and the rows made of it: the `timeseries.csv` row of a second,
//! and a segment's resource figures over its seconds. A leaf the sampling loop and the job
//! parts that add their own columns both use.

use std::collections::BTreeMap;

use crate::recorder::{Interval, NotAvailableClass};
use crate::report::{Resources, TimeseriesKey, TimeseriesRow, TimeseriesTail};
use crate::runner::plan::LoadConfig;
use harness_model::matrix::Cell;
use harness_model::profile::Model;
use harness_results::cells::Fixed;

/// One sampled second (or the short drain interval at the end).
pub struct Sample {
    /// A short last interval (the drain after the schedule): too short for CPU figures.
    pub partial: bool,
    /// Taken after the schedule ended: only answers to sends already written arrive. Kept
    /// apart in timeseries.csv so per-second statistics never read it as a measured second.
    pub drain: bool,
    pub second: u64,
    pub segment: Option<usize>,
    pub broker: Option<(f64, f64)>,
    /// Broker CPU-seconds spent during this interval (from /proc, not sampled).
    pub broker_cpu_s: Option<f64>,
    /// Seconds the broker's JIT compiled during this interval (HotSpot's perf data); None for
    /// a broker that is no JVM.
    pub broker_jit_s: Option<f64>,
    /// What the rest of the machine used in this interval, % of one core
    /// ([`crate::runner::broker_sampler::BrokerSecond::other_cpu`]).
    pub other_cpu: Option<f64>,
    /// What the hypervisor took from the machine's CPUs in this interval, % of one core
    /// ([`crate::runner::broker_sampler::BrokerSecond::steal_cpu`]).
    pub steal_cpu: Option<f64>,
    pub harness_cpu: f64,
    /// Answers ok in this interval, per second of it.
    pub ok_per_s: f64,
    pub harness_rss_mb: Option<f64>,
    /// The store folders' size (MiB), when the harness started the broker.
    pub store_disk_mb: Option<f64>,
    /// When the second ended, Unix seconds.
    pub end_unix_s: f64,
}

/// Broker and harness figures over the seconds of one measured segment (a stair in steps
/// mode); the counter comparison stays cell-wide.
pub fn segment_resources(samples: &[Sample], segment: usize, cell: &Resources) -> Resources {
    let seconds: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.segment == Some(segment) && !s.partial)
        .collect();
    let cpus: Vec<f64> = seconds
        .iter()
        .filter_map(|s| s.broker.map(|b| b.0))
        .collect();
    let mut res = cell.clone();
    // Every interval of the segment, the short drain included: its answers are the segment's.
    res.broker_cpu_s = samples
        .iter()
        .filter(|s| s.segment == Some(segment))
        .map(|s| s.broker_cpu_s)
        .sum::<Option<f64>>();
    // Over the full seconds only, as the CPU averages are: compile time per wall second.
    let jit: Option<f64> = seconds.iter().map(|s| s.broker_jit_s).sum();
    res.broker_jit_pct = jit
        .filter(|_| !seconds.is_empty())
        .map(|j| j / seconds.len() as f64 * 100.0);
    if !seconds.is_empty() {
        res.broker_cpu_avg =
            (!cpus.is_empty()).then(|| cpus.iter().sum::<f64>() / cpus.len() as f64);
        res.broker_cpu_max = cpus.iter().copied().reduce(f64::max);
        res.harness_cpu_max = seconds.iter().map(|s| s.harness_cpu).reduce(f64::max);
        res.other_cpu_max = seconds.iter().filter_map(|s| s.other_cpu).reduce(f64::max);
        res.steal_cpu_max = seconds.iter().filter_map(|s| s.steal_cpu).reduce(f64::max);
        res.ok_per_second = seconds
            .iter()
            .filter(|s| !s.drain)
            .map(|s| s.ok_per_s)
            .collect();
    }
    res
}

/// `page_cache_lock_ms`: the longest put-lock hold in the second when the broker counts it
/// (broker-under-test's `storePutLockMaxHoldMillis`, reset by each read, so this once-a-second
/// read sees every hold), else RocketMQ's `pageCacheLockTimeMills`: the hold in progress at the
/// instant of the read, which misses a stall that starts and ends between two reads and shows
/// only the part held so far of one the read lands in.
fn page_cache_lock_ms(info: &impl Fn(&str) -> String) -> String {
    match info("storePutLockMaxHoldMillis") {
        v if v.is_empty() => info("pageCacheLockTimeMills"),
        v => v,
    }
}

/// The `timeseries.csv` row of one sample.
pub fn timeseries_row(
    profile: &str,
    cell: &Cell,
    repetition: u32,
    cfg: &LoadConfig,
    s: &Sample,
    i: &Interval,
    info: Option<&BTreeMap<String, String>>,
) -> TimeseriesRow {
    let phase = match s.segment {
        _ if s.drain => "drain",
        Some(0) | None => "warmup",
        _ => "measure",
    };
    let step = match (cell.workload.model, s.segment) {
        (Model::Steps, Some(seg)) if seg > 0 => Some(seg - 1),
        _ => None,
    };
    let target_rate = match cell.workload.model {
        Model::Closed => None,
        _ => s
            .segment
            .and_then(|seg| cfg.phases.iter().find(|p| p.segment == seg))
            .map(|p| Fixed(cfg.shard.share(p.rate))),
    };
    let q = |h: &hdrhistogram::Histogram<u64>, p: f64| {
        (!h.is_empty()).then(|| Fixed(h.value_at_quantile(p) as f64 / 1000.0))
    };
    let info = |k: &str| {
        info.and_then(|m| m.get(k))
            .map_or(String::new(), |v| v.trim().to_owned())
    };
    TimeseriesRow {
        key: TimeseriesKey {
            profile: profile.to_owned(),
            cell_id: cell.id.clone(),
            repetition,
            step,
            second: s.second,
            phase,
            target_rate,
            achieved_rate: i.written,
            ok: i.counts.ok,
            busy: i.counts.busy_total(),
        },
        busy: i.counts.busy,
        tail: TimeseriesTail {
            errors: i.counts.errors(),
            timeouts: i.counts.timeouts,
            dropped: i.counts.dropped,
            p50_ms: q(&i.latency, 0.5),
            p99_ms: q(&i.latency, 0.99),
            max_ms: q(&i.latency, 1.0),
            broker_cpu: s.broker.map(|b| Fixed(b.0)),
            broker_jit_ms: s.broker_jit_s.map(|j| Fixed(j * 1000.0)),
            broker_rss_mb: s.broker.map(|b| Fixed(b.1)),
            harness_cpu: Fixed(s.harness_cpu),
            other_cpu: s.other_cpu.map(Fixed),
            steal_cpu: s.steal_cpu.map(Fixed),
            send_queue_size: info("sendThreadPoolQueueSize"),
            send_queue_head_wait_ms: info("sendThreadPoolQueueHeadWaitTimeMills"),
            page_cache_lock_ms: page_cache_lock_ms(&info),
            harness_rss_mb: s.harness_rss_mb.map(Fixed),
            pool_buffers_free: info("remainTransientStoreBufferNumbs"),
            commit_lag_bytes: info("commitLogUncommittedBytes"),
            dispatch_behind_bytes: info("dispatchBehindBytes"),
            not_available_disk_full: i.counts.not_available[NotAvailableClass::DiskFull.index()],
            not_available_other: i.counts.not_available[NotAvailableClass::Other.index()],
            flush_slave_timeout: i.counts.flush_slave_timeout,
            slave_not_available: i.counts.slave_not_available,
            store_disk_mb: s.store_disk_mb.map(Fixed),
            end_unix_s: Fixed(s.end_unix_s),
        },
        ..TimeseriesRow::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(segment: usize, jit_s: Option<f64>, partial: bool) -> Sample {
        Sample {
            partial,
            drain: false,
            second: 0,
            segment: Some(segment),
            broker: Some((50.0, 100.0)),
            broker_cpu_s: Some(0.5),
            broker_jit_s: jit_s,
            other_cpu: Some(3.0),
            steal_cpu: Some(1.0),
            harness_cpu: 10.0,
            ok_per_s: 1000.0,
            harness_rss_mb: None,
            store_disk_mb: None,
            end_unix_s: 0.0,
        }
    }

    /// The window's JIT share is compile time per full second of the segment: the warm-up's
    /// seconds and a short last interval do not count, and a broker without perf data has none.
    #[test]
    fn the_jit_share_is_compile_time_per_measured_second() {
        let samples = [
            second(0, Some(0.9), false),
            second(1, Some(0.2), false),
            second(1, Some(0.4), false),
            second(1, Some(0.5), true),
        ];
        let res = segment_resources(&samples, 1, &Resources::default());
        let pct = res.broker_jit_pct.expect("a JVM's share");
        assert!((pct - 30.0).abs() < 1e-9, "{pct}");
        let no_jvm = [second(1, None, false), second(1, None, false)];
        let res = segment_resources(&no_jvm, 1, &Resources::default());
        assert_eq!(res.broker_jit_pct, None);
    }
}
