//! `config/delayOffset.json` (reference B4.5): level → next offset to examine in
//! `SCHEDULE_TOPIC_XXXX` queue level − 1. Written as fastjson writes it (integer keys
//! unquoted); 5.3 adds a `dataVersion` whose counter moves every 200 updates.

use std::collections::BTreeMap;

use serde_json::Value;

use remoting::fastjson::quote_integer_keys;

/// `delayOffsetUpdateVersionStep`.
pub const UPDATE_VERSION_STEP: u64 = 200;

/// The table and what 5.3 writes beside it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DelayOffsets {
    pub table: BTreeMap<i32, i64>,
    /// 5.3's dataVersion: `None` writes the 4.x form.
    pub data_version: Option<(i64, i64)>,
}

impl DelayOffsets {
    /// fastjson's pretty output: tabs, sorted keys, levels without quotes.
    pub fn encode(&self) -> String {
        let mut out = String::from("{\n");
        if let Some((counter, timestamp)) = self.data_version {
            out.push_str(&format!(
                "\t\"dataVersion\":{{\n\t\t\"counter\":{counter},\n\t\t\"stateVersion\":0,\n\t\t\"timestamp\":{timestamp}\n\t}},\n"
            ));
        }
        out.push_str("\t\"offsetTable\":{");
        for (i, (level, offset)) in self.table.iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { ",\n" });
            out.push_str(&format!("\t\t{level}:{offset}"));
        }
        out.push_str(if self.table.is_empty() {
            "}\n}"
        } else {
            "\n\t}\n}"
        });
        out
    }

    /// Reads both forms (and quoted keys).
    pub fn decode(text: &str) -> Result<Self, String> {
        let v: Value =
            serde_json::from_str(&quote_integer_keys(text)).map_err(|e| e.to_string())?;
        let obj = v
            .get("offsetTable")
            .and_then(Value::as_object)
            .ok_or("no offsetTable object")?;
        let mut table = BTreeMap::new();
        for (k, o) in obj {
            let level: i32 = k.trim().parse().map_err(|_| format!("level {k:?}"))?;
            let o = o
                .as_i64()
                .ok_or_else(|| format!("offset of level {level}"))?;
            table.insert(level, o);
        }
        let data_version = v.get("dataVersion").map(|d| {
            (
                d.get("counter").and_then(Value::as_i64).unwrap_or(0),
                d.get("timestamp").and_then(Value::as_i64).unwrap_or(0),
            )
        });
        Ok(DelayOffsets {
            table,
            data_version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_release_forms_round_trip() {
        let t = DelayOffsets::decode(r#"{"offsetTable":{1:0,2:0,3:182,4:97,18:3}}"#).unwrap();
        assert_eq!(t.table[&3], 182);
        assert_eq!(t.data_version, None);
        assert_eq!(DelayOffsets::decode(&t.encode()).unwrap(), t);
        assert!(t.encode().contains("\t\t3:182,\n"), "{}", t.encode());

        let v5 = DelayOffsets::decode(
            r#"{"dataVersion":{"counter":12,"stateVersion":0,"timestamp":1717000000000},"offsetTable":{3:182,4:97}}"#,
        )
        .unwrap();
        assert_eq!(v5.data_version, Some((12, 1_717_000_000_000)));
        assert_eq!(DelayOffsets::decode(&v5.encode()).unwrap(), v5);
        let empty = DelayOffsets::default();
        assert_eq!(DelayOffsets::decode(&empty.encode()).unwrap(), empty);
        assert!(DelayOffsets::decode("{}").is_err());
    }
}
