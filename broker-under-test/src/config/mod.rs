//! `broker.conf`: RocketMQ's properties format and key names, with RocketMQ's defaults for the
//! selected version profile (reference §4.1, §5, §9.1).
//!
//! Loading works on strings first: the version profile's defaults (from the key table in
//! [`crate::keys`]) form a `key → value` map, keys set explicitly (file, then `--set`, last wins)
//! replace them, every value is checked against its key's type and range, and the result is
//! parsed into the typed [`BrokerConfig`]. That map is also what `-p` prints, so what is printed
//! is exactly what runs.
//!
//! A façade: errors in `error.rs`, the properties parser in `properties.rs`, the typed
//! configuration in `broker_config.rs`, loading in `load.rs`.

mod broker_config;
mod error;
mod ha;
mod load;
mod properties;
mod role;

pub use crate::keys::{defaults, VersionProfile};
pub use broker_config::{BrokerConfig, ExecutorSettings};
pub use error::ConfigError;
pub use ha::{HaConfig, WaitPolicy, WaitSteps};
pub use load::{ConfigSources, Loaded};
pub use properties::{parse_override, parse_properties, Entry};
pub use role::BrokerRole;

/// Keys that are ours, not RocketMQ's (the key table's `ours`).
pub fn own_keys() -> impl Iterator<Item = &'static str> {
    crate::keys::KEYS.iter().filter(|k| k.ours).map(|k| k.name)
}

#[cfg(test)]
mod tests;
