//! Broker keys are checked against broker-under-test's own key list before any cell runs.
//!
//! A broker key travels as a string from the profile to `broker.conf`. A typo used to reach the
//! broker, which warned in its log and ran with the default: a misspelled matrix axis gave N
//! identical cells and exit 0. Now every key named in `[broker]`, a matrix axis or `--set` is
//! looked up in `broker-under-test --list-keys` (name, type, range, allowed values) and reported
//! with the place it was written and the closest real key. Then every cell's effective
//! configuration goes through the broker's own validation (`--strict --check`), so a
//! contradiction in the 7th cell fails before the 1st cell starts, not after an hour.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde::Deserialize;

use harness_model::matrix::Cell;
use harness_model::profile::{value_string, Profile};

/// One key as `--list-keys` describes it.
#[derive(Debug, Clone, Deserialize)]
pub struct KeySpec {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub values: Option<Vec<String>>,
    pub unit: Option<String>,
}

/// The broker's key list.
#[derive(Debug, Clone)]
pub struct BrokerKeys {
    keys: BTreeMap<String, KeySpec>,
}

impl BrokerKeys {
    /// Runs `bin --list-keys`.
    pub fn from_binary(bin: &Path) -> anyhow::Result<BrokerKeys> {
        let out = Command::new(bin)
            .arg("--list-keys")
            .output()
            .map_err(|e| anyhow::anyhow!("running {} --list-keys: {e}", bin.display()))?;
        if !out.status.success() {
            anyhow::bail!(
                "{} --list-keys failed ({}): {}",
                bin.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        BrokerKeys::from_json(&out.stdout)
            .map_err(|e| anyhow::anyhow!("{} --list-keys: {e}", bin.display()))
    }

    pub fn from_json(json: &[u8]) -> Result<BrokerKeys, serde_json::Error> {
        let list: Vec<KeySpec> = serde_json::from_slice(json)?;
        Ok(BrokerKeys {
            keys: list.into_iter().map(|k| (k.name.clone(), k)).collect(),
        })
    }

    /// Every problem with the broker keys of `profile`, one message each, located.
    /// Every key's name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    pub fn check_profile(&self, profile: &Profile) -> Vec<String> {
        let mut problems = Vec::new();
        let origin = |key: &str| {
            profile
                .broker_origins
                .get(key)
                .cloned()
                .unwrap_or_else(|| profile.path.display().to_string())
        };
        let mut named: Vec<(&str, Vec<String>)> = profile
            .broker
            .iter()
            .map(|(k, v)| (k.as_str(), vec![v.clone()]))
            .collect();
        for axis in &profile.axes {
            if let Some(k) = axis.key.strip_prefix("broker.") {
                named.push((k, axis.values.iter().map(value_string).collect()));
            }
        }
        // `kind`, `version` and `store_tmpfs` are the harness's; they are not broker.conf keys.
        named.retain(|(k, _)| !harness_model::profile::is_harness_key(k));
        for (key, values) in named {
            // `1.injectPutStallMillis` is broker 1's `injectPutStallMillis`.
            let Some(spec) = self.keys.get(harness_model::profile::bare_key(key)) else {
                problems.push(format!(
                    "{}: unknown broker key `{key}`\n  help: {}",
                    origin(key),
                    self.suggestion(key)
                ));
                continue;
            };
            for value in values {
                if let Err(why) = spec.check(&value) {
                    problems.push(format!(
                        "{}: broker key `{key}` = {value:?}: {why}",
                        origin(key)
                    ));
                }
            }
        }
        problems
    }

    fn suggestion(&self, key: &str) -> String {
        let lower = key.to_ascii_lowercase();
        let best = self
            .keys
            .keys()
            .map(|k| (strsim::jaro_winkler(&lower, &k.to_ascii_lowercase()), k))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        match best {
            Some((score, k)) if score >= 0.85 => format!("did you mean `{k}`?"),
            _ => "`broker-under-test --list-keys` lists every key".to_owned(),
        }
    }
}

impl KeySpec {
    /// The type and range check of one value, as the broker would apply it.
    pub fn check(&self, value: &str) -> Result<(), String> {
        match self.kind.as_str() {
            "bool" => match value.to_ascii_lowercase().as_str() {
                "true" | "false" => Ok(()),
                _ => Err("expected true or false".into()),
            },
            "int" => {
                let v: i64 = value
                    .parse()
                    .map_err(|_| "expected a whole number".to_owned())?;
                let unit = self
                    .unit
                    .as_deref()
                    .map_or(String::new(), |u| format!(" {u}"));
                match (self.min, self.max) {
                    (Some(lo), _) if v < lo => Err(self.range_text(&unit)),
                    (_, Some(hi)) if v > hi => Err(self.range_text(&unit)),
                    _ => Ok(()),
                }
            }
            "enum" => {
                let allowed = self.values.clone().unwrap_or_default();
                if allowed.iter().any(|a| a == value) {
                    Ok(())
                } else {
                    Err(format!("expected one of {}", allowed.join(", ")))
                }
            }
            _ => Ok(()),
        }
    }

    fn range_text(&self, unit: &str) -> String {
        match (self.min, self.max) {
            (Some(lo), Some(hi)) => format!("out of range, allowed {lo}..={hi}{unit}"),
            (Some(lo), None) => format!("out of range, at least {lo}{unit}"),
            (None, Some(hi)) => format!("out of range, at most {hi}{unit}"),
            (None, None) => "out of range".into(),
        }
    }
}

/// Runs the broker's own validation on every cell's effective configuration (`confs`, in cell
/// order), without starting it: `bin --strict --check -c <cell conf>`. One message per failing
/// cell.
pub fn check_cells(
    bin: &Path,
    cells: &[Cell],
    confs: &[BTreeMap<String, String>],
    scratch: &Path,
) -> anyhow::Result<Vec<String>> {
    let mut problems = Vec::new();
    for (cell, conf) in cells.iter().zip(confs) {
        let path = scratch.join(format!("{}.conf", cell.id));
        crate::kind::write_conf(&path, conf)?;
        let out = Command::new(bin)
            .args(["--strict", "--check", "-c"])
            .arg(&path)
            .output()
            .map_err(|e| anyhow::anyhow!("running {} --check: {e}", bin.display()))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let reason = stderr
                .lines()
                .filter(|l| l.starts_with("Error:"))
                .map(|l| l.trim_start_matches("Error:").trim())
                .collect::<Vec<_>>()
                .join("; ");
            problems.push(format!(
                "cell {} ({}): the broker refuses this configuration: {}",
                cell.index + 1,
                cell.label,
                if reason.is_empty() {
                    stderr.trim()
                } else {
                    &reason
                }
            ));
        }
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = r#"[
      {"name":"sendMessageThreadPoolNums","type":"int","min":1,"max":1024,"values":null,"unit":"threads","default":{},"ours":false,"doc":""},
      {"name":"waitTimeMillsInSendQueue","type":"int","min":0,"max":86400000,"values":null,"unit":"ms","default":{},"ours":false,"doc":""},
      {"name":"useReentrantLockWhenPutMessage","type":"bool","min":null,"max":null,"values":null,"unit":null,"default":{},"ours":false,"doc":""},
      {"name":"flushDiskType","type":"enum","min":null,"max":null,"values":["ASYNC_FLUSH","SYNC_FLUSH"],"unit":null,"default":{},"ours":false,"doc":""}
    ]"#;

    fn profile(text: &str, sets: &[&str]) -> Profile {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Profile::parse(text, "p.toml", Path::new("p.toml"), &sets).unwrap()
    }

    #[test]
    fn unknown_keys_are_located_with_a_suggestion() {
        let keys = BrokerKeys::from_json(LIST.as_bytes()).unwrap();
        let p = profile(
            "name = \"p\"\n[broker]\nwaitTimeMillsInSendQueu = 100\n[matrix]\n\"broker.sendMessageThreadPoolNum\" = [1, 2]\n",
            &["broker.useReentrantLockWhenPutMesage=true"],
        );
        let problems = keys.check_profile(&p);
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert!(
            problems.iter().any(|m| m
                .starts_with("p.toml:3:1: unknown broker key `waitTimeMillsInSendQueu`")
                && m.contains("did you mean `waitTimeMillsInSendQueue`?")),
            "{problems:#?}"
        );
        assert!(
            problems.iter().any(|m| m
                .starts_with("p.toml:5:1: unknown broker key `sendMessageThreadPoolNum`")
                && m.contains("did you mean `sendMessageThreadPoolNums`?")),
            "{problems:#?}"
        );
        assert!(
            problems.iter().any(|m| m.starts_with(
                "--set broker.useReentrantLockWhenPutMesage=true: unknown broker key"
            )),
            "{problems:#?}"
        );
    }

    #[test]
    fn values_are_checked_for_type_and_range() {
        let keys = BrokerKeys::from_json(LIST.as_bytes()).unwrap();
        let p = profile(
            "name = \"p\"\n[broker]\nflushDiskType = \"SYNC\"\nuseReentrantLockWhenPutMessage = \"yes\"\n[matrix]\n\"broker.sendMessageThreadPoolNums\" = [1, 0, 2000]\n",
            &[],
        );
        let problems = keys.check_profile(&p);
        assert_eq!(problems.len(), 4, "{problems:#?}");
        assert!(problems
            .iter()
            .any(|m| m
                .contains("`flushDiskType` = \"SYNC\": expected one of ASYNC_FLUSH, SYNC_FLUSH")));
        assert!(problems
            .iter()
            .any(|m| m.contains("= \"yes\": expected true or false")));
        assert!(problems.iter().any(|m| m.starts_with("p.toml:6:1:")
            && m.contains("= \"0\": out of range, allowed 1..=1024 threads")));
        assert!(problems
            .iter()
            .any(|m| m.contains("= \"2000\": out of range")));
    }

    #[test]
    fn a_correct_profile_has_no_problems() {
        let keys = BrokerKeys::from_json(LIST.as_bytes()).unwrap();
        let p = profile(
            "name = \"p\"\n[broker]\nflushDiskType = \"SYNC_FLUSH\"\n[matrix]\n\"broker.useReentrantLockWhenPutMessage\" = [true, false]\n",
            &["broker.waitTimeMillsInSendQueue=500"],
        );
        assert!(keys.check_profile(&p).is_empty());
    }
}
