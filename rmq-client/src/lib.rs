//! rmq-client: the RocketMQ client pieces the harness, its consumers and the Apache broker's
//! launcher share, over the wire format of `remoting`: a blocking connection for admin
//! requests (topics, runtime info, broker config), name-server queries (routes, cluster), the
//! producer's send requests built like the Java client's, and the UNIQ_KEY scheme that maps a
//! message back to its send.
//!
//! It owns no policy: no profile, no schedule, no result file. It imports only `remoting` and
//! small crates; never a harness crate (model, results, analysis), never tokio.

pub mod admin;
pub mod name_server;
pub mod retry_codes;
pub mod send;
pub mod sink;
pub mod uniq_key;
