//! The merged `timeseries.csv` and the per-second histograms of the merged `latency.hlog`.
//!
//! Rows are aligned by wall-clock second: a shard's row goes to the second in which it ended
//! (`end_unix_s`, floored) of its job. Counts and achieved rates are summed (the target is the whole schedule's); the interval percentiles
//! come from the sum of the shards' per-second latency histograms, each matched to its own
//! row by the end instant both were stamped with; the broker's gauges, which every shard
//! sampled from the same broker, are combined (CPU averaged, queue and lag figures the
//! largest, free pool buffers the smallest); the harness's own figures are the worst shard's.
//! `phase`, `step` and `second` come from the lowest shard present in that second. The
//! `event` column keeps every shard's fault moments: each shard's text once, in shard order (a
//! moment that several shards wrote in the same second is one moment of the one broker).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::merge::error::MergeError;
use crate::merge::folder::ShardFolder;
use crate::merge::rates::{phase_rates, rate_of};
use harness_results::cells::Fixed;
use harness_results::hlog_totals::{parse_tag, TagKind};
use harness_results::segment::histogram;
use harness_results::timeseries::{TimeseriesEvent, TimeseriesKey, TimeseriesRow, TimeseriesTail};
use harness_results::BusyClass;

/// (job ordinal, wall-clock second): where a row or a second's histogram goes.
type Key = (usize, i64);

/// One merged second of one job.
#[derive(Default)]
struct Group {
    row: Option<TimeseriesRow>,
    cpu: Vec<f64>,
    jit_ms: Vec<f64>,
    /// The latest end instant of anything in it (Unix seconds).
    end: f64,
    hists: BTreeMap<String, Histogram<u64>>,
}

/// One merged second's histograms.
pub struct MergedSecond {
    /// `<cell_id>/r<repetition>`.
    pub job: String,
    /// The latest end instant of the shards' seconds in it, Unix seconds.
    pub end: f64,
    pub hists: BTreeMap<String, Histogram<u64>>,
}

/// The merged per-second output.
pub struct MergedSeries {
    pub rows: Vec<TimeseriesRow>,
    /// In output order.
    pub seconds: Vec<MergedSecond>,
}

fn phase(text: &str) -> &'static str {
    match text {
        "measure" => "measure",
        "drain" => "drain",
        _ => "warmup",
    }
}

fn num(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The larger (or with `smaller`, the smaller) of two gauge texts as numbers; text kept as is.
fn gauge(a: &str, b: &str, smaller: bool) -> String {
    match (num(a), num(b)) {
        (Some(x), Some(y)) if (y < x) == smaller && y != x => b.to_owned(),
        (None, Some(_)) => b.to_owned(),
        _ => a.to_owned(),
    }
}

fn max_opt<const D: usize>(a: Option<Fixed<D>>, b: Option<f64>) -> Option<Fixed<D>> {
    match (a, b) {
        (Some(x), Some(y)) => Some(Fixed(x.0.max(y))),
        (None, y) => y.map(Fixed),
        (x, None) => x,
    }
}

/// `merged` with a shard's `event` text joined on, unless the second already has that text.
fn join_event(merged: &mut TimeseriesEvent, shard: &str) {
    let shard = shard.trim();
    if shard.is_empty() || merged.event.split(" / ").any(|e| e == shard) {
        return;
    }
    if !merged.event.is_empty() {
        merged.event.push_str(" / ");
    }
    merged.event.push_str(shard);
}

/// Adds `row` (of shard `f`) into `g`.
fn add_row(g: &mut Group, f: &ShardFolder, row: &csv::StringRecord) {
    let s = &f.series;
    let field = |c: &str| s.field(row, c);
    let n = |c: &str| num(field(c)).unwrap_or(0.0).max(0.0) as u64;
    let end = num(field("end_unix_s")).unwrap_or(0.0);
    g.end = g.end.max(end);
    if let Some(cpu) = num(field("broker_cpu")) {
        g.cpu.push(cpu);
    }
    if let Some(jit) = num(field("broker_jit_ms")) {
        g.jit_ms.push(jit);
    }
    let m = g.row.get_or_insert_with(|| TimeseriesRow {
        key: TimeseriesKey {
            profile: field("profile").to_owned(),
            cell_id: field("cell_id").to_owned(),
            repetition: num(field("repetition")).unwrap_or(0.0) as u32,
            step: num(field("step")).map(|v| v as usize),
            second: n("second"),
            phase: phase(field("phase")),
            ..TimeseriesKey::default()
        },
        tail: TimeseriesTail {
            send_queue_size: field("send_queue_size").to_owned(),
            send_queue_head_wait_ms: field("send_queue_head_wait_ms").to_owned(),
            page_cache_lock_ms: field("page_cache_lock_ms").to_owned(),
            pool_buffers_free: field("pool_buffers_free").to_owned(),
            commit_lag_bytes: field("commit_lag_bytes").to_owned(),
            dispatch_behind_bytes: field("dispatch_behind_bytes").to_owned(),
            ..TimeseriesTail::default()
        },
        ..TimeseriesRow::default()
    });
    let k = &mut m.key;
    k.second = k.second.min(n("second"));
    if let Some(t) = num(field("target_rate")) {
        k.target_rate = Some(Fixed(k.target_rate.map_or(0.0, |x| x.0) + t));
    }
    k.achieved_rate += n("achieved_rate");
    k.ok += n("ok");
    k.busy += n("busy");
    for class in BusyClass::ALL {
        m.busy[class.index()] += n(&format!("busy_{}", class.column()));
    }
    join_event(&mut m.event, field("event"));
    let t = &mut m.tail;
    t.errors += n("errors");
    t.timeouts += n("timeouts");
    t.dropped += n("dropped");
    t.broker_rss_mb = max_opt(t.broker_rss_mb, num(field("broker_rss_mb")));
    t.not_available_disk_full += n("not_available_disk_full");
    t.not_available_other += n("not_available_other");
    t.flush_slave_timeout += n("flush_slave_timeout");
    t.slave_not_available += n("slave_not_available");
    // Shards of one broker all see its one store folder.
    t.store_disk_mb = max_opt(t.store_disk_mb, num(field("store_disk_mb")));
    t.harness_cpu = Fixed(
        t.harness_cpu
            .0
            .max(num(field("harness_cpu")).unwrap_or(0.0)),
    );
    t.harness_rss_mb = max_opt(t.harness_rss_mb, num(field("harness_rss_mb")));
    t.other_cpu = max_opt(t.other_cpu, num(field("other_cpu")));
    t.steal_cpu = max_opt(t.steal_cpu, num(field("steal_cpu")));
    t.send_queue_size = gauge(&t.send_queue_size, field("send_queue_size"), false);
    t.send_queue_head_wait_ms = gauge(
        &t.send_queue_head_wait_ms,
        field("send_queue_head_wait_ms"),
        false,
    );
    t.page_cache_lock_ms = gauge(&t.page_cache_lock_ms, field("page_cache_lock_ms"), false);
    t.pool_buffers_free = gauge(&t.pool_buffers_free, field("pool_buffers_free"), true);
    t.commit_lag_bytes = gauge(&t.commit_lag_bytes, field("commit_lag_bytes"), false);
    t.dispatch_behind_bytes = gauge(
        &t.dispatch_behind_bytes,
        field("dispatch_behind_bytes"),
        false,
    );
}

/// Merges the time series and per-second histograms of `folders` (sorted by shard index).
pub fn merge_series(folders: &[ShardFolder]) -> Result<MergedSeries, MergeError> {
    let mut jobs: Vec<String> = Vec::new();
    let mut groups: BTreeMap<Key, Group> = BTreeMap::new();
    // Per shard and job: (end instant, key) of each row, to place its histograms.
    let mut ends: Vec<BTreeMap<String, Vec<(f64, Key)>>> = Vec::new();
    for f in folders {
        if !f.series.header.iter().any(|h| h == "end_unix_s") {
            return Err(MergeError::NotAResult {
                path: f.path.join("timeseries.csv"),
                reason: "no `end_unix_s` column, so its seconds cannot be lined up with the other shards' (written before `harness merge` existed; re-run the shard)".into(),
            });
        }
        let mut mine: BTreeMap<String, Vec<(f64, Key)>> = BTreeMap::new();
        for row in &f.series.rows {
            let job = format!(
                "{}/r{}",
                f.series.field(row, "cell_id"),
                f.series.field(row, "repetition")
            );
            let ordinal = match jobs.iter().position(|j| *j == job) {
                Some(i) => i,
                None => {
                    jobs.push(job.clone());
                    jobs.len() - 1
                }
            };
            let end = num(f.series.field(row, "end_unix_s")).unwrap_or(0.0);
            let key = (ordinal, end.floor() as i64);
            add_row(groups.entry(key).or_default(), f, row);
            mine.entry(job).or_default().push((end, key));
        }
        ends.push(mine);
    }
    for (f, mine) in folders.iter().zip(&ends) {
        for e in &f.hlog.entries {
            let Some(TagKind::Second { job, name }) = parse_tag(&e.tag) else {
                continue;
            };
            let end = e.end_unix(f.hlog.base);
            // The row stamped with the same instant (the log keeps milliseconds).
            let key = mine
                .get(&job)
                .and_then(|rows| {
                    rows.iter()
                        .map(|(t, k)| ((t - end).abs(), *k))
                        .min_by(|a, b| a.0.total_cmp(&b.0))
                })
                .filter(|(d, _)| *d <= 0.5)
                .map(|(_, k)| k)
                .unwrap_or_else(|| {
                    let ordinal = jobs.iter().position(|j| *j == job).unwrap_or_else(|| {
                        jobs.push(job.clone());
                        jobs.len() - 1
                    });
                    (ordinal, end.floor() as i64)
                });
            let g = groups.entry(key).or_default();
            g.end = g.end.max(end);
            g.hists
                .entry(name)
                .or_insert_with(histogram)
                .add(&e.hist)
                .map_err(|err| MergeError::Hlog {
                    path: f.path.join("latency.hlog"),
                    reason: format!("{}: cannot be added: {err:?}", e.tag),
                })?;
        }
    }
    let mut rows = Vec::new();
    let mut seconds = Vec::new();
    for ((ordinal, _), g) in groups {
        if let Some(mut row) = g.row {
            let empty = histogram();
            let lat = g.hists.get("latency").unwrap_or(&empty);
            let q =
                |p: f64| (!lat.is_empty()).then(|| Fixed(lat.value_at_quantile(p) as f64 / 1000.0));
            row.tail.p50_ms = q(0.5);
            row.tail.p99_ms = q(0.99);
            row.tail.max_ms = q(1.0);
            row.tail.broker_cpu =
                (!g.cpu.is_empty()).then(|| Fixed(g.cpu.iter().sum::<f64>() / g.cpu.len() as f64));
            // Averaged as the CPU is: shards of one broker read the same JVM.
            row.tail.broker_jit_ms = (!g.jit_ms.is_empty())
                .then(|| Fixed(g.jit_ms.iter().sum::<f64>() / g.jit_ms.len() as f64));
            row.tail.end_unix_s = Fixed(g.end);
            if row.key.target_rate.is_some() {
                let segment = match row.key.phase {
                    "warmup" => Some(0),
                    "measure" => Some(row.key.step.map_or(1, |s| s + 1)),
                    _ => None,
                };
                if let Some(r) = phase_rates(&folders[0].run, &row.key.cell_id)
                    .and_then(|r| rate_of(&r, segment))
                {
                    row.key.target_rate = Some(Fixed(r));
                }
            }
            rows.push(row);
        }
        seconds.push(MergedSecond {
            job: jobs[ordinal].clone(),
            end: g.end,
            hists: g.hists,
        });
    }
    Ok(MergedSeries { rows, seconds })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_events_join_once_each_in_shard_order() {
        let mut e = TimeseriesEvent::default();
        for shard in ["", "kill restart", " kill restart ", "pause", ""] {
            join_event(&mut e, shard);
        }
        assert_eq!(e.event, "kill restart / pause");
    }
}
