//! Why a job's consumers did not start ([`crate::consumer::ConsumerRun::start`]): their runtime,
//! the topic's first route, `consumer.log`, or the prefill. The consumers' job part turns it
//! into `PartError::Consumers`, whose text is the rows' `invalid_reason`. An instance that
//! joins later and fails is not here: it is logged and the others go on, as a client's would.

use std::net::SocketAddr;

use rmq_client::name_server::NameServerError;

use crate::consumer::wire::WireError;

#[derive(Debug, thiserror::Error)]
pub enum ConsumerStartError {
    /// The consumers' single-threaded tokio runtime.
    #[error("consumer runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("consumer.log: {0}")]
    Log(#[source] std::io::Error),
    /// The first route of the topic (from the name server).
    #[error(transparent)]
    Route(#[from] RouteError),
    #[error(transparent)]
    Prefill(#[from] PrefillError),
}

/// Why the topic's route could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    /// The blocking name-server lookup's task did not finish (panicked or cancelled).
    #[error("route lookup: {0}")]
    Lookup(String),
    /// Boxed: the client's errors are large (`clippy::result_large_err`).
    #[error("{0}")]
    NameServer(#[source] Box<NameServerError>),
    #[error("the name server {namesrv} has no route for topic {topic}")]
    NoRoute { namesrv: SocketAddr, topic: String },
}

/// Why the prefill could not send.
#[derive(Debug, thiserror::Error)]
pub enum PrefillError {
    /// The connection to broker `broker`.
    #[error("prefill: {broker}: {source}")]
    Connect {
        broker: String,
        #[source]
        source: WireError,
    },
    #[error("prefill: the route lists no broker")]
    NoBroker,
}

impl From<NameServerError> for RouteError {
    fn from(e: NameServerError) -> Self {
        RouteError::NameServer(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows' `invalid_reason` when the consumers do not start: the texts of before.
    #[test]
    fn reasons_read_as_before() {
        let e = ConsumerStartError::from(RouteError::NoRoute {
            namesrv: "127.0.0.1:9876".parse().unwrap(),
            topic: "T".into(),
        });
        assert_eq!(
            e.to_string(),
            "the name server 127.0.0.1:9876 has no route for topic T"
        );
        assert_eq!(
            ConsumerStartError::from(PrefillError::NoBroker).to_string(),
            "prefill: the route lists no broker"
        );
    }
}
