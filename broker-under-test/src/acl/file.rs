//! `plain_acl.yml`: `globalWhiteRemoteAddresses` and `accounts` (accessKey, secretKey,
//! whiteRemoteAddress, admin, defaultTopicPerm, defaultGroupPerm, topicPerms, groupPerms).
//!
//! Read as RocketMQ reads it (snakeyaml into a fastjson object): a scalar may be written as a
//! number or a boolean where a string is meant (`secretKey: 12345678` in RocketMQ's own example
//! file), and unknown keys (`dataVersion`) are ignored.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_yaml_ng::Value;
use thiserror::Error;

use super::address::AddressRule;
use super::perm;

/// The retry topic of a consumer group (`MixAll.getRetryTopic`).
pub fn retry_topic(group: &str) -> String {
    format!("%RETRY%{group}")
}

/// Why `plain_acl.yml` could not be used.
#[derive(Debug, Error)]
pub enum AclFileError {
    #[error("reading {path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawFile {
    #[serde(default)]
    global_white_remote_addresses: Option<Vec<Value>>,
    #[serde(default)]
    accounts: Option<Vec<RawAccount>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawAccount {
    access_key: Option<Value>,
    secret_key: Option<Value>,
    white_remote_address: Option<Value>,
    admin: Option<Value>,
    default_topic_perm: Option<Value>,
    default_group_perm: Option<Value>,
    topic_perms: Option<Vec<Value>>,
    group_perms: Option<Vec<Value>>,
}

/// A scalar as the string fastjson would make of it; `None` for null or a non-scalar.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// One account (`PlainAccessResource` as built by `buildPlainAccessResource`).
#[derive(Debug, Clone)]
pub struct Account {
    pub access_key: String,
    pub secret_key: String,
    pub white: AddressRule,
    pub admin: bool,
    pub default_topic_perm: u8,
    pub default_group_perm: u8,
    /// Topic names and retry topics of groups (`%RETRY%group`), with their permission.
    pub resources: HashMap<String, u8>,
}

/// The whole file, parsed.
#[derive(Debug, Clone, Default)]
pub struct AclFile {
    pub global_white: Vec<AddressRule>,
    pub accounts: HashMap<String, Account>,
}

impl AclFile {
    pub fn load(path: &Path) -> Result<AclFile, AclFileError> {
        let text = std::fs::read_to_string(path).map_err(|error| AclFileError::Io {
            path: path.to_owned(),
            error,
        })?;
        AclFile::parse(&text).map_err(|message| AclFileError::Invalid {
            path: path.to_owned(),
            message,
        })
    }

    pub fn parse(text: &str) -> Result<AclFile, String> {
        // An empty file is "no data" to RocketMQ: no white list, no account.
        let raw: RawFile = if text.trim().is_empty() {
            RawFile::default()
        } else {
            serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?
        };
        let mut out = AclFile::default();
        for v in raw.global_white_remote_addresses.iter().flatten() {
            out.global_white
                .push(AddressRule::parse(scalar(v).as_deref())?);
        }
        for a in raw.accounts.into_iter().flatten() {
            let account = account(a)?;
            // RocketMQ keeps the first definition of an access key.
            out.accounts
                .entry(account.access_key.clone())
                .or_insert(account);
        }
        Ok(out)
    }
}

/// `checkPlainAccessConfig` then `buildPlainAccessResource`.
fn account(a: RawAccount) -> Result<Account, String> {
    let access_key = a.access_key.as_ref().and_then(scalar).unwrap_or_default();
    let secret_key = a.secret_key.as_ref().and_then(scalar).unwrap_or_default();
    // AclConstants.ACCESS_KEY_MIN_LENGTH / SECRET_KEY_MIN_LENGTH. RocketMQ repeats the secret
    // in this message; we do not, so a start-up log cannot leak it.
    if access_key.len() <= 6 || secret_key.len() <= 6 {
        return Err(format!(
            "The accessKey={access_key} and secretKey=<redacted> cannot be null and length should longer than 6"
        ));
    }
    let text = |v: &Option<Value>| v.as_ref().and_then(scalar);
    let mut resources = HashMap::new();
    for (list, is_topic) in [(&a.group_perms, false), (&a.topic_perms, true)] {
        for item in list.iter().flatten() {
            let item = scalar(item).unwrap_or_default();
            let parts: Vec<&str> = item.split('=').filter(|s| !s.is_empty()).collect();
            let [name, p] = parts[..] else {
                let kind = if is_topic { "topic" } else { "group" };
                return Err(format!(
                    "Parse resource permission failed for {kind}:{item}"
                ));
            };
            let name = name.trim();
            let resource = if is_topic {
                name.to_owned()
            } else {
                retry_topic(name)
            };
            resources.insert(resource, perm::parse(Some(p)));
        }
    }
    Ok(Account {
        white: AddressRule::parse(text(&a.white_remote_address).as_deref())?,
        admin: text(&a.admin).is_some_and(|s| s.trim() == "true"),
        default_topic_perm: perm::parse(text(&a.default_topic_perm).as_deref()),
        default_group_perm: perm::parse(text(&a.default_group_perm).as_deref()),
        access_key,
        secret_key,
        resources,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RocketMQ's distribution `conf/plain_acl.yml` (4.9.8), comments left out.
    const DISTRIBUTION: &str = "
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
";

    #[test]
    fn reads_rocketmqs_example_file() {
        let f = AclFile::parse(DISTRIBUTION).unwrap();
        assert_eq!(f.global_white.len(), 2);
        let a = &f.accounts["RocketMQ"];
        assert_eq!(a.secret_key, "12345678", "a YAML number read as a string");
        assert_eq!(a.white, AddressRule::Nothing);
        assert!(!a.admin);
        assert_eq!(a.default_topic_perm, perm::DENY);
        assert_eq!(a.default_group_perm, perm::SUB);
        assert_eq!(a.resources["topicB"], perm::PUB | perm::SUB);
        assert_eq!(a.resources["%RETRY%groupA"], perm::DENY);
        assert!(f.accounts["rocketmq2"].admin);
    }

    #[test]
    fn refuses_short_keys_and_bad_resources() {
        let short = "accounts:\n  - accessKey: abc\n    secretKey: 12345678\n";
        assert!(AclFile::parse(short).unwrap_err().contains("accessKey=abc"));
        let bad = "accounts:\n  - accessKey: abcdefg\n    secretKey: 12345678\n    topicPerms:\n      - topicA\n";
        assert_eq!(
            AclFile::parse(bad).unwrap_err(),
            "Parse resource permission failed for topic:topicA"
        );
        assert!(AclFile::parse("").unwrap().accounts.is_empty());
    }
}
