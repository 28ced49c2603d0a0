//! The merged `summary.csv` rows: counts summed, percentiles from the sum of the shards'
//! segment histograms (exact), resources combined as documented, validity the AND of the
//! shards' with each failed shard named.

use hdrhistogram::Histogram;

use crate::merge::error::MergeError;
use crate::merge::folder::ShardFolder;
use crate::merge::rates::{phase_rates, rate_of};
use harness_results::cells::Fixed;
use harness_results::cols::HaColumns;
use harness_results::hlog_totals::{segment_tag, SEGMENT_HISTOGRAMS};
use harness_results::read::Row;
use harness_results::segment::{histogram, Counts, Segment};
use harness_results::summary::{Resources, SegmentFigures, SummaryRow};
use harness_results::{BusyClass, InvalidKind};

fn count(row: &Row, column: &str) -> u64 {
    row.get(column)
        .ok()
        .flatten()
        .unwrap_or(0.0)
        .max(0.0)
        .round() as u64
}

fn value(row: &Row, column: &str) -> Option<f64> {
    row.get(column).ok().flatten()
}

/// The final outcomes of a row, from its count columns.
fn counts(row: &Row) -> Counts {
    let mut busy = [0u64; 6];
    for class in BusyClass::ALL {
        busy[class.index()] = count(row, &format!("busy_{}", class.column()));
    }
    Counts {
        ok: count(row, "ok"),
        busy,
        system_error: count(row, "system_error"),
        flush_disk_timeout: count(row, "flush_disk_timeout"),
        message_illegal: count(row, "message_illegal"),
        other_codes: count(row, "other_codes"),
        not_available: [
            count(row, "not_available_disk_full"),
            count(row, "not_available_other"),
        ],
        flush_slave_timeout: count(row, "flush_slave_timeout"),
        slave_not_available: count(row, "slave_not_available"),
        timeouts: count(row, "timeouts"),
        dropped: count(row, "dropped"),
        connection_errors: count(row, "connection_errors"),
    }
}

fn histogram_mut<'a>(s: &'a mut Segment, name: &str) -> Option<&'a mut Histogram<u64>> {
    Some(match name {
        "latency" => &mut s.latency,
        "service" => &mut s.service,
        "lag" => &mut s.lag,
        "busy_latency" => &mut s.busy_latency,
        "period_in_queue" => &mut s.period_in_queue,
        "size_of_queue" => &mut s.size_of_queue,
        _ => return None,
    })
}

/// The sum of histogram `tag` over the shards. Every shard that sent something must have it;
/// a job that never started its load (its broker failed, it was late for its slot) has none
/// and adds nothing, so its invalid row is merged and named rather than the merge refused.
fn summed(
    folders: &[ShardFolder],
    rows: &[&Row],
    tag: &str,
    cell_id: &str,
) -> Result<Histogram<u64>, MergeError> {
    let mut total = histogram();
    for (f, row) in folders.iter().zip(rows) {
        let mut found = false;
        for e in f.hlog.entries.iter().filter(|e| e.tag == tag) {
            found = true;
            total.add(&e.hist).map_err(|err| MergeError::Hlog {
                path: f.path.join("latency.hlog"),
                reason: format!("{tag}: cannot be added: {err:?}"),
            })?;
        }
        if !found && count(row, "sent") > 0 {
            return Err(MergeError::MissingSegment {
                path: f.path.clone(),
                tag: tag.to_owned(),
                cell_id: cell_id.to_owned(),
            });
        }
    }
    Ok(total)
}

/// Whether every shard drove the same `--target`: then one broker saw all of their answers,
/// and each shard's broker figures describe the whole load, not its share.
fn one_shared_broker(folders: &[ShardFolder]) -> bool {
    let first = &folders[0].run["target"];
    !first.is_null() && folders.iter().all(|f| &f.run["target"] == first)
}

fn resources(rows: &[&Row], shared: bool) -> Resources {
    let all = |c: &str| -> Vec<f64> { rows.iter().filter_map(|r| value(r, c)).collect() };
    let max = |c: &str| all(c).into_iter().reduce(f64::max);
    let mean = |c: &str| {
        let v = all(c);
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let flow = all("broker_flow_control_total");
    let matches = all("broker_counters_match");
    let cpu_s = all("broker_cpu_s");
    Resources {
        broker_cpu_avg: mean("broker_cpu_avg"),
        broker_cpu_max: max("broker_cpu_max"),
        // One shared broker: every shard read the same process's CPU time.
        broker_cpu_s: (cpu_s.len() == rows.len()).then(|| {
            if shared {
                cpu_s.iter().copied().fold(0.0, f64::max)
            } else {
                cpu_s.iter().sum()
            }
        }),
        // Averaged as the CPU is: shards of one broker read the same JVM.
        broker_jit_pct: mean("broker_jit_pct"),
        // Each shard warmed the broker it was given; they ran side by side.
        jit_warmup_s: max("jit_warmup_s"),
        broker_rss_max_mb: max("broker_rss_max_mb"),
        harness_cpu_max: max("harness_cpu_max"),
        // Every shard's sampler saw the same machine: the largest.
        other_cpu_max: max("other_cpu_max"),
        steal_cpu_max: max("steal_cpu_max"),
        // Not a column: the shards' seconds are in their timeseries.
        ok_per_second: Vec::new(),
        broker_flow_control_total: match (flow.len() == rows.len(), shared) {
            (false, _) => None,
            (true, true) => flow.into_iter().reduce(f64::max).map(|v| v as u64),
            (true, false) => Some(flow.iter().sum::<f64>() as u64),
        },
        // With one shared broker every shard's comparison saw the others' busy answers too.
        broker_counters_match: (!shared && matches.len() == rows.len())
            .then(|| matches.iter().all(|m| *m != 0.0)),
        // Shards run against --target / --namesrv brokers: the harness starts no pair there.
        ha: HaColumns::default(),
        // The brokers' own readings: shards of one broker read the same store, so the largest.
        retention: harness_results::cols::RetentionColumns {
            retention_rounds: max("retention_rounds").map(|v| v as u64),
            commitlog_deleted_mb: max("commitlog_deleted_mb").map(Fixed),
            disk_ratio_max: max("disk_ratio_max").map(Fixed),
        },
    }
}

/// Merges the summary rows of `folders` (sorted by shard index, checked compatible), in the
/// first shard's row order. Returns the axis keys and the rows.
pub fn merge_rows(folders: &[ShardFolder]) -> Result<(Vec<String>, Vec<SummaryRow>), MergeError> {
    let first = &folders[0];
    let shared = one_shared_broker(folders);
    let mut out = Vec::new();
    for r0 in &first.summary.rows {
        let mut rows: Vec<&Row> = vec![r0];
        for f in &folders[1..] {
            let r = f
                .summary
                .rows
                .iter()
                .find(|r| {
                    r.cell_id == r0.cell_id && r.repetition == r0.repetition && r.key == r0.key
                })
                .ok_or_else(|| MergeError::MissingRow {
                    path: f.path.clone(),
                    cell_id: r0.cell_id.clone(),
                    repetition: r0.repetition.clone(),
                    step: if r0.key.step.is_empty() {
                        String::new()
                    } else {
                        format!(" step {}", r0.key.step)
                    },
                })?;
            rows.push(r);
        }
        let repetition: u32 = r0.repetition.parse().unwrap_or(0);
        let step: Option<usize> = r0.key.step.parse().ok();
        let segment_no = step.map_or(1, |s| s + 1);
        let mut seg = Segment::default();
        for r in &rows {
            seg.sent += count(r, "sent");
            seg.attempts += count(r, "attempts");
            seg.counts.merge(&counts(r));
        }
        for name in SEGMENT_HISTOGRAMS {
            let tag = segment_tag(&r0.cell_id, repetition, segment_no, name);
            let h = summed(folders, &rows, &tag, &r0.cell_id)?;
            if let Some(slot) = histogram_mut(&mut seg, name) {
                *slot = h;
            }
        }
        let failed: Vec<String> = folders
            .iter()
            .zip(&rows)
            .filter(|(_, r)| r.valid() == Some(false))
            .map(|(f, r)| {
                let why = r.text.get("invalid_reason").map_or("", String::as_str);
                format!("{}: {why}", f.name())
            })
            .collect();
        // The merged row's kinds are every failed shard's, each once (so the advice under the
        // merged table names each cause), read from the shards' `invalid_kinds`.
        let mut invalid_kinds = Vec::new();
        for r in rows.iter().filter(|r| r.valid() == Some(false)) {
            InvalidKind::add_all(&mut invalid_kinds, r.invalid_kinds());
        }
        let targets: Vec<f64> = rows
            .iter()
            .filter_map(|r| value(r, "target_rate"))
            .collect();
        let label = first.run["cells"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["cell_id"] == r0.cell_id.as_str())
            .and_then(|c| c["label"].as_str())
            .unwrap_or(&r0.cell_id)
            .to_owned();
        out.push(SummaryRow {
            consumer: None,
            fault: Default::default(),
            knee: Default::default(),
            order: Default::default(),
            profile: r0.text.get("profile").cloned().unwrap_or_default(),
            cell_id: r0.cell_id.clone(),
            label,
            repetition,
            step,
            params: first
                .summary
                .param_keys
                .iter()
                .map(|k| r0.key.params.get(k).cloned().unwrap_or_default())
                .collect(),
            target_rate: (!targets.is_empty()).then(|| {
                phase_rates(&first.run, &r0.cell_id)
                    .and_then(|r| rate_of(&r, Some(segment_no)))
                    .unwrap_or_else(|| targets.iter().sum())
            }),
            duration_s: value(r0, "duration_s").unwrap_or(0.0),
            seg: SegmentFigures::from_segment(&seg),
            res: resources(&rows, shared),
            valid: failed.is_empty(),
            invalid_reason: failed.join("; "),
            invalid_kinds,
        });
    }
    Ok((first.summary.param_keys.clone(), out))
}
