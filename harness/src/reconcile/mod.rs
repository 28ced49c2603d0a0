//! After a fault experiment: read every queue of the topic back from the store and compare, key
//! by key, what was stored with what the broker answered.
//!
//! * pull.rs  — a plain sequential reader: PULL_MESSAGE from offset 0 to the end of each queue,
//!   every record decoded and CRC-checked
//! * tally.rs — the comparison: `acked_lost`, `phantom`, `busy_stored`, `duplicates`,
//!   `corrupt`, `unacked_in_flight`
//! * store.rs — a fresh broker opened on the job's store directory, read, and stopped

mod pull;
mod store;
mod tally;

pub use pull::{pull_answer, pull_request, read_queue, read_queue_from, Stored};
pub use store::{read_live, reconcile_store, Copies};
pub use tally::{tally, Tally};
