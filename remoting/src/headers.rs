//! Typed custom headers: the `extFields` of a command as Rust structs (reference §3.2, §3.3, §3.6).
//!
//! Every field of a Java header class is written as `name -> value.toString()`; absent
//! (null) fields are not written. Numbers are decimal, booleans `true`/`false`.

use std::collections::BTreeMap;

use crate::error::HeaderError;

/// A header carried in `extFields`.
pub trait CustomHeader: Sized {
    fn to_ext_fields(&self) -> BTreeMap<String, String>;
    fn from_ext_fields<F: ExtFields + ?Sized>(fields: &F) -> Result<Self, HeaderError>;
}

/// Where a header's `extFields` are read from: a decoded command's map, or the pairs of a
/// header read in place ([`crate::plain_json::read_frame`]).
pub trait ExtFields {
    fn ext(&self, key: &str) -> Option<&str>;
}

impl ExtFields for BTreeMap<String, String> {
    fn ext(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// The last pair of a name wins, as in a map filled in order.
impl ExtFields for [(&str, &str)] {
    fn ext(&self, key: &str) -> Option<&str> {
        self.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

/// One field's conversion to and from its string form.
pub trait ExtValue: Sized {
    fn put(&self, key: &'static str, fields: &mut BTreeMap<String, String>);
    fn get<F: ExtFields + ?Sized>(fields: &F, key: &'static str) -> Result<Self, HeaderError>;
}

macro_rules! ext_scalar {
    ($ty:ty, $parse:expr) => {
        impl ExtValue for $ty {
            fn put(&self, key: &'static str, fields: &mut BTreeMap<String, String>) {
                fields.insert(key.to_owned(), self.to_string());
            }
            fn get<F: ExtFields + ?Sized>(
                fields: &F,
                key: &'static str,
            ) -> Result<Self, HeaderError> {
                let raw = fields.ext(key).ok_or(HeaderError::Missing(key))?;
                let parse: fn(&str) -> Option<$ty> = $parse;
                parse(raw).ok_or_else(|| HeaderError::Invalid {
                    field: key,
                    value: raw.to_owned(),
                })
            }
        }
        impl ExtValue for Option<$ty> {
            fn put(&self, key: &'static str, fields: &mut BTreeMap<String, String>) {
                if let Some(v) = self {
                    v.put(key, fields);
                }
            }
            fn get<F: ExtFields + ?Sized>(
                fields: &F,
                key: &'static str,
            ) -> Result<Self, HeaderError> {
                match fields.ext(key).is_some() {
                    true => <$ty as ExtValue>::get(fields, key).map(Some),
                    false => Ok(None),
                }
            }
        }
    };
}

ext_scalar!(String, |s| Some(s.to_owned()));
ext_scalar!(i32, |s| s.trim().parse().ok());
ext_scalar!(i64, |s| s.trim().parse().ok());
// Java's Boolean.parseBoolean: "true" in any case is true, everything else false.
ext_scalar!(bool, |s| Some(s.eq_ignore_ascii_case("true")));

macro_rules! custom_header {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$fmeta:meta])* $field:ident: $ty:ty => $key:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name { $($(#[$fmeta])* pub $field: $ty),+ }

        impl CustomHeader for $name {
            fn to_ext_fields(&self) -> BTreeMap<String, String> {
                let mut fields = BTreeMap::new();
                $(ExtValue::put(&self.$field, $key, &mut fields);)+
                fields
            }
            fn from_ext_fields<F: ExtFields + ?Sized>(fields: &F) -> Result<Self, HeaderError> {
                Ok($name { $($field: ExtValue::get(fields, $key)?),+ })
            }
        }
    };
}

custom_header! {
    /// SEND_MESSAGE (10): long field names.
    pub struct SendMessageRequestHeader {
        producer_group: String => "producerGroup",
        topic: String => "topic",
        default_topic: String => "defaultTopic",
        default_topic_queue_nums: i32 => "defaultTopicQueueNums",
        queue_id: i32 => "queueId",
        sys_flag: i32 => "sysFlag",
        born_timestamp: i64 => "bornTimestamp",
        flag: i32 => "flag",
        properties: Option<String> => "properties",
        reconsume_times: Option<i32> => "reconsumeTimes",
        unit_mode: Option<bool> => "unitMode",
        max_reconsume_times: Option<i32> => "maxReconsumeTimes",
        batch: Option<bool> => "batch",
        broker_name: Option<String> => "brokerName",
    }
}

custom_header! {
    /// SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320): one-letter keys `a`–`n`.
    pub struct SendMessageRequestHeaderV2 {
        a: String => "a",
        b: String => "b",
        c: String => "c",
        d: i32 => "d",
        e: i32 => "e",
        f: i32 => "f",
        g: i64 => "g",
        h: i32 => "h",
        i: Option<String> => "i",
        j: Option<i32> => "j",
        k: Option<bool> => "k",
        l: Option<i32> => "l",
        m: Option<bool> => "m",
        n: Option<String> => "n",
    }
}

impl From<SendMessageRequestHeaderV2> for SendMessageRequestHeader {
    fn from(v2: SendMessageRequestHeaderV2) -> Self {
        SendMessageRequestHeader {
            producer_group: v2.a,
            topic: v2.b,
            default_topic: v2.c,
            default_topic_queue_nums: v2.d,
            queue_id: v2.e,
            sys_flag: v2.f,
            born_timestamp: v2.g,
            flag: v2.h,
            properties: v2.i,
            reconsume_times: v2.j,
            unit_mode: v2.k,
            max_reconsume_times: v2.l,
            batch: v2.m,
            broker_name: v2.n,
        }
    }
}

impl From<SendMessageRequestHeader> for SendMessageRequestHeaderV2 {
    fn from(v1: SendMessageRequestHeader) -> Self {
        SendMessageRequestHeaderV2 {
            a: v1.producer_group,
            b: v1.topic,
            c: v1.default_topic,
            d: v1.default_topic_queue_nums,
            e: v1.queue_id,
            f: v1.sys_flag,
            g: v1.born_timestamp,
            h: v1.flag,
            i: v1.properties,
            j: v1.reconsume_times,
            k: v1.unit_mode,
            l: v1.max_reconsume_times,
            m: v1.batch,
            n: v1.broker_name,
        }
    }
}

custom_header! {
    /// The send response (reference §3.3). The broker also adds `MSG_REGION` and `TRACE_ON`.
    pub struct SendMessageResponseHeader {
        msg_id: String => "msgId",
        queue_id: i32 => "queueId",
        queue_offset: i64 => "queueOffset",
        transaction_id: Option<String> => "transactionId",
        batch_uniq_id: Option<String> => "batchUniqId",
    }
}

custom_header! {
    /// PULL_MESSAGE (11).
    pub struct PullMessageRequestHeader {
        consumer_group: String => "consumerGroup",
        topic: String => "topic",
        queue_id: i32 => "queueId",
        queue_offset: i64 => "queueOffset",
        max_msg_nums: i32 => "maxMsgNums",
        sys_flag: i32 => "sysFlag",
        commit_offset: i64 => "commitOffset",
        suspend_timeout_millis: i64 => "suspendTimeoutMillis",
        subscription: Option<String> => "subscription",
        sub_version: i64 => "subVersion",
        expression_type: Option<String> => "expressionType",
        max_msg_bytes: Option<i32> => "maxMsgBytes",
    }
}

custom_header! {
    /// The pull response; the body is the concatenated CommitLog records.
    pub struct PullMessageResponseHeader {
        suggest_which_broker_id: i64 => "suggestWhichBrokerId",
        next_begin_offset: i64 => "nextBeginOffset",
        min_offset: i64 => "minOffset",
        max_offset: i64 => "maxOffset",
    }
}

custom_header! {
    /// UPDATE_AND_CREATE_TOPIC (17).
    pub struct CreateTopicRequestHeader {
        topic: String => "topic",
        default_topic: String => "defaultTopic",
        read_queue_nums: i32 => "readQueueNums",
        write_queue_nums: i32 => "writeQueueNums",
        perm: i32 => "perm",
        topic_filter_type: String => "topicFilterType",
        topic_sys_flag: Option<i32> => "topicSysFlag",
        order: Option<bool> => "order",
    }
}

custom_header! {
    /// QUERY_CONSUMER_OFFSET (14).
    pub struct QueryConsumerOffsetRequestHeader {
        consumer_group: String => "consumerGroup",
        topic: String => "topic",
        queue_id: i32 => "queueId",
        set_zero_if_not_found: Option<bool> => "setZeroIfNotFound",
    }
}

custom_header! {
    /// The QUERY_CONSUMER_OFFSET response.
    pub struct QueryConsumerOffsetResponseHeader {
        offset: i64 => "offset",
    }
}

custom_header! {
    /// CONSUMER_SEND_MSG_BACK (36): ConsumerSendMsgBackRequestHeader. `offset` is the
    /// message's CommitLog (physical) offset; `bname` is 4.9/5.x's RpcRequestHeader field.
    pub struct ConsumerSendMsgBackRequestHeader {
        offset: i64 => "offset",
        group: String => "group",
        delay_level: i32 => "delayLevel",
        origin_msg_id: Option<String> => "originMsgId",
        origin_topic: Option<String> => "originTopic",
        unit_mode: Option<bool> => "unitMode",
        max_reconsume_times: Option<i32> => "maxReconsumeTimes",
        bname: Option<String> => "bname",
    }
}

custom_header! {
    /// UPDATE_CONSUMER_OFFSET (15).
    pub struct UpdateConsumerOffsetRequestHeader {
        consumer_group: String => "consumerGroup",
        topic: String => "topic",
        queue_id: i32 => "queueId",
        commit_offset: i64 => "commitOffset",
    }
}

custom_header! {
    /// GET_MAX_OFFSET (30) and GET_MIN_OFFSET (31); 5.x adds `committed` to 30.
    pub struct GetQueueOffsetRequestHeader {
        topic: String => "topic",
        queue_id: i32 => "queueId",
        committed: Option<bool> => "committed",
    }
}

custom_header! {
    /// The GET_MAX_OFFSET / GET_MIN_OFFSET response.
    pub struct GetQueueOffsetResponseHeader {
        offset: i64 => "offset",
    }
}

custom_header! {
    /// UNREGISTER_CLIENT (35).
    pub struct UnregisterClientRequestHeader {
        client_id: String => "clientID",
        producer_group: Option<String> => "producerGroup",
        consumer_group: Option<String> => "consumerGroup",
    }
}

custom_header! {
    /// GET_CONSUMER_LIST_BY_GROUP (38) and NOTIFY_CONSUMER_IDS_CHANGED (40).
    pub struct ConsumerGroupHeader {
        consumer_group: String => "consumerGroup",
    }
}

custom_header! {
    /// END_TRANSACTION (37).
    pub struct EndTransactionRequestHeader {
        producer_group: String => "producerGroup",
        tran_state_table_offset: i64 => "tranStateTableOffset",
        commit_log_offset: i64 => "commitLogOffset",
        commit_or_rollback: i32 => "commitOrRollback",
        from_transaction_check: Option<bool> => "fromTransactionCheck",
        msg_id: String => "msgId",
        transaction_id: Option<String> => "transactionId",
        topic: Option<String> => "topic",
    }
}

custom_header! {
    /// REGISTER_BROKER (103), name-server reference §2.1. `heartbeatTimeoutMillis` and
    /// `enableActingMaster` are 5.x only.
    pub struct RegisterBrokerRequestHeader {
        broker_name: String => "brokerName",
        broker_addr: String => "brokerAddr",
        cluster_name: String => "clusterName",
        ha_server_addr: String => "haServerAddr",
        broker_id: i64 => "brokerId",
        compressed: Option<bool> => "compressed",
        body_crc32: Option<i32> => "bodyCrc32",
        heartbeat_timeout_millis: Option<i64> => "heartbeatTimeoutMillis",
        enable_acting_master: Option<bool> => "enableActingMaster",
    }
}

custom_header! {
    /// The REGISTER_BROKER response: set only for a slave whose master is alive (§2.6).
    pub struct RegisterBrokerResponseHeader {
        ha_server_addr: Option<String> => "haServerAddr",
        master_addr: Option<String> => "masterAddr",
    }
}

custom_header! {
    /// UNREGISTER_BROKER (104), name-server reference §3.
    pub struct UnregisterBrokerRequestHeader {
        broker_name: String => "brokerName",
        broker_addr: String => "brokerAddr",
        cluster_name: String => "clusterName",
        broker_id: i64 => "brokerId",
    }
}

custom_header! {
    /// GET_ROUTEINFO_BY_TOPIC (105), name-server reference §5.
    pub struct GetRouteInfoRequestHeader {
        topic: String => "topic",
        accept_standard_json_only: Option<bool> => "acceptStandardJsonOnly",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2() -> SendMessageRequestHeaderV2 {
        SendMessageRequestHeaderV2 {
            a: "pg".into(),
            b: "TopicTest".into(),
            c: "TBW102".into(),
            d: 4,
            e: 1,
            f: 0,
            g: 1_700_000_000_000,
            h: 0,
            i: Some("WAIT\u{1}true\u{2}".into()),
            j: Some(0),
            k: Some(false),
            l: None,
            m: Some(false),
            n: Some("broker-a".into()),
        }
    }

    #[test]
    fn v2_uses_one_letter_keys_and_omits_nulls() {
        let fields = v2().to_ext_fields();
        assert_eq!(fields.get("b").map(String::as_str), Some("TopicTest"));
        assert_eq!(fields.get("g").map(String::as_str), Some("1700000000000"));
        assert_eq!(fields.get("k").map(String::as_str), Some("false"));
        assert!(!fields.contains_key("l"));
        assert_eq!(
            SendMessageRequestHeaderV2::from_ext_fields(&fields),
            Ok(v2())
        );
    }

    #[test]
    fn v1_and_v2_convert_losslessly() {
        let v1: SendMessageRequestHeader = v2().into();
        assert_eq!(v1.topic, "TopicTest");
        assert_eq!(
            v1.to_ext_fields().get("producerGroup").map(String::as_str),
            Some("pg")
        );
        assert_eq!(SendMessageRequestHeaderV2::from(v1), v2());
    }

    /// The frames the broker sends and reads on the consumer side, byte for byte.
    #[test]
    fn consumer_side_headers_encode_byte_exact() {
        use crate::{RemotingCommand, RequestCode};
        let notify = RemotingCommand::request(RequestCode::NOTIFY_CONSUMER_IDS_CHANGED, 7)
            .with_oneway()
            .with_header(&ConsumerGroupHeader {
                consumer_group: "G".into(),
            });
        let bytes = notify.to_bytes();
        let header_len = u32::from_be_bytes(bytes[4..8].try_into().unwrap()) as usize;
        assert_eq!(
            u32::from_be_bytes(bytes[0..4].try_into().unwrap()) as usize,
            4 + header_len
        );
        assert_eq!(
            std::str::from_utf8(&bytes[8..]).unwrap(),
            r#"{"code":40,"extFields":{"consumerGroup":"G"},"flag":2,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":401}"#
        );
        let u = UnregisterClientRequestHeader {
            client_id: "10.0.0.5@1".into(),
            producer_group: None,
            consumer_group: Some("G".into()),
        };
        let f = u.to_ext_fields();
        assert_eq!(
            f.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>(),
            ["clientID=10.0.0.5@1", "consumerGroup=G"]
        );
        let o = GetQueueOffsetRequestHeader {
            topic: "T".into(),
            queue_id: 3,
            committed: Some(true),
        };
        assert_eq!(
            o.to_ext_fields().into_iter().collect::<Vec<_>>(),
            [
                ("committed".to_owned(), "true".to_owned()),
                ("queueId".to_owned(), "3".to_owned()),
                ("topic".to_owned(), "T".to_owned())
            ]
        );
    }

    #[test]
    fn missing_and_invalid_fields_are_named() {
        let mut fields = v2().to_ext_fields();
        fields.remove("b");
        assert_eq!(
            SendMessageRequestHeaderV2::from_ext_fields(&fields),
            Err(HeaderError::Missing("b"))
        );
        let mut fields = v2().to_ext_fields();
        fields.insert("e".into(), "x1".into());
        assert_eq!(
            SendMessageRequestHeaderV2::from_ext_fields(&fields),
            Err(HeaderError::Invalid {
                field: "e",
                value: "x1".into()
            })
        );
    }
}
