//! The broker's key table: one declarative list ([`KEYS`]) from which the defaults, `-p`,
//! validation, `StoreConfig::default`, `--list-keys` and the README's key table are derived.
//!
//! A leaf below `config` and `store`: both read it, it reads neither.

mod ha;
mod query;
mod reader;
mod render;
mod retention;
mod spec;
mod table;
mod version;

pub use query::{defaults, find, suggest};
pub use reader::{BadValue, Reader};
pub use render::{list_json, markdown};
pub use spec::{DefaultEnv, DefaultRule, KeySpec, KeyType, Unit};
pub use table::{cpus, KEYS};
pub use version::VersionProfile;

#[cfg(test)]
mod tests;
