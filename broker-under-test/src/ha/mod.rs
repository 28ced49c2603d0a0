//! Classic master/slave replication (RocketMQ's HAService; HA reference). Not modelled:
//! DLedger (Raft) CommitLogs and 5.x's controller mode / AutoSwitchHAService (its protocol is
//! different); see docs/src/replication.md.
//!
//! - [`frame`]: the wire format, byte for byte;
//! - [`master`]: the HA port every broker binds; a task pair per slave connection;
//! - [`slave`]: the HA client of a SLAVE;
//! - [`transfer`]: GroupTransferService, the SYNC_MASTER put's wait, plugged into the store
//!   as its [`ReplicaGate`](crate::store::ReplicaGate);
//! - [`read`]: reads from slaves (`suggestWhichBrokerId`);
//! - [`state`]: what they share with the processors (runtime info, routes, pulls);
//! - [`status`]: GET_BROKER_HA_STATUS (907, 5.3);
//! - [`service`]: starting and stopping all of it.

pub mod frame;
pub mod master;
pub mod read;
pub mod service;
pub mod slave;
pub mod state;
pub mod status;
pub mod transfer;

pub use service::HaService;
pub use state::HaState;
