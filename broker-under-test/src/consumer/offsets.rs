//! Committed consumer offsets (ConsumerOffsetManager) and their file,
//! `config/consumerOffset.json` (consumer §6.1), written by the periodic flush and at a clean
//! stop, never on the commit path.

use std::collections::{BTreeMap, HashMap};

use parking_lot::Mutex;
use serde_json::Value;

use remoting::fastjson::quote_integer_keys;

use super::config_file::{ConfigFile, ConfigFileError};

/// `topic@group` → queueId → next offset to consume.
type Table = HashMap<String, BTreeMap<i32, i64>>;

fn key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

#[derive(Debug, Default)]
pub struct OffsetTable {
    // Held for one map operation, never across I/O: `persist` encodes a snapshot.
    table: Mutex<Table>,
    /// Commits since the last write; the flush skips a clean table.
    dirty: Mutex<u64>,
    file: Option<ConfigFile>,
    persist_lock: Mutex<()>,
}

impl OffsetTable {
    pub fn persisted(file: ConfigFile) -> Self {
        OffsetTable {
            file: Some(file),
            ..Default::default()
        }
    }

    /// commitOffset: any value is accepted, lower than stored included (RocketMQ only logs it).
    pub fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        self.table
            .lock()
            .entry(key(topic, group))
            .or_default()
            .insert(queue_id, offset);
        *self.dirty.lock() += 1;
    }

    /// queryOffset: the committed offset, `None` if none.
    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.table
            .lock()
            .get(&key(topic, group))
            .and_then(|q| q.get(&queue_id))
            .copied()
    }

    /// Writes the table if it changed since the last write (or always, with `force`).
    pub fn persist(&self, force: bool) -> Result<(), ConfigFileError> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let _writer = self.persist_lock.lock();
        let pending = std::mem::take(&mut *self.dirty.lock());
        if pending == 0 && !force {
            return Ok(());
        }
        let text = encode(&self.table.lock().clone());
        let r = file.persist(&text);
        if r.is_err() {
            // Try again at the next flush.
            *self.dirty.lock() += pending.max(1);
        }
        r
    }

    /// GET_ALL_CONSUMER_OFFSET's body: the table as the file has it
    /// (ConsumerOffsetSerializeWrapper).
    pub fn encode_all(&self) -> String {
        encode(&self.table.lock().clone())
    }

    /// SlaveSynchronize.syncConsumerOffset: the master's table over this one (`putAll`: a
    /// `topic@group` entry of the master replaces ours whole), then written (4.9.8
    /// SlaveSynchronize l.79-93). Returns the entries taken.
    pub fn merge_from_master(&self, body: &str) -> Result<usize, String> {
        let theirs = decode(body)?;
        let n = theirs.len();
        self.table.lock().extend(theirs);
        *self.dirty.lock() += 1;
        self.persist(true).map_err(|e| e.to_string())?;
        Ok(n)
    }

    /// Loads `consumerOffset.json` (or its backup). Returns a line for the log.
    pub fn load(&self) -> Result<String, ConfigFileError> {
        let Some(file) = &self.file else {
            return Ok(String::new());
        };
        let (table, note) = match file.load_logged(decode)? {
            Ok(found) => found,
            Err(fresh) => return Ok(fresh),
        };
        let n: usize = table.values().map(BTreeMap::len).sum();
        *self.table.lock() = table;
        Ok(format!("loaded {n} consumer offsets{note}"))
    }
}

/// fastjson's pretty output: tabs, sorted keys, queue ids without quotes.
fn encode(table: &Table) -> String {
    let sorted: BTreeMap<&String, &BTreeMap<i32, i64>> = table.iter().collect();
    let mut out = String::from("{\n\t\"offsetTable\":{");
    for (i, (k, queues)) in sorted.iter().enumerate() {
        out.push_str(if i == 0 { "\n" } else { ",\n" });
        out.push_str("\t\t");
        out.push_str(&serde_json::to_string(k).unwrap_or_default());
        out.push_str(":{");
        for (j, (q, o)) in queues.iter().enumerate() {
            out.push_str(if j == 0 { "\n" } else { ",\n" });
            out.push_str(&format!("\t\t\t{q}:{o}"));
        }
        out.push_str("\n\t\t}");
    }
    out.push_str("\n\t}\n}");
    out
}

fn decode(text: &str) -> Result<Table, String> {
    let v: Value = serde_json::from_str(&quote_integer_keys(text)).map_err(|e| e.to_string())?;
    let obj = v
        .get("offsetTable")
        .and_then(Value::as_object)
        .ok_or("no offsetTable object")?;
    let mut table = Table::new();
    for (k, queues) in obj {
        let queues = queues
            .as_object()
            .ok_or_else(|| format!("{k}: not an object"))?;
        let mut m = BTreeMap::new();
        for (q, o) in queues {
            let q: i32 = q.parse().map_err(|_| format!("{k}: queue id {q:?}"))?;
            let o = o
                .as_i64()
                .ok_or_else(|| format!("{k}: offset of queue {q}"))?;
            m.insert(q, o);
        }
        table.insert(k.clone(), m);
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fastjson_s_unquoted_queue_ids() {
        let t = decode(r#"{"offsetTable":{"T@G":{0:250,1:249,2:250,3:251},"%RETRY%G@G":{0:0}}}"#)
            .unwrap();
        assert_eq!(t["T@G"][&3], 251);
        assert_eq!(t["%RETRY%G@G"][&0], 0);
    }

    #[test]
    fn encode_decode_round_trip_with_bare_keys() {
        let mut t = Table::new();
        t.insert("T@G".into(), BTreeMap::from([(0, 5), (1, 7)]));
        t.insert("A@B".into(), BTreeMap::from([(0, -1)]));
        let text = encode(&t);
        assert!(text.contains("\t\t\t0:5"), "{text}");
        assert!(text.find("A@B") < text.find("T@G"));
        assert_eq!(decode(&text).unwrap(), t);
        assert_eq!(decode(&encode(&Table::new())).unwrap(), Table::new());
    }

    #[test]
    fn persist_writes_only_when_changed_and_load_restores() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("consumerOffset.json");
        let t = OffsetTable::persisted(ConfigFile::new(path.clone()));
        t.persist(false).unwrap();
        assert!(!path.exists(), "a clean table is not written");
        t.commit("G", "T", 2, 42);
        t.persist(false).unwrap();
        let again = OffsetTable::persisted(ConfigFile::new(path));
        assert_eq!(again.load().unwrap(), "loaded 1 consumer offsets");
        assert_eq!(again.query("G", "T", 2), Some(42));
        assert_eq!(again.query("G", "T", 1), None);
    }
}
