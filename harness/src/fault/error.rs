//! Why a fault experiment has no result: its target could not be resolved on the cluster's
//! route, or the stores could not be read back afterwards. The job's rows become invalid with
//! this text (`PartError::Fault`), the same words as when these were strings.

use rmq_client::admin::ClientError;

use crate::cluster::ExitedAtStop;
use crate::fault::pids::PidError;
use crate::kind::StartError;
use crate::reconcile::error::ReconcileError;

#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    /// A `--namesrv` broker's pid is not known.
    #[error(transparent)]
    Pid(#[from] PidError),
    /// The harness's faulted broker is not in the topic's route.
    #[error("[fault] broker = {broker}: {name} is not in the topic's route")]
    NotInRoute { broker: usize, name: String },
    /// `fault.broker` is past the end of a `--namesrv` route.
    #[error(
        "`fault.broker` = {broker}, but the --namesrv route lists {} broker{} ({}); brokers count from 0 in that order",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        names.join(", ")
    )]
    BeyondRoute { broker: usize, names: Vec<String> },
    /// A route's broker is not one of the cell's (its store is not known).
    #[error("reconcile: {name} is not a broker of this cell")]
    NotInCell { name: String },
    /// A store could not be read back.
    #[error(transparent)]
    Reconcile(#[from] ReconcileError),
    /// A `--namesrv` broker could not be read back where it runs.
    #[error(
        "{source} ({name}: a broker that does not answer cannot be read back through the protocol)"
    )]
    Live {
        name: String,
        #[source]
        source: ReconcileError,
    },
    /// A member of the faulted pair did not exit cleanly when stopped before its read-back.
    #[error(transparent)]
    PairStop(#[from] ExitedAtStop),
    /// No broker could be opened on a pair member's store.
    #[error("{name}: reconcile: opening {name}'s store: {source}")]
    PairOpen {
        name: String,
        #[source]
        source: StartError,
    },
    /// The topic could not be created on a pair member's store (slaves do not copy it).
    #[error("{name}: reconcile: topic {topic} on {name}'s store: {source}")]
    PairTopic {
        name: String,
        topic: String,
        #[source]
        source: Box<ClientError>,
    },
    /// A pair member's store could not be read.
    #[error("{name}: {source}")]
    PairRead {
        name: String,
        #[source]
        source: ReconcileError,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts are rows' `invalid_reason`s: they stay those of the strings they replaced.
    #[test]
    fn reasons_read_as_before() {
        assert_eq!(
            FaultError::BeyondRoute {
                broker: 2,
                names: vec!["broker-a".into(), "broker-b".into()]
            }
            .to_string(),
            "`fault.broker` = 2, but the --namesrv route lists 2 brokers (broker-a, broker-b); brokers count from 0 in that order"
        );
        assert_eq!(
            FaultError::BeyondRoute {
                broker: 1,
                names: vec!["broker-a".into()]
            }
            .to_string(),
            "`fault.broker` = 1, but the --namesrv route lists 1 broker (broker-a); brokers count from 0 in that order"
        );
        assert_eq!(
            FaultError::NotInRoute {
                broker: 1,
                name: "broker-1".into()
            }
            .to_string(),
            "[fault] broker = 1: broker-1 is not in the topic's route"
        );
        let open = ReconcileError::OpenStore(StartError::Unsupported("no".into()));
        assert_eq!(
            FaultError::Live {
                name: "broker-b".into(),
                source: open
            }
            .to_string(),
            "reconcile: opening the store: no (broker-b: a broker that does not answer cannot be read back through the protocol)"
        );
        assert_eq!(
            FaultError::PairOpen {
                name: "broker-0-slave".into(),
                source: StartError::Unsupported("no".into())
            }
            .to_string(),
            "broker-0-slave: reconcile: opening broker-0-slave's store: no"
        );
    }
}
