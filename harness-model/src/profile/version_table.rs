//! `[broker."<version>"]`: broker.conf keys for the cells of one Apache release only (the
//! model imitating it and Apache's JVM alike), such as 5.3's `inSyncReplicas`, which 4.9
//! refuses.

use std::collections::BTreeMap;

use super::broker_choice::APACHE_VERSIONS;
use super::store_tmpfs::is_harness_key;
use super::value::{is_scalar, value_string};

/// Why a `[broker."<version>"]` table is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionTableError {
    #[error("broker key `{0}` is a table: a table in [broker] names a release, one of {list} ([broker.\"5.3.3\"])", list = APACHE_VERSIONS.join(", "))]
    NotARelease(String),
    #[error("[broker.\"{version}\"] sets `{key}`: the harness's own broker keys (kind, version, store_tmpfs) are set in [broker] or the matrix")]
    HarnessKey { version: String, key: String },
    #[error("[broker.\"{version}\"] key `{key}` must be a string, number or boolean (it is written into broker.conf)")]
    NotScalar { version: String, key: String },
}

/// The keys of `[broker."<version>"]`: a pinned release's, scalars, none that chooses the broker.
pub(super) fn version_keys(
    version: &str,
    t: &toml::Table,
) -> Result<BTreeMap<String, String>, VersionTableError> {
    if !APACHE_VERSIONS.contains(&version) {
        return Err(VersionTableError::NotARelease(version.to_owned()));
    }
    let mut keys = BTreeMap::new();
    for (k, v) in t {
        let (version, key) = (version.to_owned(), k.clone());
        if is_harness_key(k) {
            return Err(VersionTableError::HarnessKey { version, key });
        }
        if !is_scalar(v) {
            return Err(VersionTableError::NotScalar { version, key });
        }
        keys.insert(key, value_string(v));
    }
    Ok(keys)
}
