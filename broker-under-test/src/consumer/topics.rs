//! The topic table (TopicConfigManager) and its file, `config/topics.json` (consumer §6.1).
//!
//! Every change is written at once, as RocketMQ does on create and update: an auto-created
//! topic must survive a kill -9 that follows its first send. The periodic flush and the clean
//! stop write it again (cheap, and it repairs a failed earlier write).

use std::collections::{BTreeMap, HashMap};

use parking_lot::{Mutex, RwLock};
use serde_json::{json, Value};

use remoting::fastjson::{pretty_tabs, quote_integer_keys};

use super::config_file::{ConfigFile, ConfigFileError};

/// PermName bits.
pub const PERM_INHERIT: i32 = 1;
pub const PERM_WRITE: i32 = 2;
pub const PERM_READ: i32 = 4;

/// A topic's queues and permissions (TopicConfig).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicConfig {
    pub topic_name: String,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub perm: i32,
    pub order: bool,
}

impl std::fmt::Display for TopicConfig {
    /// Java's `TopicConfig.toString()` (4.9.8), which RocketMQ puts into some remarks.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bit = |b: i32, c: &'static str| if self.perm & b != 0 { c } else { "-" };
        write!(
            f,
            "TopicConfig [topicName={}, readQueueNums={}, writeQueueNums={}, perm={}{}{}, \
             topicFilterType=SINGLE_TAG, topicSysFlag=0, order={}]",
            self.topic_name,
            self.read_queue_nums,
            self.write_queue_nums,
            bit(PERM_READ, "R"),
            bit(PERM_WRITE, "W"),
            bit(PERM_INHERIT, "X"),
            self.order
        )
    }
}

/// DataVersion: bumped on every change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DataVersion {
    pub counter: i64,
    pub timestamp: i64,
}

/// Topics known to the broker.
#[derive(Debug, Default)]
pub struct TopicTable {
    // Read on every send and pull, written on creation: an RwLock keeps those from serializing.
    topics: RwLock<HashMap<String, TopicConfig>>,
    version: Mutex<DataVersion>,
    /// `None`: memory only (unit tests).
    file: Option<ConfigFile>,
    // Serializes writers so the last snapshot taken is the last one written.
    persist_lock: Mutex<()>,
}

impl TopicTable {
    /// A table persisted to `file`; call [`TopicTable::load`] before use.
    pub fn persisted(file: ConfigFile) -> Self {
        TopicTable {
            file: Some(file),
            ..Default::default()
        }
    }

    pub fn get(&self, topic: &str) -> Option<TopicConfig> {
        self.topics.read().get(topic).cloned()
    }

    pub fn len(&self) -> usize {
        self.topics.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds or replaces a topic and writes the file.
    pub fn put(&self, config: TopicConfig) {
        self.topics
            .write()
            .insert(config.topic_name.clone(), config);
        self.changed();
    }

    /// Adds a topic unless present (the broker's built-in topics); not written by itself.
    pub fn put_default(&self, config: TopicConfig) {
        self.topics
            .write()
            .entry(config.topic_name.clone())
            .or_insert(config);
    }

    /// TopicConfigManager.createTopicInSendMessageMethod: a new topic copies the template's
    /// permissions (without INHERIT) with min(client's, template's write) queues. `None` when the
    /// template is unknown or not inheritable.
    pub fn create_in_send(
        &self,
        topic: &str,
        default_topic: &str,
        client_default_queue_nums: i32,
    ) -> Option<TopicConfig> {
        let config = {
            let mut topics = self.topics.write();
            if let Some(existing) = topics.get(topic) {
                return Some(existing.clone());
            }
            let template = topics.get(default_topic)?;
            if template.perm & PERM_INHERIT == 0 {
                return None;
            }
            let queues = client_default_queue_nums
                .min(template.write_queue_nums)
                .max(1);
            let config = TopicConfig {
                topic_name: topic.to_owned(),
                read_queue_nums: queues,
                write_queue_nums: queues,
                perm: template.perm & !PERM_INHERIT,
                order: false,
            };
            topics.insert(topic.to_owned(), config.clone());
            config
        };
        self.changed();
        Some(config)
    }

    /// createTopicInSendMessageBackMethod / the heartbeat's retry topic: created with the given
    /// queues and permissions if absent. Returns the topic's config.
    pub fn create_if_absent(&self, topic: &str, queues: i32, perm: i32) -> TopicConfig {
        let config = {
            let mut topics = self.topics.write();
            if let Some(existing) = topics.get(topic) {
                return existing.clone();
            }
            let config = TopicConfig {
                topic_name: topic.to_owned(),
                read_queue_nums: queues,
                write_queue_nums: queues,
                perm,
                order: false,
            };
            topics.insert(topic.to_owned(), config.clone());
            config
        };
        self.changed();
        config
    }

    /// The DataVersion and every topic, read together (the name-server registration body).
    pub fn snapshot(&self) -> (DataVersion, Vec<TopicConfig>) {
        let topics = self.topics.read();
        let version = *self.version.lock();
        (version, topics.values().cloned().collect())
    }

    /// The DataVersion alone: cheap enough to poll for changes.
    pub fn data_version(&self) -> DataVersion {
        *self.version.lock()
    }

    fn changed(&self) {
        {
            let mut v = self.version.lock();
            v.counter += 1;
            v.timestamp = crate::clock::epoch_millis();
        }
        if let Err(e) = self.persist() {
            eprintln!("topics: {e}");
        }
    }

    /// Writes the whole table (no-op for a memory-only table).
    pub fn persist(&self) -> Result<(), ConfigFileError> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let _writer = self.persist_lock.lock();
        let text = self.encode();
        file.persist(&text)
    }

    /// Loads `topics.json` (or its backup); loaded topics replace built-in ones, as
    /// `topicConfigTable.putAll` does. Returns a line for the log.
    pub fn load(&self) -> Result<String, ConfigFileError> {
        let Some(file) = &self.file else {
            return Ok(String::new());
        };
        let (loaded, note) = match file.load_logged(decode)? {
            Ok(found) => found,
            Err(fresh) => return Ok(fresh),
        };
        let n = loaded.1.len();
        *self.version.lock() = loaded.0;
        self.topics.write().extend(loaded.1);
        Ok(format!("loaded {n} topics{note}"))
    }

    /// SlaveSynchronize.syncTopicConfig: when the master's DataVersion differs, its table
    /// replaces this one whole (`clear` + `putAll`) and is written (4.9.8 SlaveSynchronize
    /// l.55-77). Returns whether it did.
    pub fn replace_from_master(&self, body: &str) -> Result<bool, String> {
        let (version, topics) = decode(body)?;
        if *self.version.lock() == version {
            return Ok(false);
        }
        *self.version.lock() = version;
        *self.topics.write() = topics;
        self.persist().map_err(|e| e.to_string())?;
        Ok(true)
    }

    /// GET_ALL_TOPIC_CONFIG's body (TopicConfigSerializeWrapper), as the file has it.
    pub fn encode(&self) -> String {
        let v = *self.version.lock();
        let topics: BTreeMap<String, Value> = self
            .topics
            .read()
            .values()
            .map(|t| {
                (
                    t.topic_name.clone(),
                    json!({
                        "order": t.order,
                        "perm": t.perm,
                        "readQueueNums": t.read_queue_nums,
                        "topicFilterType": "SINGLE_TAG",
                        "topicName": t.topic_name,
                        "topicSysFlag": 0,
                        "writeQueueNums": t.write_queue_nums,
                    }),
                )
            })
            .collect();
        pretty_tabs(&json!({
            "dataVersion": {"counter": v.counter, "timestamp": v.timestamp},
            "topicConfigTable": topics,
        }))
    }
}

type Decoded = (DataVersion, HashMap<String, TopicConfig>);

fn decode(text: &str) -> Result<Decoded, String> {
    let v: Value = serde_json::from_str(&quote_integer_keys(text)).map_err(|e| e.to_string())?;
    let table = v
        .get("topicConfigTable")
        .and_then(Value::as_object)
        .ok_or("no topicConfigTable object")?;
    let int = |t: &Value, k: &str| -> Result<i32, String> {
        t.get(k)
            .and_then(Value::as_i64)
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| format!("topic entry without a valid {k}"))
    };
    let mut topics = HashMap::new();
    for (name, t) in table {
        let config = TopicConfig {
            topic_name: t
                .get("topicName")
                .and_then(Value::as_str)
                .unwrap_or(name)
                .to_owned(),
            read_queue_nums: int(t, "readQueueNums")?,
            write_queue_nums: int(t, "writeQueueNums")?,
            perm: int(t, "perm")?,
            order: t.get("order").and_then(Value::as_bool).unwrap_or(false),
        };
        topics.insert(name.clone(), config);
    }
    let dv = v.get("dataVersion");
    let field = |k: &str| dv.and_then(|d| d.get(k)).and_then(Value::as_i64);
    let version = DataVersion {
        counter: field("counter").unwrap_or(0),
        timestamp: field("timestamp").unwrap_or(0),
    };
    Ok((version, topics))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rocketmq_s_file_and_round_trips() {
        let text = r#"{"dataVersion":{"counter":3,"timestamp":1717000000000},
            "topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":4,
            "topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4,
            "attributes":{}}}}"#;
        let (v, t) = decode(text).unwrap();
        assert_eq!(v.counter, 3);
        assert_eq!(t["T"].read_queue_nums, 4);
        assert_eq!(t["T"].perm, 6);

        let dir = tempfile::tempdir().unwrap();
        let table = TopicTable::persisted(ConfigFile::new(dir.path().join("topics.json")));
        table.put(t["T"].clone());
        let again = TopicTable::persisted(ConfigFile::new(dir.path().join("topics.json")));
        assert_eq!(again.load().unwrap(), "loaded 1 topics");
        assert_eq!(again.get("T"), Some(t["T"].clone()));
        assert_eq!(again.version.lock().counter, 1);
    }

    #[test]
    fn an_entry_without_queue_numbers_does_not_decode() {
        let e = decode(r#"{"topicConfigTable":{"T":{"perm":6}}}"#).unwrap_err();
        assert!(e.contains("readQueueNums"), "{e}");
    }

    #[test]
    fn auto_creation_is_written_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("topics.json");
        let table = TopicTable::persisted(ConfigFile::new(path.clone()));
        table.put_default(TopicConfig {
            topic_name: "TBW102".into(),
            read_queue_nums: 8,
            write_queue_nums: 8,
            perm: 7,
            order: false,
        });
        let c = table.create_in_send("New", "TBW102", 4).unwrap();
        assert_eq!((c.write_queue_nums, c.perm), (4, 6));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"New\""), "{text}");
        assert!(text.contains('\t'));
    }
}
