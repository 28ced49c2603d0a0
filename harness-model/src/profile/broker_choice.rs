//! Which broker a cell runs on: `[broker] kind = "in-tree" | "apache"` and, for Apache,
//! `version = "5.3.3"`; a matrix may vary either (`"broker.kind"`, `"broker.version"`), and
//! `--broker apache-5.3.3` sets both for a run. These two keys choose the broker; they are
//! never written into broker.conf. With `kind = "in-tree"`, `version` names the release the
//! model imitates (its `brokerVersionProfile`), so a `"broker.kind"` axis compares the model
//! and the real broker of one release.

use std::collections::BTreeMap;
use std::fmt;

/// The `[broker]` key naming the kind of broker.
pub const KIND_KEY: &str = "kind";
/// The `[broker]` key naming Apache RocketMQ's version.
pub const VERSION_KEY: &str = "version";

/// The Apache RocketMQ versions the harness can start (one pinned `apache/<v>/pom.xml` each).
/// 4.9.8 is not on Maven Central; 4.9.7 is the newest 4.9.x there.
pub const APACHE_VERSIONS: &[&str] = &["4.9.7", "5.3.3"];

/// broker-under-test's key naming the release it imitates.
pub const IN_TREE_PROFILE_KEY: &str = "brokerVersionProfile";

/// The broker a cell runs on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BrokerChoice {
    /// broker-under-test, the model (the default).
    InTree,
    /// Apache RocketMQ's released name server and broker JVMs.
    Apache { version: String },
}

impl fmt::Display for BrokerChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BrokerChoice::InTree => f.write_str("in-tree"),
            BrokerChoice::Apache { version } => write!(f, "apache-{version}"),
        }
    }
}

/// Why a cell's `kind` / `version` (or `--broker`) names no broker the harness can start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrokerChoiceError {
    #[error("broker key `version` = {version:?} runs broker-under-test with `{IN_TREE_PROFILE_KEY}` = {profile:?}, but the cell sets {set:?}: drop one")]
    ProfileClash {
        version: String,
        profile: &'static str,
        set: String,
    },
    #[error("`kind = \"apache\"` needs `version`: one of {}", APACHE_VERSIONS.join(", "))]
    ApacheWithoutVersion,
    #[error("broker key `kind` = {0:?}: write \"in-tree\" (broker-under-test) or \"apache\"")]
    Kind(String),
    #[error("--broker {0:?}: write in-tree or apache-<version> ({list})", list = flag_values())]
    Flag(String),
    #[error("Apache RocketMQ version {0:?} has no broker-under-test version profile")]
    NoVersionProfile(String),
    #[error("Apache RocketMQ version {0:?}: {hint}", hint = version_hint(.0))]
    Version(String),
}

fn flag_values() -> String {
    APACHE_VERSIONS
        .iter()
        .map(|v| format!("apache-{v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn version_hint(v: &str) -> String {
    if v == "4.9.8" {
        "4.9.8 was never published on Maven Central; 4.9.7 is the newest 4.9.x there: write \"4.9.7\"".to_owned()
    } else {
        format!(
            "the pinned versions are {} (apache/<version>/pom.xml)",
            APACHE_VERSIONS.join(", ")
        )
    }
}

impl BrokerChoice {
    /// The choice of a cell's broker keys; the message names the key and the fix.
    pub fn of(broker: &BTreeMap<String, String>) -> Result<BrokerChoice, BrokerChoiceError> {
        let version = broker.get(VERSION_KEY).map(String::as_str);
        match broker.get(KIND_KEY).map(String::as_str) {
            None | Some("in-tree") => match version {
                None => Ok(BrokerChoice::InTree),
                Some(v) => {
                    let profile = in_tree_profile(v)?;
                    match broker.get(IN_TREE_PROFILE_KEY) {
                        Some(p) if p != profile => Err(BrokerChoiceError::ProfileClash {
                            version: v.to_owned(),
                            profile,
                            set: p.clone(),
                        }),
                        _ => Ok(BrokerChoice::InTree),
                    }
                }
            },
            Some("apache") => {
                let Some(v) = version else {
                    return Err(BrokerChoiceError::ApacheWithoutVersion);
                };
                apache_version(v).map(|version| BrokerChoice::Apache { version })
            }
            Some(other) => Err(BrokerChoiceError::Kind(other.to_owned())),
        }
    }

    /// `--broker in-tree` or `--broker apache-5.3.3`.
    pub fn parse_flag(s: &str) -> Result<BrokerChoice, BrokerChoiceError> {
        if s == "in-tree" {
            return Ok(BrokerChoice::InTree);
        }
        match s
            .strip_prefix("apache-")
            .or_else(|| s.strip_prefix("apache"))
        {
            Some(v) => apache_version(v.trim_start_matches(['-', '=']))
                .map(|version| BrokerChoice::Apache { version }),
            None => Err(BrokerChoiceError::Flag(s.to_owned())),
        }
    }

    /// The `--set` overrides equivalent to this choice.
    pub fn as_sets(&self) -> Vec<String> {
        match self {
            BrokerChoice::InTree => vec![format!("broker.{KIND_KEY}=in-tree")],
            BrokerChoice::Apache { version } => vec![
                format!("broker.{KIND_KEY}=apache"),
                format!("broker.{VERSION_KEY}={version}"),
            ],
        }
    }
}

/// broker-under-test's version profile for an Apache `version` (`4.9.7` → `4.9`): with
/// `kind = "in-tree"`, `version` names the release the model imitates, so that one matrix axis
/// over `broker.kind` runs the model and the real broker of the same release side by side.
fn in_tree_profile(v: &str) -> Result<&'static str, BrokerChoiceError> {
    match apache_version(v)?.as_str() {
        "4.9.7" => Ok("4.9"),
        "5.3.3" => Ok("5.3"),
        other => Err(BrokerChoiceError::NoVersionProfile(other.to_owned())),
    }
}

/// The `brokerVersionProfile` broker-under-test runs with for a cell's keys: the one
/// `version` names when the cell runs in-tree (see [`in_tree_profile`]), else none.
pub fn in_tree_version_profile(broker: &BTreeMap<String, String>) -> Option<&'static str> {
    match broker.get(KIND_KEY).map(String::as_str) {
        None | Some("in-tree") => in_tree_profile(broker.get(VERSION_KEY)?).ok(),
        Some(_) => None,
    }
}

fn apache_version(v: &str) -> Result<String, BrokerChoiceError> {
    if APACHE_VERSIONS.contains(&v) {
        return Ok(v.to_owned());
    }
    Err(BrokerChoiceError::Version(v.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_default_is_in_tree_and_apache_needs_a_pinned_version() {
        assert_eq!(BrokerChoice::of(&keys(&[])), Ok(BrokerChoice::InTree));
        let a = BrokerChoice::of(&keys(&[("kind", "apache"), ("version", "5.3.3")])).unwrap();
        assert_eq!(a.to_string(), "apache-5.3.3");
        let e = BrokerChoice::of(&keys(&[("kind", "apache"), ("version", "4.9.8")])).unwrap_err();
        assert_eq!(e, BrokerChoiceError::Version("4.9.8".into()));
        assert!(e.to_string().contains("write \"4.9.7\""), "{e}");
        assert!(BrokerChoice::of(&keys(&[("kind", "apache")]))
            .unwrap_err()
            .to_string()
            .contains("needs `version`"));
        assert!(BrokerChoice::of(&keys(&[("kind", "apachee")]))
            .unwrap_err()
            .to_string()
            .contains("\"apache\""));
        assert!(BrokerChoice::of(&keys(&[("version", "5.3.4")])).is_err());
    }

    #[test]
    fn in_tree_with_a_version_imitates_that_release() {
        let k = keys(&[("kind", "in-tree"), ("version", "4.9.7")]);
        assert_eq!(BrokerChoice::of(&k), Ok(BrokerChoice::InTree));
        assert_eq!(in_tree_version_profile(&k), Some("4.9"));
        assert_eq!(
            in_tree_version_profile(&keys(&[("version", "5.3.3")])),
            Some("5.3")
        );
        assert_eq!(
            in_tree_version_profile(&keys(&[("kind", "apache"), ("version", "5.3.3")])),
            None
        );
        let clash = keys(&[("version", "5.3.3"), ("brokerVersionProfile", "4.3")]);
        assert!(BrokerChoice::of(&clash)
            .unwrap_err()
            .to_string()
            .contains("drop one"));
    }

    #[test]
    fn the_flag_round_trips_through_sets() {
        let c = BrokerChoice::parse_flag("apache-4.9.7").unwrap();
        assert_eq!(c.as_sets(), ["broker.kind=apache", "broker.version=4.9.7"]);
        assert_eq!(
            BrokerChoice::parse_flag("in-tree"),
            Ok(BrokerChoice::InTree)
        );
        assert!(BrokerChoice::parse_flag("apache-5.3")
            .unwrap_err()
            .to_string()
            .contains("5.3.3"));
        assert!(BrokerChoice::parse_flag("rocketmq")
            .unwrap_err()
            .to_string()
            .contains("apache-5.3.3"));
    }
}
