//! The consumer side of the broker: topics and offsets persisted in RocketMQ's files, and the
//! services that serve consumers (consumer §3, §5–§7). A façade; every child is a leaf that does
//! not know the [`Broker`](crate::broker::Broker), which wires them together.

pub mod clients;
pub mod config_file;
pub mod filter;
pub mod hold;
pub mod locks;
pub mod memory;
pub mod offsets;
pub mod subscriptions;
pub mod topics;

pub use config_file::{ConfigFile, ConfigFileError};
pub use offsets::OffsetTable;
pub use subscriptions::{SubscriptionGroupConfig, SubscriptionGroupTable};
pub use topics::{TopicConfig, TopicTable, PERM_INHERIT, PERM_READ, PERM_WRITE};
