//! Why one job did not run to its end: its setup (`job::run_job`: folder, cluster, broker) or
//! its load (the typed error of `sampler::drive`). The job turns it into its rows'
//! `invalid_reason` (its text) and `invalid_kinds` ([`JobError::kind`], which
//! `report/advice.rs` explains).

use std::path::PathBuf;

use harness_results::{Invalid, InvalidKind};

use rmq_client::admin::ClientError;

use crate::cluster::ClusterError;
use crate::kind::StartError;
use crate::part::PartError;
use crate::runner::load::LoadError;

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The job's folder (broker.conf, logs, stores) could not be made.
    #[error("creating {}: {source}", path.display())]
    JobDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `store_tmpfs`: the store's tmpfs could not be mounted.
    #[error("store tmpfs: {0}")]
    Tmpfs(#[from] crate::tmpfs::TmpfsError),
    /// The job's own cluster (`[cluster]`) did not start.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The job's own broker did not start.
    #[error(transparent)]
    Broker(#[from] StartError),
    /// A job part failed (`crate::part`).
    #[error(transparent)]
    Part(#[from] PartError),
    #[error("admin connection: {0}")]
    Admin(#[source] ClientError),
    #[error("creating topic {topic}: {source}")]
    CreateTopic {
        topic: String,
        #[source]
        source: ClientError,
    },
    /// The load could not start.
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("writing the time series: {0}")]
    Series(#[source] std::io::Error),
    #[error("writing the segment histograms: {0}")]
    SegmentHistograms(#[source] std::io::Error),
    /// A broker the job started exited mid-cell (the text names it and its log).
    #[error("{0}")]
    BrokerExited(String),
}

impl JobError {
    /// The kind of invalid row this error makes, when the advice knows its cause and fix.
    pub fn kind(&self) -> Option<InvalidKind> {
        match self {
            JobError::Cluster(e) => e.kind(),
            JobError::Broker(e) => e.kind(),
            JobError::Part(e) => e.kind(),
            JobError::Series(_) | JobError::SegmentHistograms(_) => {
                Some(InvalidKind::WritingResults)
            }
            JobError::BrokerExited(_) => Some(InvalidKind::BrokerExited),
            JobError::JobDir { .. }
            | JobError::Tmpfs(_)
            | JobError::Admin(_)
            | JobError::CreateTopic { .. }
            | JobError::Load(_) => None,
        }
    }

    /// The rows' reason: this error's text and kind.
    pub fn invalid(&self) -> Invalid {
        Invalid {
            kind: self.kind(),
            reason: self.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The errors with advice carry their kind, and the text the rows show is the error's.
    #[test]
    fn each_error_with_advice_has_its_kind() {
        let io = || std::io::Error::other("disk full");
        for (e, kind) in [
            (JobError::Series(io()), InvalidKind::WritingResults),
            (
                JobError::SegmentHistograms(io()),
                InvalidKind::WritingResults,
            ),
            (
                JobError::Part(PartError::Series(io())),
                InvalidKind::WritingResults,
            ),
            (
                JobError::BrokerExited(
                    "broker-1 exited mid-cell (signal: 9); see broker-1.log".into(),
                ),
                InvalidKind::BrokerExited,
            ),
            (
                JobError::Part(PartError::Stop(crate::cluster::ExitedAtStop {
                    member: "broker-0".into(),
                    status: std::os::unix::process::ExitStatusExt::from_raw(6),
                })),
                InvalidKind::BrokerExited,
            ),
            (
                JobError::Broker(StartError::exited(
                    "broker exited before it was ready (exit status: 1); see broker.log",
                    std::path::Path::new("/nonexistent/broker.log"),
                )),
                InvalidKind::BrokerExited,
            ),
            (
                JobError::Cluster(ClusterError::Slave {
                    member: "broker-0-slave".into(),
                    source: StartError::exited(
                        "broker exited before it was ready (exit status: 1); see broker.log",
                        std::path::Path::new("/nonexistent/broker-0-slave.log"),
                    ),
                }),
                InvalidKind::BrokerExited,
            ),
        ] {
            let why = e.invalid();
            assert_eq!(why.kind, Some(kind), "{e}");
            assert_eq!(why.reason, e.to_string());
        }
        let no_kind = JobError::Part(PartError::Fault(crate::fault::FaultError::NotInCell {
            name: "broker-9".into(),
        }));
        assert_eq!(no_kind.invalid().kind, None);
    }
}
