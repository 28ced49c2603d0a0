//! Name-server bodies: the broker's registration (name-server reference §2.2), topic routes
//! (§5) and cluster info (§6), as fastjson writes them.
//!
//! The trap (§5): `BrokerData.brokerAddrs` is a `HashMap<Long, String>`, and fastjson's default
//! encoder writes its keys **unquoted** (`{0:"10.0.0.1:10911"}`), which is not JSON. Name
//! servers from 4.9.4 quote them only for a request `version >= 401` or with
//! `acceptStandardJsonOnly`. [`decode_json`] reads both forms; [`TopicRouteData::encode`] and
//! [`ClusterInfo::encode`] write either. Fields are declared in alphabetical order because
//! fastjson sorts bean fields by name.

use std::collections::{BTreeMap, BTreeSet};

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::fastjson::{self, enums, lenient, TopicFilterType};

/// `PermName` bits (§1).
pub const PERM_PRIORITY: i32 = 8;
pub const PERM_READ: i32 = 4;
pub const PERM_WRITE: i32 = 2;
pub const PERM_INHERIT: i32 = 1;

/// `MixAll.MASTER_ID`.
pub const MASTER_ID: i64 = 0;

/// A body that is not what its request code promises.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("{what} body does not parse: {reason}")]
pub struct BodyError {
    pub what: &'static str,
    pub reason: String,
}

/// `DataVersion`: timestamp of the last change and a change counter; 5.x adds `stateVersion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataVersion {
    #[serde(deserialize_with = "lenient::int")]
    pub counter: i64,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_int"
    )]
    pub state_version: Option<i64>,
    #[serde(deserialize_with = "lenient::int")]
    pub timestamp: i64,
}

/// One `TopicConfig` as registered (§2.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfigData {
    #[serde(deserialize_with = "lenient::bool")]
    pub order: bool,
    #[serde(deserialize_with = "lenient::int")]
    pub perm: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub read_queue_nums: i32,
    #[serde(deserialize_with = "filter_type")]
    pub topic_filter_type: String,
    #[serde(deserialize_with = "lenient::string")]
    pub topic_name: String,
    #[serde(deserialize_with = "lenient::int")]
    pub topic_sys_flag: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub write_queue_nums: i32,
}

impl Default for TopicConfigData {
    /// Java's `TopicConfig` defaults: 16 queues, perm RW, SINGLE_TAG.
    fn default() -> Self {
        TopicConfigData {
            order: false,
            perm: PERM_READ | PERM_WRITE,
            read_queue_nums: 16,
            topic_filter_type: "SINGLE_TAG".into(),
            topic_name: String::new(),
            topic_sys_flag: 0,
            write_queue_nums: 16,
        }
    }
}

/// `TopicConfigSerializeWrapper` (5.x: `TopicConfigAndMappingSerializeWrapper`, whose extra
/// static-topic fields are ignored here).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfigWrapper {
    pub data_version: DataVersion,
    pub topic_config_table: BTreeMap<String, TopicConfigData>,
}

/// `RegisterBrokerBody`, the uncompressed REGISTER_BROKER body (§2.2).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RegisterBrokerBody {
    pub filter_server_list: Vec<String>,
    pub topic_config_serialize_wrapper: TopicConfigWrapper,
}

impl RegisterBrokerBody {
    pub fn encode(&self) -> Vec<u8> {
        // No integer-keyed maps inside: plain JSON is what fastjson writes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(body, "RegisterBrokerBody")
    }
}

/// `QueueData`: one broker's queues of a topic. ≤ 4.8 spelled the flag `topicSynFlag`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueData {
    #[serde(deserialize_with = "lenient::string")]
    pub broker_name: String,
    #[serde(deserialize_with = "lenient::int")]
    pub perm: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub read_queue_nums: i32,
    #[serde(default, alias = "topicSynFlag", deserialize_with = "lenient::int")]
    pub topic_sys_flag: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub write_queue_nums: i32,
}

impl QueueData {
    /// `PermName.isWriteable`.
    pub fn writeable(&self) -> bool {
        self.perm & PERM_WRITE == PERM_WRITE
    }
}

/// `BrokerData`: a broker name's addresses by broker id (0 = master).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerData {
    pub broker_addrs: BTreeMap<i64, String>,
    pub broker_name: String,
    pub cluster: String,
    /// 5.x writes it always; 4.x not at all.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_bool"
    )]
    pub enable_acting_master: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_name: Option<String>,
}

impl BrokerData {
    /// The master's address, if the master is registered.
    pub fn master_addr(&self) -> Option<&str> {
        self.broker_addrs.get(&MASTER_ID).map(String::as_str)
    }

    fn write_json(&self, quoted: bool, out: &mut String) {
        out.push_str("{\"brokerAddrs\":{");
        for (i, (id, addr)) in self.broker_addrs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            if quoted {
                out.push_str(&format!("\"{id}\":{}", json_string(addr)));
            } else {
                out.push_str(&format!("{id}:{}", json_string(addr)));
            }
        }
        out.push_str("},\"brokerName\":");
        out.push_str(&json_string(&self.broker_name));
        out.push_str(",\"cluster\":");
        out.push_str(&json_string(&self.cluster));
        if let Some(e) = self.enable_acting_master {
            out.push_str(&format!(",\"enableActingMaster\":{e}"));
        }
        if let Some(z) = &self.zone_name {
            out.push_str(",\"zoneName\":");
            out.push_str(&json_string(z));
        }
        out.push('}');
    }
}

/// `TopicRouteData`, the GET_ROUTEINFO_BY_TOPIC body (§5).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicRouteData {
    pub broker_datas: Vec<BrokerData>,
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    pub queue_datas: Vec<QueueData>,
}

impl TopicRouteData {
    /// fastjson's encoding; `quoted` = standard JSON (request version ≥ 401 or
    /// `acceptStandardJsonOnly`), otherwise `brokerAddrs` keys are bare integers.
    pub fn encode(&self, quoted: bool) -> String {
        let mut out = String::from("{\"brokerDatas\":[");
        for (i, b) in self.broker_datas.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            b.write_json(quoted, &mut out);
        }
        out.push_str("],\"filterServerTable\":");
        out.push_str(&to_json(&self.filter_server_table));
        if let Some(o) = &self.order_topic_conf {
            out.push_str(",\"orderTopicConf\":");
            out.push_str(&json_string(o));
        }
        out.push_str(",\"queueDatas\":");
        out.push_str(&to_json(&self.queue_datas));
        out.push('}');
        out
    }

    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(body, "TopicRouteData")
    }
}

/// `ClusterInfo`, the GET_BROKER_CLUSTER_INFO body (§6): always fastjson's default encoding,
/// so `brokerAddrs` keys are bare integers in every version.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterInfo {
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

impl ClusterInfo {
    pub fn encode(&self, quoted: bool) -> String {
        let mut out = String::from("{\"brokerAddrTable\":{");
        for (i, (name, b)) in self.broker_addr_table.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&json_string(name));
            out.push(':');
            b.write_json(quoted, &mut out);
        }
        out.push_str("},\"clusterAddrTable\":");
        out.push_str(&to_json(&self.cluster_addr_table));
        out.push('}');
        out
    }

    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(body, "ClusterInfo")
    }
}

/// `UtilAll.crc32` over a body as sent: CRC-32/IEEE masked to a non-negative int; 0 for none
/// (REGISTER_BROKER's `bodyCrc32`, §2.4).
pub fn body_crc32(body: &[u8]) -> i32 {
    if body.is_empty() {
        return 0;
    }
    (crc32fast::hash(body) & 0x7FFF_FFFF) as i32
}

/// A boxed `Boolean`: null stays `None`.
fn opt_bool<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => lenient::bool(v).map(Some).map_err(serde::de::Error::custom),
    }
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

fn to_json(v: &impl Serialize) -> String {
    // Maps of strings and plain structs always serialize.
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

/// Parses a body as fastjson would (bare integer keys, lenient scalars) into `T`.
pub fn decode_json<T: DeserializeOwned>(body: &[u8], what: &'static str) -> Result<T, BodyError> {
    fastjson::from_slice(body).map_err(|reason| BodyError { what, reason })
}

/// `TopicConfig.topicFilterType`, an enum: by name or ordinal; null or unknown is the default.
fn filter_type<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(enums::lenient::<D, TopicFilterType>(d)?
        .unwrap_or(TopicFilterType::SingleTag)
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route() -> TopicRouteData {
        TopicRouteData {
            broker_datas: vec![BrokerData {
                broker_addrs: BTreeMap::from([
                    (0, "10.0.0.1:10911".into()),
                    (1, "10.0.0.2:10911".into()),
                ]),
                broker_name: "broker-a".into(),
                cluster: "DefaultCluster".into(),
                enable_acting_master: Some(false),
                zone_name: None,
            }],
            filter_server_table: BTreeMap::new(),
            order_topic_conf: None,
            queue_datas: vec![QueueData {
                broker_name: "broker-a".into(),
                perm: 6,
                read_queue_nums: 4,
                topic_sys_flag: 0,
                write_queue_nums: 4,
            }],
        }
    }

    /// The reference's §5 example, byte for byte, and the bare-key form of name servers
    /// before 4.9.4.
    #[test]
    fn route_encodes_both_key_forms_and_reads_them_back() {
        let quoted = route().encode(true);
        assert_eq!(
            quoted,
            r#"{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
        );
        let bare = route().encode(false);
        assert!(bare.contains(r#"{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}"#));
        assert!(serde_json::from_str::<serde_json::Value>(&bare).is_err());
        assert_eq!(TopicRouteData::decode(quoted.as_bytes()), Ok(route()));
        assert_eq!(TopicRouteData::decode(bare.as_bytes()), Ok(route()));
    }

    #[test]
    fn old_flag_spelling_and_unknown_fields_are_read() {
        let text = r#"{"brokerDatas":[{"brokerAddrs":{0:"h:1"},"brokerName":"b","cluster":"c"}],
            "filterServerTable":{},"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":2,
            "topicSynFlag":3,"writeQueueNums":2}],"topicQueueMappingByBroker":{}}"#;
        let r = TopicRouteData::decode(text.as_bytes()).unwrap();
        assert_eq!(r.queue_datas[0].topic_sys_flag, 3);
        assert_eq!(r.broker_datas[0].master_addr(), Some("h:1"));
    }

    /// Numbers as strings, booleans as strings and the filter type by ordinal, as fastjson
    /// reads a registration body.
    #[test]
    fn registration_fields_are_read_leniently() {
        let body = br#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":"3","timestamp":"1700000000000"},"topicConfigTable":{"T":{"order":"true","perm":"6","readQueueNums":2,"topicFilterType":1,"topicName":"T","topicSysFlag":null,"writeQueueNums":"2","attributes":{}}}},"filterServerList":[]}"#;
        let w = RegisterBrokerBody::decode(body)
            .unwrap()
            .topic_config_serialize_wrapper;
        assert_eq!(w.data_version.counter, 3);
        let t = &w.topic_config_table["T"];
        assert!(t.order);
        assert_eq!((t.perm, t.write_queue_nums, t.topic_sys_flag), (6, 2, 0));
        assert_eq!(t.topic_filter_type, "MULTI_TAG");
    }

    #[test]
    fn cluster_info_and_register_body_round_trip() {
        let info = ClusterInfo {
            broker_addr_table: BTreeMap::from([(
                "broker-a".into(),
                route().broker_datas[0].clone(),
            )]),
            cluster_addr_table: BTreeMap::from([(
                "DefaultCluster".into(),
                BTreeSet::from(["broker-a".into()]),
            )]),
        };
        let text = info.encode(false);
        assert!(text.starts_with(r#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"#));
        assert_eq!(ClusterInfo::decode(text.as_bytes()), Ok(info));

        let body = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":2,"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}}}}"#;
        let parsed = RegisterBrokerBody::decode(body).unwrap();
        let w = &parsed.topic_config_serialize_wrapper;
        assert_eq!(w.data_version.counter, 2);
        assert_eq!(w.topic_config_table["TopicTest"].write_queue_nums, 4);
        assert_eq!(parsed.encode(), body.to_vec());
        assert!(RegisterBrokerBody::decode(b"{nope").is_err());
    }
}
