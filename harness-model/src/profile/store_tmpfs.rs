//! `[broker] store_tmpfs = "64MiB"`: the cell's store lives on a tmpfs of that size, mounted by
//! the harness for the cell and unmounted when it ends (`harness/src/tmpfs.rs`). A real small
//! disk is what Apache RocketMQ's disk-space checks read (`statvfs` of the store's partition,
//! retention reference A3); broker-under-test's `injectStoreSizeCapBytes` imitates one, and
//! Apache has no such key. Like `kind` and `version`, this key is read by the harness and never
//! written into broker.conf.

use super::broker_choice::{KIND_KEY, VERSION_KEY};

/// The `[broker]` key (or `broker.store_tmpfs` matrix axis) asking for a tmpfs store.
pub const STORE_TMPFS_KEY: &str = "store_tmpfs";

/// `[broker]` keys the harness reads itself; none of them reaches broker.conf.
pub const HARNESS_BROKER_KEYS: &[&str] = &[KIND_KEY, VERSION_KEY, STORE_TMPFS_KEY];

/// The smallest tmpfs accepted: below this a broker's first CommitLog file, consume queues and
/// index hardly fit, and the cell would measure a broker that cannot start.
pub const MIN_STORE_TMPFS: u64 = 8 << 20;

/// True for the `[broker]` keys the harness reads rather than writes into broker.conf.
pub fn is_harness_key(key: &str) -> bool {
    HARNESS_BROKER_KEYS.contains(&key)
}

/// Why a `store_tmpfs` value is not a size the harness mounts; the text as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreTmpfsError {
    #[error("`{STORE_TMPFS_KEY}` = {text:?}: unknown unit {unit:?}; write a size like \"64MiB\" (KiB, MiB, GiB)")]
    Unit { text: String, unit: String },
    #[error("`{STORE_TMPFS_KEY}` = {0:?}: write a size like \"64MiB\" (KiB, MiB, GiB)")]
    NotASize(String),
    #[error("`{STORE_TMPFS_KEY}` = {0:?} is too large")]
    TooLarge(String),
    #[error("`{STORE_TMPFS_KEY}` = {0:?} is below the smallest store the harness mounts, 8MiB")]
    TooSmall(String),
}

/// The size of `store_tmpfs` in bytes: a whole number with `KiB`, `MiB` or `GiB` (or bare
/// bytes), at least [`MIN_STORE_TMPFS`]. Written by hand rather than with a size crate: the
/// value goes to `mount -o size=<bytes>`, and one strict unit family is all it needs.
pub fn parse_store_tmpfs(text: &str) -> Result<u64, StoreTmpfsError> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let shift = match unit.trim() {
        "" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        other => {
            return Err(StoreTmpfsError::Unit {
                text: text.to_owned(),
                unit: other.to_owned(),
            })
        }
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| StoreTmpfsError::NotASize(text.to_owned()))?;
    let bytes = n
        .checked_mul(1 << shift)
        .ok_or_else(|| StoreTmpfsError::TooLarge(text.to_owned()))?;
    if bytes < MIN_STORE_TMPFS {
        return Err(StoreTmpfsError::TooSmall(text.to_owned()));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_binary_units_and_small_or_odd_ones_are_refused() {
        assert_eq!(parse_store_tmpfs("64MiB"), Ok(64 << 20));
        assert_eq!(parse_store_tmpfs(" 1GiB "), Ok(1 << 30));
        assert_eq!(parse_store_tmpfs("16384KiB"), Ok(16 << 20));
        assert_eq!(parse_store_tmpfs("8388608"), Ok(8 << 20));
        let e = parse_store_tmpfs("64MB").unwrap_err();
        assert!(matches!(&e, StoreTmpfsError::Unit { unit, .. } if unit == "MB"));
        assert!(e.to_string().contains("unknown unit"), "{e}");
        let e = parse_store_tmpfs("4MiB").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`store_tmpfs` = \"4MiB\" is below the smallest store the harness mounts, 8MiB"
        );
        assert!(parse_store_tmpfs("MiB").is_err());
        assert!(parse_store_tmpfs("-64MiB").is_err());
        assert!(parse_store_tmpfs("99999999999GiB")
            .unwrap_err()
            .to_string()
            .contains("too large"));
    }

    #[test]
    fn the_harness_keys_are_the_choice_keys_and_the_tmpfs() {
        for k in ["kind", "version", "store_tmpfs"] {
            assert!(is_harness_key(k), "{k}");
        }
        assert!(!is_harness_key("storePathRootDir"));
    }
}
