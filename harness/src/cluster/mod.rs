//! Clusters: a name server and several brokers per cell (`[cluster] brokers = N`), or an
//! existing cluster behind `--namesrv`; route discovery, the Java producer's queue selection,
//! latency fault tolerance and retries on another broker.
//!
//! * cell.rs     — the name server and broker processes of one job, per-broker broker.conf
//! * discover.rs — GET_ROUTEINFO_BY_TOPIC / GET_BROKER_CLUSTER_INFO, the 30-s route refresh
//! * router.rs   — queue selection (round robin, retry elsewhere, fault avoidance)
//! * latency_fault.rs — the client's latency / not-available-duration tables
//! * job.rs      — the cluster of one job: started (`[cluster]`) or existing (`--namesrv`)
//! * job_part.rs — its routing as a job part (`crate::part`): route and router before the load
//! * setup.rs    — what a job does before its load: topic on every broker, route, router
//! * slaves.rs   — `[cluster] slaves = 1`: a slave per broker, wired to its master, connected
//! * error.rs    — why a cluster did not start or get ready (`ClusterError`)

pub mod cell;
pub mod discover;
pub mod error;
pub mod job;
pub mod job_part;
pub mod latency_fault;
pub mod router;
pub mod setup;
pub mod slaves;

pub use cell::{broker_conf, broker_name, CellCluster};
pub use error::{ClusterError, ExitedAtStop};
pub use job::JobCluster;
pub use latency_fault::FaultVersion;
pub use router::{BrokerRoute, Queue, Router, Selection};
pub use setup::{prepare, ClusterLoad};
