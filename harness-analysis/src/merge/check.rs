//! Which folders may be merged: one launch of one profile, every shard exactly once.
//!
//! Compared: the profile's name, repetitions, order and seed (they fix the jobs and their
//! order), every cell's parameters, workload and effective broker configuration (from
//! `run.json`), and the shard count. The profile's text is not compared: a comment or a key
//! order may differ between copies of one profile without changing what was sent.

use serde_json::Value;

use crate::merge::error::MergeError;
use crate::merge::folder::ShardFolder;

/// The first place where two JSON values differ: (path, left, right).
pub fn first_difference(path: &str, a: &Value, b: &Value) -> Option<(String, String, String)> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                first_difference(
                    &sub,
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                )
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(&format!("{path}[{i}]"), p, q)),
        _ if a == b => None,
        _ => Some((path.to_owned(), a.to_string(), b.to_string())),
    }
}

/// Cells keyed by id, with only what decides what a cell sends: parameters, workload and the
/// broker configuration's hash.
fn cells(run: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for c in run["cells"].as_array().into_iter().flatten() {
        let id = c["cell_id"].as_str().unwrap_or_default().to_owned();
        out.insert(
            id,
            serde_json::json!({
                "params": c["params"], "workload": c["workload"], "broker_conf_hash": c["broker_conf_hash"],
            }),
        );
    }
    Value::Object(out)
}

/// Refuses folders that are not the shards of one launch, naming the difference.
pub fn check(folders: &[ShardFolder]) -> Result<(), MergeError> {
    let Some(first) = folders.first() else {
        return Err(MergeError::Shards("no folder to merge".into()));
    };
    for f in &folders[1..] {
        let mismatch = |what: String| MergeError::Mismatch {
            a: first.path.clone(),
            b: f.path.clone(),
            what,
        };
        if f.shards != first.shards {
            return Err(mismatch(format!(
                "it is one of {} shards, the first folder one of {}",
                f.shards, first.shards
            )));
        }
        for key in ["name", "repetitions", "order", "seed"] {
            let (x, y) = (&first.run["profile"][key], &f.run["profile"][key]);
            if x != y {
                return Err(mismatch(format!("profile {key} {y} vs {x}")));
            }
        }
        if let Some((path, x, y)) = first_difference("", &cells(&first.run), &cells(&f.run)) {
            return Err(mismatch(format!("cell {path}: {y} vs {x}")));
        }
    }
    // Each shard's consumers read the whole topic, so their lag, lost and duplicate figures
    // are not shares of one consumer group's: adding them would invent numbers.
    if let Some(f) = folders.iter().find(|f| {
        f.run["cells"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| !c["consumer"].is_null())
    }) {
        return Err(MergeError::NotAResult {
            path: f.path.clone(),
            reason: "its cells ran [consumer] groups, whose figures cannot be merged across shards; run the consumers in one process (no --shard) or drop the [consumer] table from the sharded profile".into(),
        });
    }
    // A knee search adapts its next rate to what its own probes saw: shards would search
    // apart, so their probes are not shares of one schedule.
    if let Some(f) = folders.iter().find(|f| {
        f.run["cells"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["workload"]["model"] == "knee")
    }) {
        return Err(MergeError::NotAResult {
            path: f.path.clone(),
            reason: "it is a knee search (model = \"knee\"), whose probes each shard chose on its own; search the knee with one process, or shard an open-loop profile at the rate found".into(),
        });
    }
    let n = first.shards;
    let mut seen: Vec<Option<&ShardFolder>> = vec![None; n as usize];
    for f in folders {
        let slot = seen.get_mut(f.shard as usize).ok_or_else(|| {
            MergeError::Shards(format!(
                "{}: shard index {} is outside 0..{n}",
                f.path.display(),
                f.shard
            ))
        })?;
        if let Some(other) = slot {
            return Err(MergeError::Shards(format!(
                "shard {}/{n} is given twice: {} and {}",
                f.shard,
                other.path.display(),
                f.path.display()
            )));
        }
        *slot = Some(f);
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Shards(format!(
            "shard{} {} missing: a merge of fewer than all {n} shards would not be the profile's schedule; pass every shard's folder",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn first_difference_names_the_path() {
        let a = json!({"x": {"rate": 1000, "size": 1}, "y": [1, 2]});
        let b = json!({"x": {"rate": 2000, "size": 1}, "y": [1, 2]});
        assert_eq!(
            first_difference("", &a, &b),
            Some(("x.rate".into(), "1000".into(), "2000".into()))
        );
        assert_eq!(first_difference("", &a, &a), None);
        let c = json!({"x": {"rate": 1000, "size": 1}, "y": [1, 3]});
        assert_eq!(first_difference("", &a, &c).unwrap().0, "y[1]");
        let d = json!({"x": {"rate": 1000, "size": 1}, "y": [1, 2], "z": true});
        assert_eq!(first_difference("", &a, &d).unwrap().0, "z");
    }
}
