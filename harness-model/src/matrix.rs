//! Matrix expansion: the deterministic cross product of a profile's axes, and the order in
//! which cells and repetitions run.
//!
//! Axes are sorted by key; the first axis varies slowest, values keep the order written in the
//! profile. Repetitions are interleaved (round 1 of every cell, then round 2, ...) so that the
//! drift of a noisy machine spreads over all cells; `randomized` shuffles each round.

use std::collections::BTreeMap;

use crate::fnv::Fnv1a;
use crate::profile::{
    consumer_with, fault_plan, value_string, workload_with, Consumer, FaultError, FaultPlan, Order,
    Profile, TableError, Workload,
};

/// One configuration of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Position in the cross product.
    pub index: usize,
    /// Stable id: 8 hex digits of FNV-1a over the sorted `key=value` lines.
    pub id: String,
    /// Readable form: `sendMessageThreadPoolNums=4,useReentrantLockWhenPutMessage=true`.
    pub label: String,
    /// `(axis key, value as written)` in axis order.
    pub params: Vec<(String, String)>,
    pub workload: Workload,
    /// Effective broker keys: the profile's fixed keys plus this cell's broker axes.
    pub broker: BTreeMap<String, String>,
    /// The consumers of this cell (the profile's `[consumer]` plus this cell's consumer axes).
    pub consumer: Option<Consumer>,
    /// The profile's `[fault]` plus this cell's fault axes; None without faults.
    pub fault: Option<FaultPlan>,
    /// Brokers of the cell's cluster: the `cluster.brokers` axis, else `[cluster] brokers`;
    /// None without `[cluster]`.
    pub brokers: Option<u32>,
}

/// One unit of work: a cell and its repetition number (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    pub cell: usize,
    pub repetition: u32,
}

/// Stable cell id from its parameters: ids are persisted in result files and baselines, so
/// they must depend on nothing but the `key=value` pairs (not their order).
pub fn cell_id(params: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort();
    let mut h = Fnv1a::new();
    for (k, v) in sorted {
        h.write(k.as_bytes())
            .write(b"=")
            .write(v.as_bytes())
            .write(b"\n");
    }
    let h = h.finish();
    format!("{:08x}", (h >> 32) as u32 ^ h as u32)
}

fn short_key(key: &str) -> &str {
    key.strip_prefix("broker.")
        .or_else(|| key.strip_prefix("workload."))
        .or_else(|| key.strip_prefix("consumer."))
        .or_else(|| key.strip_prefix("fault."))
        .or_else(|| key.strip_prefix("cluster."))
        .unwrap_or(key)
}

/// A combination of axis values that is refused although each value passed alone (the profile
/// loader checks values one at a time; closed + oneway is found here).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("matrix cell {label}: {problem}")]
pub struct CellError {
    /// The cell's readable label (`model=closed,oneway=true`).
    pub label: String,
    pub problem: CellProblem,
}

/// Which section of a cell is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CellProblem {
    #[error(transparent)]
    Workload(TableError),
    #[error(transparent)]
    Consumer(TableError),
    #[error(transparent)]
    Fault(FaultError),
}

impl CellError {
    fn new(params: &[(String, String)], problem: CellProblem) -> CellError {
        CellError {
            label: label_of(params),
            problem,
        }
    }
}

/// Expands the profile's axes into cells.
pub fn expand(profile: &Profile) -> Result<Vec<Cell>, CellError> {
    let mut cells = Vec::new();
    let total: usize = profile.axes.iter().map(|a| a.values.len()).product();
    for index in 0..total {
        // Odometer: the last axis varies fastest.
        let mut rem = index;
        let mut picks = vec![0usize; profile.axes.len()];
        for (i, axis) in profile.axes.iter().enumerate().rev() {
            picks[i] = rem % axis.values.len();
            rem /= axis.values.len();
        }
        let mut table = profile.workload_table.clone();
        let mut broker = profile.broker.clone();
        let mut consumer_table = profile.consumer_table.clone();
        let mut fault_table = profile.fault_table.clone();
        let mut brokers = profile.cluster.as_ref().map(|c| c.brokers);
        let mut params = Vec::new();
        for (axis, &pick) in profile.axes.iter().zip(&picks) {
            let value = &axis.values[pick];
            params.push((axis.key.clone(), value_string(value)));
            if let Some(k) = axis.key.strip_prefix("workload.") {
                table.insert(k.to_owned(), value.clone());
            } else if let Some(k) = axis.key.strip_prefix("broker.") {
                broker.insert(k.to_owned(), value_string(value));
            } else if let (Some(k), Some(t)) =
                (axis.key.strip_prefix("consumer."), consumer_table.as_mut())
            {
                t.insert(k.to_owned(), value.clone());
            } else if let Some(k) = axis.key.strip_prefix("fault.") {
                fault_table.insert(k.to_owned(), value.clone());
            } else if axis.key == crate::profile::CLUSTER_BROKERS_AXIS {
                // Checked when the profile was read: an integer in 1..=MAX_BROKERS.
                brokers = value.as_integer().map(|n| n as u32).or(brokers);
            }
        }
        // `[broker."<version>"]`: the keys of this cell's release (no axis sets them).
        if let Some(keys) = broker
            .get(crate::profile::VERSION_KEY)
            .and_then(|v| profile.broker_by_version.get(v))
        {
            broker.extend(keys.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        // Each value was validated alone; combinations (e.g. closed + oneway) are checked here.
        let workload = match table.iter().next() {
            Some((k, v)) => workload_with(&table, k, v),
            None => workload_with(&table, "model", &toml::Value::String("open".into())),
        }
        .map_err(|e| CellError::new(&params, CellProblem::Workload(e)))?;
        let consumer = match &consumer_table {
            Some(t) => Some(
                consumer_with(
                    t,
                    "group",
                    &t.get("group")
                        .cloned()
                        .unwrap_or_else(|| toml::Value::String(Consumer::default().group)),
                )
                .map_err(|e| CellError::new(&params, CellProblem::Consumer(e)))?,
            ),
            None => None,
        };
        let fault = fault_plan(&fault_table)
            .and_then(|f| match &f {
                Some(plan) => plan.check_workload(&workload).map(|()| f),
                None => Ok(f),
            })
            .map_err(|e| CellError::new(&params, CellProblem::Fault(e)))?;
        cells.push(Cell {
            index,
            id: cell_id(&params),
            label: label_of(&params),
            params,
            workload,
            broker,
            consumer,
            fault,
            brokers,
        });
    }
    Ok(cells)
}

fn label_of(params: &[(String, String)]) -> String {
    if params.is_empty() {
        return "(base)".to_owned();
    }
    params
        .iter()
        .map(|(k, v)| format!("{}={v}", short_key(k)))
        .collect::<Vec<_>>()
        .join(",")
}

/// The run order: `repetitions` rounds over all cells; a randomized order is reproducible
/// from `seed`.
pub fn schedule(cells: usize, repetitions: u32, order: Order, seed: u64) -> Vec<Job> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut jobs = Vec::with_capacity(cells * repetitions as usize);
    for repetition in 1..=repetitions {
        let mut round: Vec<usize> = (0..cells).collect();
        if order == Order::Randomized {
            rng.shuffle(&mut round);
        }
        jobs.extend(round.into_iter().map(|cell| Job { cell, repetition }));
    }
    jobs
}

/// Sorted axis keys: the `param_<key>` columns of the CSV files.
pub fn axis_keys(profile: &Profile) -> Vec<String> {
    profile.axes.iter().map(|a| a.key.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn profile(text: &str) -> Result<Profile, String> {
        Profile::parse(text, "p.toml", Path::new("p.toml"), &[]).map_err(|e| e.to_string())
    }

    const BY_VERSION: &str = r#"
name = "v"
[workload]
duration = "1s"
[broker]
brokerRole = "SYNC_MASTER"
slaveTimeout = 1000
[broker."5.3.3"]
inSyncReplicas = 2
slaveTimeout = 2000
[matrix]
"broker.kind" = ["in-tree", "apache"]
"broker.version" = ["4.9.7", "5.3.3"]
"#;

    #[test]
    fn a_release_s_table_reaches_only_that_release_s_cells() {
        let p = profile(BY_VERSION).unwrap();
        let cells = expand(&p).unwrap();
        assert_eq!(cells.len(), 4);
        for c in &cells {
            let v53 = c.broker["version"] == "5.3.3";
            assert_eq!(c.broker.contains_key("inSyncReplicas"), v53, "{}", c.label);
            // Over [broker]'s value, for that release only.
            let wait = if v53 { "2000" } else { "1000" };
            assert_eq!(c.broker["slaveTimeout"], wait, "{}", c.label);
            assert_eq!(c.broker["brokerRole"], "SYNC_MASTER");
        }
        // A refused key is located at its line in the release's table.
        assert_eq!(p.broker_origins["inSyncReplicas"], "p.toml:9:1");
    }

    #[test]
    fn a_release_s_table_is_checked() {
        let e = profile(&BY_VERSION.replace("\"5.3.3\"]", "\"5.3\"]")).unwrap_err();
        assert!(e.contains("names a release, one of 4.9.7, 5.3.3"), "{e}");
        let e =
            profile(&BY_VERSION.replace("inSyncReplicas = 2", "kind = \"apache\"")).unwrap_err();
        assert!(e.contains("are set in [broker] or the matrix"), "{e}");
        let axis = BY_VERSION.replace(
            "[matrix]\n",
            "[matrix]\n\"broker.inSyncReplicas\" = [1, 2]\n",
        );
        let e = profile(&axis).unwrap_err();
        assert!(
            e.contains("both a matrix axis and a key of [broker.\"5.3.3\"]"),
            "{e}"
        );
    }
}
