//! The seam for job parts: a feature that rides along with a job's load (order accounting,
//! replication columns, ...) plugs in through [`JobPart`]. The sampling loop
//! (`runner::sampler::drive`) tells each part when the load starts, hands it every second's
//! row and the broker's runtime info so it fills its own time-series columns, and once the
//! load is over lets it fill its own summary columns. The loop knows no part by name.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use harness_model::profile::Workload;
use rmq_client::uniq_key::KeySpace;

use crate::report::{OrderColumns, Resources, TimeseriesRow};

/// The load as a part sees it when it starts.
#[derive(Clone, Copy)]
pub struct LoadStarted<'a> {
    /// The broker that answers the job's admin requests.
    pub addr: SocketAddr,
    pub workload: &'a Workload,
    /// The UNIQ_KEY space the load writes.
    pub keys: &'a KeySpace,
}

/// One second as a part sees it.
#[derive(Clone, Copy)]
pub struct Second<'a> {
    /// GET_BROKER_RUNTIME_INFO of this second (None when the broker did not answer, and in
    /// the consumers' drain, which samples no broker).
    pub info: Option<&'a BTreeMap<String, String>>,
    /// The load has ended: the part's last reading.
    pub last: bool,
}

/// The summary columns a part may fill.
pub struct JobColumns<'a> {
    pub res: &'a mut Resources,
    pub order: &'a mut OrderColumns,
}

/// A feature plugged into a job.
pub trait JobPart {
    /// The load has started (its keys are known now).
    fn load_started(&mut self, _load: LoadStarted<'_>) {}

    /// Fills this part's columns of one second's row.
    fn second(&mut self, second: Second<'_>, row: &mut TimeseriesRow);

    /// Fills this part's summary columns; an error makes the job's rows invalid.
    fn finish(self: Box<Self>, cols: JobColumns<'_>) -> Result<(), String>;
}
