//! Master/slave replication on the harness side (issue 26): what a job reads from a
//! replicating pair and how it accounts for it. Starting the slaves is `cluster::slaves`;
//! the answers 11 / 12 are outcomes of their own (`recorder::Outcome`), retried only under
//! `retry_another_broker_when_not_store_ok` (`runner::retry`).
//!
//! * columns.rs   — the replication columns of `summary.csv` / `timeseries.csv`, sampled from the
//!   master's runtime info (`haSlaveFallBehindBytes`, `haWaitSlave*`)
//! * reconcile.rs — after a fault: every member's store read back, `acked_lost` per broker and for
//!   the pair

pub mod columns;
pub mod reconcile;

pub use columns::{HaColumns, HaSampler, TimeseriesHa};
pub use reconcile::{reconcile_pair, PairTally};
