//! Why one job did not run to its end: its setup (`job::run_job`: folder, cluster, broker) or
//! its load (the typed error of `sampler::drive`). The job
//! turns it into its rows' `invalid_reason` (its text is the reason; `report/advice.rs`
//! explains each by its start).

use std::path::PathBuf;

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

#[cfg(test)]
mod tests {
    use harness_results::InvalidKind;

    use super::*;

    /// The reasons these errors write open with their kind's text, so the advice under the
    /// table finds them (`report/advice.rs`).
    #[test]
    fn each_error_with_advice_reads_as_its_kind() {
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
                JobError::BrokerExited("broker exited mid-cell (signal: 9); see broker.log".into()),
                InvalidKind::BrokerExited,
            ),
        ] {
            assert_eq!(InvalidKind::in_reason(&e.to_string()), [kind], "{e}");
        }
    }
}
