//! Features that were built one at a time and do not compose yet. Each pair is refused before
//! anything starts, with what to do instead, rather than producing figures that look right and
//! are not: consumers, the fault injector and the knee search each drive one broker.

use crate::matrix::Cell;
use crate::profile::{Model, Profile};

/// Why these cells cannot run with a cluster (`[cluster]` or `--namesrv`), or None.
pub fn cluster_problem(profile: &Profile, cells: &[Cell], namesrv: bool) -> Option<String> {
    if profile.cluster.is_none() && !namesrv {
        return None;
    }
    let what = if namesrv { "--namesrv" } else { "[cluster]" };
    if cells.iter().any(|c| c.consumer.is_some()) {
        return Some(format!(
            "{what} spreads the topic over several brokers, but the [consumer] groups read one broker's queues, so their lag and lost counts would be wrong; run the consumers against one broker (no [cluster])"
        ));
    }
    // `fault.role` hits a member of a pair the harness started (`[cluster] slaves = 1`).
    let pair_fault = |c: &Cell| c.fault.as_ref().is_some_and(|f| f.role.is_some()) && !namesrv;
    if cells.iter().any(|c| c.fault.is_some() && !pair_fault(c)) {
        return Some(format!(
            "{what} runs several brokers, but [fault] kills, pauses and reads back one broker's store; run fault experiments on one broker (no [cluster])"
        ));
    }
    if cells.iter().any(|c| c.workload.model == Model::Knee) {
        return Some(format!(
            "{what} with model = \"knee\" is not supported: the search keeps one broker per cell; search each broker's knee alone, or use model = \"steps\" across the cluster"
        ));
    }
    None
}
