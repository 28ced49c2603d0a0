//! The merge against first principles: shard folders written with the run's own writers from
//! known samples, merged, and compared with the histogram of all samples concatenated.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use hdrhistogram::Histogram;
use serde_json::json;

use crate::merge::merge_folders;
use crate::recorder::{histogram, Counts, Recorder};
use crate::report::hlog_totals::{job_tag, push_segment_totals};
use crate::report::{
    summary_csv, HlogWriter, Resources, SegmentFigures, SummaryRow, TimeseriesKey, TimeseriesRow,
    TimeseriesTail, TimeseriesWriter,
};
use harness_results::cells::Fixed;
use harness_results::InvalidKind;

/// Latencies of one shard: spread over six decades so that bucket boundaries matter.
fn samples(seed: u64, n: usize) -> Vec<u64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|_| {
            let decade = 10u64.pow(rng.u32(0..6));
            decade + rng.u64(0..decade * 9)
        })
        .collect()
}

fn hist_of(values: &[u64]) -> Histogram<u64> {
    let mut h = histogram();
    for v in values {
        h.record(*v).unwrap();
    }
    h
}

const START: u64 = 1_796_040_000;

/// The fault moments a shard wrote in its second `i`: shards 1 and 2 both saw the kill of
/// the second second, only shard 2 a pause in the first.
fn shard_event(shard: u32, i: usize) -> &'static str {
    match (shard, i) {
        (1 | 2, 1) => "kill restart",
        (2, 0) => "pause",
        _ => "",
    }
}

/// Writes one shard's folder: one cell, one repetition, two measured seconds.
fn write_shard(dir: &Path, shard: u32, shards: u32, profile: &str, lat: &[u64], lag: &[u64]) {
    std::fs::create_dir_all(dir).unwrap();
    let base = UNIX_EPOCH + Duration::from_secs(START);
    let mut rec = Recorder::new(2);
    let seg = &mut rec.segments[1];
    seg.latency = hist_of(lat);
    seg.service = hist_of(&lat.iter().map(|v| v / 2 + 1).collect::<Vec<_>>());
    seg.lag = hist_of(lag);
    seg.busy_latency = hist_of(&lat[..lat.len() / 10]);
    seg.sent = lat.len() as u64;
    seg.counts = Counts {
        ok: lat.len() as u64 - 7,
        busy: [1, 2, 0, 0, 0, 0],
        timeouts: 4,
        ..Counts::default()
    };
    seg.attempts = lat.len() as u64;
    let mut log = HlogWriter::create(&dir.join("latency.hlog"), base).unwrap();
    let tag = job_tag("cafe0001", 1);
    let (first, second) = lat.split_at(lat.len() / 2);
    let mut series = TimeseriesWriter::create(&dir.join("timeseries.csv")).unwrap();
    for (i, part) in [first, second].into_iter().enumerate() {
        // Shards end their seconds a few ms apart, as separate machines would.
        let end = (i + 2) as f64 + 0.004 * f64::from(shard);
        log.push(&format!("{tag}/latency"), end - 1.0, 1.0, &hist_of(part));
        log.flush_second().unwrap();
        series
            .append(&TimeseriesRow {
                key: TimeseriesKey {
                    profile: profile.into(),
                    cell_id: "cafe0001".into(),
                    repetition: 1,
                    step: None,
                    second: i as u64 + 1,
                    phase: "measure",
                    target_rate: Some(Fixed(100.0 / f64::from(shards))),
                    achieved_rate: part.len() as u64,
                    ok: part.len() as u64,
                    busy: 0,
                },
                busy: [0; 6],
                tail: TimeseriesTail {
                    end_unix_s: Fixed(START as f64 + end),
                    broker_cpu: Some(Fixed(10.0 * f64::from(shard + 1))),
                    ..TimeseriesTail::default()
                },
                consumer: Default::default(),
                order: Default::default(),
                ha: Default::default(),
                event: crate::report::TimeseriesEvent {
                    event: shard_event(shard, i).into(),
                },
            })
            .unwrap();
    }
    push_segment_totals(
        &mut log,
        "cafe0001",
        1,
        Duration::from_secs(1),
        &[(0, Duration::from_secs(1)), (1, Duration::from_secs(2))],
        &rec.segments,
    )
    .unwrap();
    let row = SummaryRow {
        consumer: None,
        fault: Default::default(),
        knee: Default::default(),
        order: Default::default(),
        profile: profile.into(),
        cell_id: "cafe0001".into(),
        label: "-".into(),
        repetition: 1,
        step: None,
        params: vec![],
        target_rate: Some(100.0 / f64::from(shards)),
        duration_s: 2.0,
        seg: SegmentFigures::from_segment(&rec.segments[1]),
        res: Resources::default(),
        valid: shard != 1,
        invalid_reason: if shard == 1 {
            "lag p99 2000 µs > 1000 µs".into()
        } else {
            String::new()
        },
        invalid_kinds: if shard == 1 {
            vec![InvalidKind::LagP99]
        } else {
            Vec::new()
        },
    };
    std::fs::write(dir.join("summary.csv"), summary_csv(&[], &[row]).unwrap()).unwrap();
    let run = json!({
        "profile": {"name": profile, "repetitions": 1, "order": "sequential", "seed": 1, "key_metric": "ok_rate"},
        "cells": [{"cell_id": "cafe0001", "label": "-", "params": {}, "workload": {"model": "open", "rate": 100.0, "warmup": 1.0, "duration": 2.0}, "broker_conf_hash": "0"}],
        "shard": shard, "shards": shards, "target": "127.0.0.1:10911", "status": "finished",
        "start": "2026-11-30T14:00:00Z", "end": "2026-11-30T14:00:05Z", "jobs_done": 1,
    });
    std::fs::write(dir.join("run.json"), run.to_string()).unwrap();
}

#[test]
fn merged_percentiles_are_those_of_the_concatenated_samples() {
    let root = tempfile::tempdir().unwrap();
    let shards: Vec<(Vec<u64>, Vec<u64>)> = (0..3)
        .map(|i| (samples(i, 1000 + 37 * i as usize), samples(100 + i, 900)))
        .collect();
    let dirs: Vec<_> = (0..3u32)
        .map(|i| {
            let d = root.path().join(format!("shard{i}"));
            let (lat, lag) = &shards[i as usize];
            write_shard(&d, i, 3, "p", lat, lag);
            d
        })
        .collect();
    let out = root.path().join("merged");
    // Any order of the folders gives the same merge.
    let order = [dirs[2].clone(), dirs[0].clone(), dirs[1].clone()];
    let merged = merge_folders(&order, &out, "test").unwrap();
    assert_eq!(merged.rows.len(), 1);
    let row = &merged.rows[0];

    let all_lat: Vec<u64> = shards.iter().flat_map(|s| s.0.iter().copied()).collect();
    let all_lag: Vec<u64> = shards.iter().flat_map(|s| s.1.iter().copied()).collect();
    let whole = crate::recorder::Segment {
        latency: hist_of(&all_lat),
        service: hist_of(&all_lat.iter().map(|v| v / 2 + 1).collect::<Vec<_>>()),
        lag: hist_of(&all_lag),
        ..Default::default()
    };
    let expected = SegmentFigures::from_segment(&whole);
    assert_eq!(row.seg.latency_us, expected.latency_us);
    assert_eq!(row.seg.service_us, expected.service_us);
    assert_eq!(row.seg.lag_us, expected.lag_us);
    // And at every percentile, not only the reported ones.
    let text = std::fs::read(out.join("latency.hlog")).unwrap();
    let log = crate::merge::hlog_read::parse(&text).unwrap();
    let total = &log
        .entries
        .iter()
        .find(|e| e.tag == "cafe0001/r1/segment1/latency")
        .unwrap()
        .hist;
    for p in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
        assert_eq!(
            total.value_at_quantile(p),
            whole.latency.value_at_quantile(p),
            "p{p}"
        );
    }
    assert_eq!(total.len(), all_lat.len() as u64);

    assert_eq!(row.seg.sent, all_lat.len() as u64, "sent adds up exactly");
    assert_eq!(row.seg.counts.ok, all_lat.len() as u64 - 21);
    assert_eq!(row.seg.counts.busy[..2], [3, 6]);
    assert_eq!(row.target_rate, Some(100.0));
    assert!(!row.valid);
    assert!(
        row.invalid_reason.starts_with("shard 1/3 (") && row.invalid_reason.contains("lag p99"),
        "{}",
        row.invalid_reason
    );
    assert_eq!(row.invalid_kinds, [InvalidKind::LagP99]);

    // The per-second rows line up by wall-clock second although the shards are ms apart.
    let series = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let lines: Vec<&str> = series.lines().collect();
    assert_eq!(lines.len(), 3, "{series}");
    let merged_seconds: Vec<Vec<u64>> = (0..2)
        .map(|i| {
            shards
                .iter()
                .flat_map(|s| {
                    let (a, b) = s.0.split_at(s.0.len() / 2);
                    if i == 0 {
                        a.to_vec()
                    } else {
                        b.to_vec()
                    }
                })
                .collect()
        })
        .collect();
    for (line, values) in lines[1..].iter().zip(&merged_seconds) {
        let h = hist_of(values);
        let p99 = format!("{:.3}", h.value_at_quantile(0.99) as f64 / 1000.0);
        assert!(line.contains(&format!(",{},", values.len())), "{line}");
        assert!(line.contains(&p99), "p99 {p99} in {line}");
        assert!(line.contains(",100.0,"), "target rates summed: {line}");
        assert!(line.contains(",20.0,"), "broker CPU averaged: {line}");
    }
    // The shards' fault moments are carried, a moment two shards wrote once.
    let mut csv = csv::Reader::from_reader(series.as_bytes());
    let col = csv.headers().unwrap().iter().position(|h| h == "event");
    let events: Vec<String> = csv
        .records()
        .map(|r| r.unwrap()[col.expect("an event column")].to_owned())
        .collect();
    assert_eq!(events, ["pause", "kill restart"]);

    // compare reads the merged folder like any run.
    let data = harness_results::read::load(&out).unwrap();
    assert_eq!(data.rows.len(), 1);
    assert_eq!(data.series.values().next().map(Vec::len), Some(2));
}

#[test]
fn folders_that_do_not_belong_together_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let lat = samples(1, 100);
    let d = |n: &str| root.path().join(n);
    write_shard(&d("a"), 0, 2, "p", &lat, &lat);
    write_shard(&d("b"), 1, 2, "other", &lat, &lat);
    write_shard(&d("c"), 1, 3, "p", &lat, &lat);
    write_shard(&d("e"), 0, 2, "p", &lat, &lat);
    let err = |dirs: &[&str]| {
        let dirs: Vec<_> = dirs.iter().map(|n| d(n)).collect();
        let e = merge_folders(&dirs, &d("out"), "test").unwrap_err();
        assert_eq!(crate::exit::code_for(&e), crate::exit::INVALID_INPUT);
        assert!(!d("out").exists(), "nothing is written");
        format!("{e:#}")
    };
    let e = err(&["a", "b"]);
    assert!(e.contains("profile name \"other\" vs \"p\""), "{e}");
    let e = err(&["a", "c"]);
    assert!(
        e.contains("one of 3 shards, the first folder one of 2"),
        "{e}"
    );
    let e = err(&["a"]);
    assert!(e.contains("shard 1/2 missing"), "{e}");
    let e = err(&["a", "e"]);
    assert!(e.contains("shard 0/2 is given twice"), "{e}");
    let e = {
        let dirs = vec![d("a"), d("b")];
        format!("{:#}", merge_folders(&dirs, &d("a"), "t").unwrap_err())
    };
    assert!(e.contains("is one of the shard folders"), "{e}");
}

/// Drops the segment histograms from a shard's log, as a job that never started its load has.
fn strip_segment_totals(dir: &Path) {
    let path = dir.join("latency.hlog");
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.contains("/segment"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, kept).unwrap();
}

#[test]
fn a_shard_whose_job_never_ran_is_named_not_refused() {
    let root = tempfile::tempdir().unwrap();
    let lat = samples(7, 300);
    let d = |n: &str| root.path().join(n);
    for i in 0..3 {
        write_shard(&d(&format!("s{i}")), i, 3, "p", &lat, &lat);
    }
    let dirs = vec![d("s0"), d("s1"), d("s2")];

    // Sent something but lost its histograms: the merge could not be exact, so it refuses.
    strip_segment_totals(&d("s2"));
    let e = format!("{:#}", merge_folders(&dirs, &d("out"), "t").unwrap_err());
    assert!(e.contains("segment1/latency") && e.contains("s2"), "{e}");

    // Its broker never came up: an empty invalid row and no histograms; merged and named.
    let row = SummaryRow {
        consumer: None,
        fault: Default::default(),
        knee: Default::default(),
        order: Default::default(),
        profile: "p".into(),
        cell_id: "cafe0001".into(),
        label: "-".into(),
        repetition: 1,
        step: None,
        params: vec![],
        target_rate: Some(100.0 / 3.0),
        duration_s: 2.0,
        seg: SegmentFigures::default(),
        res: Resources::default(),
        valid: false,
        invalid_reason: "broker exited mid-cell".into(),
        invalid_kinds: vec![InvalidKind::BrokerExited],
    };
    std::fs::write(
        d("s2").join("summary.csv"),
        summary_csv(&[], &[row]).unwrap(),
    )
    .unwrap();
    let merged = merge_folders(&dirs, &d("out"), "t").unwrap();
    let r = &merged.rows[0];
    assert_eq!(r.seg.sent, 2 * lat.len() as u64);
    assert!(!r.valid);
    assert!(
        r.invalid_reason.contains("shard 1/3"),
        "{}",
        r.invalid_reason
    );
    assert!(
        r.invalid_reason.contains("shard 2/3") && r.invalid_reason.contains("broker exited"),
        "{}",
        r.invalid_reason
    );
    // The merged row's kinds are the union of its failed shards', and the advice under the
    // merged table counts it under each.
    assert_eq!(
        r.invalid_kinds,
        [InvalidKind::LagP99, InvalidKind::BrokerExited]
    );
    assert!(
        merged.table.contains("NO: lag p99 (1 row)")
            && merged.table.contains("NO: broker exited (1 row)"),
        "{}",
        merged.table
    );
    let written = std::fs::read_to_string(d("out").join("summary.csv")).unwrap();
    assert!(written.contains(",lag_p99;broker_exited,"), "{written}");
}
