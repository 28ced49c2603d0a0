//! Cluster routing as a job part: with a cluster (`[cluster]` or `--namesrv`), before the
//! load the topic goes on every broker and the route is read from the name server
//! (`JobCluster::prepare`); the load then connects to every broker and asks the router for
//! each attempt's queue, and broker 0 answers the job's admin requests.

use crate::part::{Board, Brokers, JobPart, PartError};
use crate::runner::plan::LoadConfig;

/// The job's routing over its cluster's brokers (the part is registered only for a cluster).
pub struct ClusterRouting;

impl JobPart for ClusterRouting {
    fn prepare(
        &mut self,
        brokers: &mut Brokers<'_>,
        cfg: &mut LoadConfig,
        board: &mut Board,
    ) -> Result<(), PartError> {
        let Some(c) = brokers.cluster.as_deref_mut() else {
            return Ok(());
        };
        let router = c.prepare(&cfg.workload)?;
        cfg.addr = router.brokers[0].addr;
        cfg.cluster = Some(router);
        board.broker_names = c.broker_names();
        Ok(())
    }
}
