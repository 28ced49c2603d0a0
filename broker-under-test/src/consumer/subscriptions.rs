//! Subscription groups (SubscriptionGroupManager) and `config/subscriptionGroup.json`
//! (consumer §2.5, §6.1). A group unknown to the broker is created on first use by a pull,
//! heartbeat or unregister when `autoCreateSubscriptionGroup` is on; the file is written at once.

use std::collections::{BTreeMap, HashMap};

use parking_lot::{Mutex, RwLock};
use remoting::fastjson::{pretty_tabs, quote_integer_keys};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{
    config_file::{ConfigFile, ConfigFileError},
    topics::DataVersion,
};

/// SubscriptionGroupConfig with its defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionGroupConfig {
    pub broker_id: i64,
    pub consume_broadcast_enable: bool,
    pub consume_enable: bool,
    pub consume_from_min_enable: bool,
    pub group_name: String,
    pub notify_consumer_ids_changed_enable: bool,
    pub retry_max_times: i32,
    pub retry_queue_nums: i32,
    pub which_broker_when_consume_slowly: i64,
}

impl Default for SubscriptionGroupConfig {
    fn default() -> Self {
        SubscriptionGroupConfig {
            broker_id: 0,
            consume_broadcast_enable: true,
            consume_enable: true,
            consume_from_min_enable: true,
            group_name: String::new(),
            notify_consumer_ids_changed_enable: true,
            retry_max_times: 16,
            retry_queue_nums: 1,
            which_broker_when_consume_slowly: 1,
        }
    }
}

/// Groups that are created even without auto-creation (MixAll.CID_RMQ_SYS_PREFIX).
const SYS_GROUP_PREFIX: &str = "CID_RMQ_SYS_";

/// 5.3.3 refuses to auto-create names over 255 characters or outside `[%|a-zA-Z0-9_-]`.
fn legal_5x_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"%|_-".contains(&b))
}

#[derive(Debug, Default)]
pub struct SubscriptionGroupTable {
    groups: RwLock<HashMap<String, SubscriptionGroupConfig>>,
    version: Mutex<DataVersion>,
    file: Option<ConfigFile>,
    persist_lock: Mutex<()>,
}

impl SubscriptionGroupTable {
    pub fn persisted(file: ConfigFile) -> Self {
        SubscriptionGroupTable {
            file: Some(file),
            ..Default::default()
        }
    }

    pub fn get(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        self.groups.read().get(group).cloned()
    }

    /// findSubscriptionGroupConfig: the group's config, created if `auto_create` (or a system
    /// group) and, with `strict_names` (5.3), the name is legal. `None`: unknown.
    pub fn find_or_create(
        &self,
        group: &str,
        auto_create: bool,
        strict_names: bool,
    ) -> Option<SubscriptionGroupConfig> {
        if let Some(c) = self.get(group) {
            return Some(c);
        }
        if !(auto_create || group.starts_with(SYS_GROUP_PREFIX)) {
            return None;
        }
        if strict_names && !legal_5x_name(group) {
            return None;
        }
        let config = self
            .groups
            .write()
            .entry(group.to_owned())
            .or_insert_with(|| SubscriptionGroupConfig {
                group_name: group.to_owned(),
                ..Default::default()
            })
            .clone();
        {
            let mut v = self.version.lock();
            v.counter += 1;
            v.timestamp = crate::clock::epoch_millis();
        }
        if let Err(e) = self.persist() {
            eprintln!("subscription groups: {e}");
        }
        Some(config)
    }

    pub fn persist(&self) -> Result<(), ConfigFileError> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let _writer = self.persist_lock.lock();
        file.persist(&self.encode())
    }

    /// GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body (SubscriptionGroupWrapper), as the file has it.
    pub fn encode(&self) -> String {
        let v = *self.version.lock();
        let groups: BTreeMap<String, Value> = self
            .groups
            .read()
            .iter()
            .map(|(k, g)| (k.clone(), serde_json::to_value(g).unwrap_or(Value::Null)))
            .collect();
        pretty_tabs(&json!({
            "dataVersion": {"counter": v.counter, "timestamp": v.timestamp},
            "subscriptionGroupTable": groups,
        }))
    }

    /// SlaveSynchronize.syncSubscriptionGroupConfig: when the master's DataVersion differs,
    /// its groups replace these whole and are written (4.9.8 SlaveSynchronize l.119-141).
    /// Returns whether they did.
    pub fn replace_from_master(&self, body: &str) -> Result<bool, String> {
        let v: Value =
            serde_json::from_str(&quote_integer_keys(body)).map_err(|e| e.to_string())?;
        let version = DataVersion {
            counter: v["dataVersion"]["counter"].as_i64().unwrap_or(0),
            timestamp: v["dataVersion"]["timestamp"].as_i64().unwrap_or(0),
        };
        if *self.version.lock() == version {
            return Ok(false);
        }
        let groups = decode(body)?;
        *self.version.lock() = version;
        *self.groups.write() = groups;
        self.persist().map_err(|e| e.to_string())?;
        Ok(true)
    }

    pub fn load(&self) -> Result<String, ConfigFileError> {
        let Some(file) = &self.file else {
            return Ok(String::new());
        };
        let (groups, note) = match file.load_logged(decode)? {
            Ok(found) => found,
            Err(fresh) => return Ok(fresh),
        };
        let n = groups.len();
        self.groups.write().extend(groups);
        Ok(format!("loaded {n} subscription groups{note}"))
    }
}

fn decode(text: &str) -> Result<HashMap<String, SubscriptionGroupConfig>, String> {
    let v: Value = serde_json::from_str(&quote_integer_keys(text)).map_err(|e| e.to_string())?;
    let table = v
        .get("subscriptionGroupTable")
        .and_then(Value::as_object)
        .ok_or("no subscriptionGroupTable object")?;
    table
        .iter()
        .map(|(k, g)| {
            let mut c: SubscriptionGroupConfig =
                serde_json::from_value(g.clone()).map_err(|e| format!("{k}: {e}"))?;
            if c.group_name.is_empty() {
                c.group_name = k.clone();
            }
            Ok((k.clone(), c))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_creation_follows_the_switch_system_prefix_and_5x_names() {
        let t = SubscriptionGroupTable::default();
        assert_eq!(t.find_or_create("G", false, false), None);
        assert!(t.find_or_create("CID_RMQ_SYS_X", false, false).is_some());
        let g = t.find_or_create("G", true, false).unwrap();
        assert_eq!((g.retry_queue_nums, g.retry_max_times), (1, 16));
        assert_eq!(t.find_or_create("bad name", true, true), None);
        assert!(t.find_or_create("bad name", true, false).is_some());
        assert_eq!(t.find_or_create(&"g".repeat(256), true, true), None);
    }

    #[test]
    fn file_round_trip_reads_5x_extras() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("subscriptionGroup.json");
        let t = SubscriptionGroupTable::persisted(ConfigFile::new(path.clone()));
        t.find_or_create("G", true, false);
        let again = SubscriptionGroupTable::persisted(ConfigFile::new(path));
        assert_eq!(again.load().unwrap(), "loaded 1 subscription groups");
        assert_eq!(again.get("G").unwrap().group_name, "G");
        let g = decode(
            r#"{"subscriptionGroupTable":{"H":{"consumeEnable":false,"groupRetryPolicy":{"type":"CUSTOMIZED"}}}}"#,
        )
        .unwrap();
        assert!(!g["H"].consume_enable);
        assert_eq!(g["H"].group_name, "H");
    }
}
