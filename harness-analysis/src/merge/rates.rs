//! The whole schedule's target rate of a segment, from the cell's workload in `run.json`.
//!
//! Why not the sum of the shards' targets: each shard writes its share (`rate/N`) with one
//! decimal, so three shards of 100/s would sum to 99.9/s.

use serde_json::Value;

use harness_model::profile::Workload;
use harness_model::schedule::plan;

/// (segment, rate) of every phase of cell `cell_id`, if `run` describes its workload.
pub fn phase_rates(run: &Value, cell_id: &str) -> Option<Vec<(usize, f64)>> {
    let cell = run["cells"]
        .as_array()?
        .iter()
        .find(|c| c["cell_id"] == cell_id)?;
    let w: Workload = serde_json::from_value(cell["workload"].clone()).ok()?;
    Some(plan(&w).1.iter().map(|p| (p.segment, p.rate)).collect())
}

/// The rate of `segment`, or of the last phase for a segment past the schedule (the drain).
pub fn rate_of(rates: &[(usize, f64)], segment: Option<usize>) -> Option<f64> {
    match segment {
        Some(s) => rates.iter().find(|(k, _)| *k == s).map(|(_, r)| *r),
        None => rates.last().map(|(_, r)| *r),
    }
}
