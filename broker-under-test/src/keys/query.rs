//! Questions asked of the key table: a key by name, every default, the nearest name.

use std::collections::BTreeMap;

use super::{
    spec::{DefaultEnv, KeySpec},
    table::{cpus, KEYS},
    version::VersionProfile,
};

/// The key called `name`, if known.
pub fn find(name: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|k| k.name == name)
}

/// The defaults of every key for `profile` on this machine. `send_threads` is the effective
/// send thread count, which the 4.9.1+ end-transaction default depends on.
pub fn defaults(profile: VersionProfile, send_threads: Option<usize>) -> BTreeMap<String, String> {
    let env = DefaultEnv {
        profile,
        cpus: cpus(),
        send_threads,
    };
    KEYS.iter()
        .map(|k| (k.name.to_owned(), k.default.value(&env)))
        .collect()
}

/// Below this Jaro-Winkler similarity a name is not offered as "did you mean".
const SUGGEST_THRESHOLD: f64 = 0.85;

/// The known key most like `name` (case-insensitive Jaro-Winkler), if it is close enough.
pub fn suggest(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    KEYS.iter()
        .map(|k| {
            (
                strsim::jaro_winkler(&lower, &k.name.to_ascii_lowercase()),
                k.name,
            )
        })
        .filter(|(score, _)| *score >= SUGGEST_THRESHOLD)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n)
}
