//! Features that were built one at a time and do not compose yet. Each pair is refused before
//! anything starts, with what to do instead, rather than producing figures that look right and
//! are not: the consumers read one broker. (Faults on one broker of a cluster and knee searches
//! across a cluster compose; what `[fault]` still refuses there is in `fault::cluster`.)

use crate::matrix::Cell;
use crate::profile::Profile;

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
    None
}
