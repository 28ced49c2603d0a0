//! The `[cluster]` table: a name server and several brokers per cell, and the per-broker
//! keys `broker.<i>.<key>` that go only to broker `i`.

use serde::{Deserialize, Serialize};

/// The most brokers one cell starts: every one is a process with its own store.
pub const MAX_BROKERS: u32 = 16;

/// `[cluster]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// Brokers started per cell, named `broker-0` … `broker-<N-1>`, each registered with the
    /// cell's name server. Required.
    pub brokers: u32,
    /// Slaves per broker (`harness::cluster::slaves`): 0, or 1 — a `brokerRole = SLAVE`,
    /// `brokerId = 1` process replicating from each broker, under its `brokerName`.
    /// Default: 0.
    #[serde(default)]
    pub slaves: u32,
}

impl ClusterSpec {
    /// The first problem, as (key, message, how to fix it).
    pub fn validate(&self) -> Result<(), (&'static str, String, Option<String>)> {
        if !(1..=MAX_BROKERS).contains(&self.brokers) {
            return Err((
                "brokers",
                format!(
                    "`brokers` must be between 1 and {MAX_BROKERS} (got {})",
                    self.brokers
                ),
                None,
            ));
        }
        if self.slaves > 1 {
            return Err((
                "slaves",
                format!(
                    "`slaves` = {} is not supported: the harness starts one slave per broker (brokerId 1)",
                    self.slaves
                ),
                Some("set slaves = 1 (or 0 for masters alone)".into()),
            ));
        }
        Ok(())
    }
}

/// The matrix axis that varies the brokers per cell (`"cluster.brokers" = [1, 2]`): one
/// broker against two in one run (`profiles/cluster-capacity.toml`).
pub const CLUSTER_BROKERS_AXIS: &str = "cluster.brokers";

/// Why a `cluster.brokers` axis is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BrokersAxisError {
    #[error("matrix axis `{CLUSTER_BROKERS_AXIS}` needs [cluster] (add [cluster] brokers = N; the axis then varies N per cell)")]
    NoCluster,
    /// A value that is not an integer in 1..=[`MAX_BROKERS`], as written.
    #[error("matrix axis `{CLUSTER_BROKERS_AXIS}`: value {0} is not a broker count between 1 and {MAX_BROKERS}")]
    NotABrokerCount(toml::Value),
}

/// The `cluster.brokers` axis's values: integers in 1..=[`MAX_BROKERS`], with `[cluster]`.
pub fn check_brokers_axis(
    values: &[toml::Value],
    has_cluster: bool,
) -> Result<(), BrokersAxisError> {
    if !has_cluster {
        return Err(BrokersAxisError::NoCluster);
    }
    for v in values {
        match v.as_integer() {
            Some(n) if (1..=i64::from(MAX_BROKERS)).contains(&n) => {}
            _ => return Err(BrokersAxisError::NotABrokerCount(v.clone())),
        }
    }
    Ok(())
}

/// `1.injectPutStallMillis` → `Some((1, "injectPutStallMillis"))`; a plain key → `None`.
pub fn per_broker_key(key: &str) -> Option<(usize, &str)> {
    let (index, rest) = key.split_once('.')?;
    let i = index.parse().ok()?;
    (!rest.is_empty()).then_some((i, rest))
}

/// The broker.conf key a profile key names (without its broker index).
pub fn bare_key(key: &str) -> &str {
    per_broker_key(key).map_or(key, |(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_broker_keys_are_split() {
        assert_eq!(
            per_broker_key("1.injectPutStallMillis"),
            Some((1, "injectPutStallMillis"))
        );
        assert_eq!(per_broker_key("injectPutStallMillis"), None);
        assert_eq!(per_broker_key("x.y"), None);
        assert_eq!(
            bare_key("0.waitTimeMillsInSendQueue"),
            "waitTimeMillsInSendQueue"
        );
        let spec = |brokers, slaves| ClusterSpec { brokers, slaves };
        assert!(spec(0, 0).validate().is_err());
        assert!(spec(2, 0).validate().is_ok());
        assert!(spec(2, 1).validate().is_ok());
        assert_eq!(spec(2, 2).validate().unwrap_err().0, "slaves");
    }

    fn parse(text: &str, sets: &[&str]) -> Result<crate::profile::Profile, String> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        crate::profile::Profile::parse(text, "c.toml", std::path::Path::new("c.toml"), &sets)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn per_broker_keys_need_that_broker() {
        let ok = parse(
            "name = \"c\"\n[cluster]\nbrokers = 2\n[broker]\n\"1.injectPutStallMillis\" = 800\n",
            &["broker.0.waitTimeMillsInSendQueue=500"],
        )
        .unwrap();
        assert_eq!(
            ok.cluster,
            Some(ClusterSpec {
                brokers: 2,
                slaves: 0
            })
        );
        assert_eq!(ok.broker["1.injectPutStallMillis"], "800");
        let e = parse(
            "name = \"c\"\n[broker]\n\"1.injectPutStallMillis\" = 800\n",
            &[],
        )
        .unwrap_err();
        assert!(
            e.starts_with("c.toml:3:1: broker key `1.injectPutStallMillis` names broker 1, but the profile starts 0 brokers"),
            "{e}"
        );
        let e = parse(
            "name = \"c\"\n[cluster]\nbrokers = 2\n[matrix]\n\"broker.2.injectPutStallMillis\" = [0, 800]\n",
            &[],
        )
        .unwrap_err();
        assert!(e.contains("add [cluster] brokers = 3 or more"), "{e}");
        let e = parse("name = \"c\"\n[cluster]\nbrokers = 0\n", &[]).unwrap_err();
        assert!(e.contains("`brokers` must be between 1 and 16"), "{e}");
        let e = parse(
            "name = \"c\"\n[cluster]\nbrokers = 2\n[broker]\n1.injectPutStallMillis = 800\n",
            &[],
        )
        .unwrap_err();
        assert!(e.contains("quote a per-broker key"), "{e}");
    }

    #[test]
    fn slaves_other_than_0_or_1_are_refused_at_their_line() {
        let ok = parse("name = \"c\"\n[cluster]\nbrokers = 1\nslaves = 1\n", &[]).unwrap();
        assert_eq!(ok.cluster.map(|c| c.slaves), Some(1));
        let e = parse("name = \"c\"\n[cluster]\nbrokers = 1\nslaves = 2\n", &[]).unwrap_err();
        assert!(e.starts_with("c.toml:4:"), "{e}");
        assert!(e.contains("`slaves` = 2 is not supported"), "{e}");
        assert!(e.contains("set slaves = 1"), "{e}");
    }
}
