//! `harness merge DIR... --out DIR`: reads every shard folder, refuses what does not belong
//! together, and writes one result folder of the same format, which `compare` and `gate` read
//! like any run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde_json::{json, Value};

use crate::merge::args::MergeArgs;
use crate::merge::series::{merge_series, MergedSecond};
use crate::merge::summary::merge_rows;
use crate::recorder::histogram;
use crate::report::hlog_totals::{parse_tag, TagKind, SECOND_HISTOGRAMS};
use crate::report::{self, HlogWriter, SummaryRow, TimeseriesWriter};
use harness_analysis::merge::check::check;
use harness_analysis::merge::folder::{self, ShardFolder};
use harness_analysis::merge::MergeError;
use harness_model::profile::higher_is_better;

/// What a merge produced.
#[derive(Debug)]
pub struct MergeOutcome {
    pub out_dir: PathBuf,
    pub rows: Vec<SummaryRow>,
    pub shards: u32,
    pub table: String,
}

/// The `merge` subcommand.
pub fn run_merge(args: &MergeArgs) -> anyhow::Result<ExitCode> {
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let outcome = merge_folders(&args.dirs, &args.out, &command_line)?;
    println!("{}", outcome.table);
    let invalid = outcome.rows.iter().filter(|r| !r.valid).count();
    println!(
        "merged {} shards into {} ({} rows, {invalid} invalid)",
        outcome.shards,
        outcome.out_dir.display(),
        outcome.rows.len()
    );
    Ok(ExitCode::SUCCESS)
}

fn check_out(out: &Path, dirs: &[PathBuf]) -> Result<(), MergeError> {
    let refuse = |reason: &str| MergeError::Out {
        path: out.to_owned(),
        reason: reason.to_owned(),
    };
    if out.exists() {
        let canon = out.canonicalize().ok();
        if dirs.iter().any(|d| d.canonicalize().ok() == canon) {
            return Err(refuse("is one of the shard folders; choose a new folder"));
        }
        let empty = std::fs::read_dir(out)
            .map(|mut d| d.next().is_none())
            .unwrap_or(false);
        if !empty {
            return Err(refuse(
                "exists and is not empty; choose a new folder (a merge never overwrites results)",
            ));
        }
    }
    Ok(())
}

/// Merges `dirs` into `out`. Refusals are invalid input (exit 3); nothing is written then.
pub fn merge_folders(
    dirs: &[PathBuf],
    out: &Path,
    command_line: &str,
) -> anyhow::Result<MergeOutcome> {
    let invalid = |e: MergeError| crate::exit::invalid(anyhow::Error::new(e));
    check_out(out, dirs).map_err(invalid)?;
    let mut folders = dirs
        .iter()
        .map(|d| folder::read(d))
        .collect::<Result<Vec<_>, _>>()
        .map_err(invalid)?;
    check(&folders).map_err(invalid)?;
    folders.sort_by_key(|f| f.shard);
    let (axis_keys, rows) = merge_rows(&folders).map_err(invalid)?;
    let series = merge_series(&folders).map_err(invalid)?;

    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    report::write_atomic(
        &out.join("summary.csv"),
        &report::summary_csv(&axis_keys, &rows).context("rendering summary.csv")?,
    )
    .context("writing summary.csv")?;
    let mut ts =
        TimeseriesWriter::create(&out.join("timeseries.csv")).context("creating timeseries.csv")?;
    for r in &series.rows {
        ts.append(r).context("writing timeseries.csv")?;
    }
    write_hlog(&out.join("latency.hlog"), &folders, &series.seconds)
        .context("writing latency.hlog")?;
    let run = run_json(&folders, command_line);
    report::write_atomic(
        &out.join("run.json"),
        serde_json::to_string_pretty(&run)?.as_bytes(),
    )
    .context("writing run.json")?;
    let key_metric = folders[0].run["profile"]["key_metric"]
        .as_str()
        .unwrap_or("ok_rate")
        .to_owned();
    Ok(MergeOutcome {
        out_dir: out.to_owned(),
        table: report::table(&rows, &key_metric, higher_is_better(&key_metric)),
        rows,
        shards: folders[0].shards,
    })
}

fn unix(t: f64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs_f64(t.max(0.0))
}

/// The merged interval log: each merged second, then every segment histogram summed over the
/// shards, on the earliest shard's base time.
fn write_hlog(
    path: &Path,
    folders: &[ShardFolder],
    seconds: &[MergedSecond],
) -> anyhow::Result<()> {
    let base = folders
        .iter()
        .map(|f| f.hlog.base)
        .reduce(f64::min)
        .unwrap_or(0.0);
    let mut log = HlogWriter::create(path, unix(base))?;
    for MergedSecond { job, end, hists } in seconds {
        for name in SECOND_HISTOGRAMS {
            if let Some(h) = hists.get(name).filter(|h| !h.is_empty()) {
                log.push(&format!("{job}/{name}"), end - 1.0 - base, 1.0, h);
            }
        }
        log.flush_second()?;
    }
    // Segment totals, in the first shard's order, summed over every shard.
    for e in &folders[0].hlog.entries {
        if !matches!(parse_tag(&e.tag), Some(TagKind::Segment { .. })) {
            continue;
        }
        let mut total = histogram();
        for f in folders {
            for other in f.hlog.entries.iter().filter(|o| o.tag == e.tag) {
                total
                    .add(&other.hist)
                    .map_err(|err| anyhow::anyhow!("{}: {err:?}", e.tag))?;
            }
        }
        log.push(&e.tag, folders[0].hlog.base + e.start - base, e.len, &total);
    }
    log.flush_second()?;
    Ok(())
}

/// The first shard's `run.json`, marked as a merge of all of them.
fn run_json(folders: &[ShardFolder], command_line: &str) -> Value {
    let mut run = folders[0].run.clone();
    let text = |f: &ShardFolder, k: &str| f.run[k].as_str().unwrap_or_default().to_owned();
    let statuses: Vec<String> = folders.iter().map(|f| text(f, "status")).collect();
    let status = ["running", "interrupted"]
        .into_iter()
        .find(|s| statuses.iter().any(|x| x == s))
        .unwrap_or("finished");
    let starts: Vec<String> = folders.iter().map(|f| text(f, "start")).collect();
    let ends: Vec<String> = folders.iter().map(|f| text(f, "end")).collect();
    if let Value::Object(m) = &mut run {
        m.insert("shard".into(), Value::Null);
        m.insert("shards".into(), json!(folders[0].shards));
        m.insert("command_line".into(), json!(command_line));
        m.insert("status".into(), json!(status));
        m.insert("interrupted".into(), json!(status == "interrupted"));
        m.insert("start".into(), json!(starts.iter().min()));
        m.insert(
            "end".into(),
            if ends.iter().any(String::is_empty) {
                Value::Null
            } else {
                json!(ends.iter().max())
            },
        );
        m.insert(
            "jobs_done".into(),
            json!(folders
                .iter()
                .filter_map(|f| f.run["jobs_done"].as_u64())
                .min()),
        );
        m.insert(
            "merged_from".into(),
            Value::Array(
                folders
                    .iter()
                    .map(|f| {
                        json!({
                            "path": f.path.display().to_string(), "shard": f.shard,
                            "host": f.run["host"], "harness_revision": f.run["harness_revision"],
                            "start": f.run["start"], "end": f.run["end"], "status": f.run["status"],
                            "command_line": f.run["command_line"],
                        })
                    })
                    .collect(),
            ),
        );
    }
    run
}
