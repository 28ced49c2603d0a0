//! Why a job's cluster could not be started or made ready for the load: which member did not
//! start, which step of route discovery or topic creation failed, which slave is missing. The
//! job part turns it into `PartError::Cluster` and the job into its rows' `invalid_reason`, so
//! the texts below are what a user reads there.

use std::net::{AddrParseError, SocketAddr};
use std::time::Duration;

use rmq_client::admin::ClientError;
use rmq_client::name_server::NameServerError;

use crate::kind::StartError;

/// The client's errors are boxed: they are large, and this travels up every `Result` of a
/// cluster's start and preparation (`clippy::result_large_err`).
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The cluster's name server did not start.
    #[error("{0}")]
    NameServer(#[source] StartError),
    /// A master (`broker-<i>`) did not start.
    #[error("{member}: {source}")]
    Broker {
        member: String,
        #[source]
        source: StartError,
    },
    /// A slave (`broker-<i>-slave`) did not start.
    #[error("{member}: {source}; see {member}.log")]
    Slave {
        member: String,
        #[source]
        source: StartError,
    },
    /// Broker `broker`'s conf cannot have a slave (`cluster::slaves::master_problem`).
    #[error("broker-{broker}: {why}")]
    NotAMaster { broker: usize, why: String },
    /// The master printed no HA listening line, so a slave has nothing to connect to.
    #[error("broker-{broker}: no `ha listening on` line: this broker does not replicate")]
    NotReplicating { broker: usize },
    /// A master did not report its slave connected in time (`member`: `broker-<i>` or the
    /// route's broker name).
    #[error("{member}: {reason}")]
    SlaveNotConnected { member: String, reason: String },
    /// A name-server request failed (broker list, route).
    #[error("{0}")]
    Query(#[source] Box<NameServerError>),
    #[error("the name server {namesrv} lists no broker")]
    NoBroker { namesrv: SocketAddr },
    #[error(
        "only {registered} of {expected} brokers registered with the name server {namesrv} within 20 s"
    )]
    TooFewBrokers {
        registered: usize,
        expected: usize,
        namesrv: SocketAddr,
    },
    /// The admin connection to a master, for creating the topic.
    #[error("{broker} ({addr}): {source}")]
    Admin {
        broker: String,
        addr: SocketAddr,
        #[source]
        source: Box<ClientError>,
    },
    #[error("creating topic {topic} on {broker} ({addr}): {source}")]
    CreateTopic {
        topic: String,
        broker: String,
        addr: SocketAddr,
        #[source]
        source: Box<ClientError>,
    },
    #[error("the name server {namesrv} has no route for topic {topic} after {wait:?}")]
    NoRoute {
        namesrv: SocketAddr,
        topic: String,
        wait: Duration,
    },
    #[error("topic {topic} has no writeable queue in its route")]
    NoWriteableQueue { topic: String },
    #[error("starting the route refresh: {0}")]
    RouteRefresh(#[source] std::io::Error),
    #[error(
        "[cluster] slaves = 1, but the route of {topic} from {namesrv} lists no slave (brokerId > 0) of {broker} within {wait:?}"
    )]
    NoSlaveInRoute {
        topic: String,
        namesrv: SocketAddr,
        broker: String,
        wait: Duration,
    },
    #[error("{broker}'s slave address {addr}: {source}")]
    SlaveAddress {
        broker: String,
        addr: String,
        #[source]
        source: AddrParseError,
    },
    #[error("creating topic {topic} on {broker}'s slave ({addr}): {source}")]
    SlaveCreateTopic {
        topic: String,
        broker: String,
        addr: String,
        #[source]
        source: Box<ClientError>,
    },
}

/// A member the job stopped that did not exit cleanly: its rows are invalid (a broker that
/// failed at shutdown).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{member} exited with {status} at shutdown")]
pub struct ExitedAtStop {
    /// `broker-<i>`, `broker-0-slave`.
    pub member: String,
    pub status: std::process::ExitStatus,
}

impl ClusterError {
    /// The kind of invalid row this error makes: a master or slave whose process exited
    /// before it was ready is a broker that exited; the rest name their cause themselves.
    pub fn kind(&self) -> Option<harness_results::InvalidKind> {
        match self {
            ClusterError::Broker { source, .. } | ClusterError::Slave { source, .. } => {
                source.kind()
            }
            _ => None,
        }
    }
}

impl From<NameServerError> for ClusterError {
    fn from(e: NameServerError) -> Self {
        ClusterError::Query(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts are rows' `invalid_reason`s, which users and scripts read: they stay those
    /// of the strings these variants replaced.
    #[test]
    fn reasons_read_as_before() {
        let ns: SocketAddr = "127.0.0.1:9876".parse().unwrap();
        assert_eq!(
            ClusterError::TooFewBrokers {
                registered: 1,
                expected: 2,
                namesrv: ns
            }
            .to_string(),
            "only 1 of 2 brokers registered with the name server 127.0.0.1:9876 within 20 s"
        );
        assert_eq!(
            ClusterError::NoRoute {
                namesrv: ns,
                topic: "T".into(),
                wait: Duration::from_secs(15)
            }
            .to_string(),
            "the name server 127.0.0.1:9876 has no route for topic T after 15s"
        );
        assert_eq!(
            ClusterError::Slave {
                member: "broker-1-slave".into(),
                source: StartError::Unsupported("no".into())
            }
            .to_string(),
            "broker-1-slave: no; see broker-1-slave.log"
        );
        assert_eq!(
            ClusterError::NotReplicating { broker: 0 }.to_string(),
            "broker-0: no `ha listening on` line: this broker does not replicate"
        );
    }
}
