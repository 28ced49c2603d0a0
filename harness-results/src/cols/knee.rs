//! The `summary.csv` columns of `model = "knee"`: whether each probe met the SLO, and the
//! search's result on every probe row of its cell and repetition. Empty in other models.

use serde::Serialize;

use crate::cells::Fixed;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct KneeColumns {
    /// Whether this probe met every `[slo]` term.
    pub slo_met: Option<bool>,
    /// The first `[slo]` term (in the order written) this probe did not meet.
    pub slo_failed: String,
    /// The search's result: the highest rate that met the SLO (empty if none did).
    pub knee_rate: Option<Fixed<1>>,
    /// The term that failed first at the lowest failing rate above the knee: what limits it.
    pub knee_limited_by: String,
    /// On a cluster: each broker's share of the acknowledged sends at the knee (its
    /// confirming probe), `name=0.502;…` in route order; empty with one broker.
    pub knee_broker_share: String,
}
