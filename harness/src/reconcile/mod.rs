//! After a fault experiment: read every queue of the topic back from the store and compare, key
//! by key, what was stored with what the broker answered.
//!
//! * pull.rs  — a plain sequential reader: PULL_MESSAGE from offset 0 to the end of each queue,
//!   every record decoded and CRC-checked
//! * tally.rs — the comparison: `acked_lost`, `phantom`, `busy_stored`, `duplicates`,
//!   `corrupt`, `unacked_in_flight`
//! * store.rs — a fresh broker opened on the job's store directory, read, and stopped; or a
//!   running broker read through the protocol (the job's broker still up after its restart, a
//!   cluster the harness did not start)
//! * settle.rs — when a running broker has made readable everything it acknowledged
//! * brokers.rs — a cluster: every broker's copies against the broker of each final answer

mod brokers;
pub mod error;
mod pull;
mod settle;
mod store;
mod tally;

pub use brokers::{per_broker_text, tally_brokers, BrokerTally};
pub use error::ReconcileError;
pub use pull::{pull_answer, pull_request, read_queue, read_queue_from, Stored};
pub use settle::{quiet_for, wait_settled, Settle};
pub use store::{read_live, read_store, reconcile_store, Copies};
pub use tally::{tally, Tally};
