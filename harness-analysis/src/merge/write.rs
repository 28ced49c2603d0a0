//! What the merged folder holds besides its rows: the interval log (each merged second's
//! histograms, then every segment histogram summed over the shards) and `run.json` (the first
//! shard's, marked as a merge of all of them). `harness merge` writes them next to the rows
//! ([`crate::merge::rows`], [`crate::merge::series`]).

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::merge::folder::ShardFolder;
use crate::merge::series::MergedSecond;
use harness_results::hlog_totals::{parse_tag, TagKind, SECOND_HISTOGRAMS};
use harness_results::segment::histogram;
use harness_results::HlogWriter;

fn unix(t: f64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs_f64(t.max(0.0))
}

/// The merged interval log: each merged second, then every segment histogram summed over the
/// shards, on the earliest shard's base time.
pub fn write_hlog(
    path: &Path,
    folders: &[ShardFolder],
    seconds: &[MergedSecond],
) -> std::io::Result<()> {
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
                    .map_err(|err| std::io::Error::other(format!("{}: {err:?}", e.tag)))?;
            }
        }
        log.push(&e.tag, folders[0].hlog.base + e.start - base, e.len, &total);
    }
    log.flush_second()?;
    Ok(())
}

/// The first shard's `run.json`, marked as a merge of all of them.
pub fn run_json(folders: &[ShardFolder], command_line: &str) -> Value {
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
