//! Request and response codes (reference §2) and the client language byte (§1.2).

macro_rules! code_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $value:expr),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(i32)]
        pub enum $name { $($variant = $value),+ }

        impl $name {
            /// Every known code, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The code for a wire value, or `None` when this enum does not know it.
            pub fn from_i32(value: i32) -> Option<Self> {
                match value { $($value => Some($name::$variant),)+ _ => None }
            }

            /// The value on the wire.
            pub fn as_i32(self) -> i32 { self as i32 }

            /// RocketMQ's constant name, e.g. `SYSTEM_BUSY`.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => stringify!($variant),)+ }
            }
        }

        impl From<$name> for i32 {
            fn from(code: $name) -> i32 { code as i32 }
        }
    };
}

code_enum! {
    /// Request codes the broker under test and the harness use (reference §2.1).
    #[allow(non_camel_case_types)]
    RequestCode {
        SEND_MESSAGE = 10,
        PULL_MESSAGE = 11,
        QUERY_MESSAGE = 12,
        QUERY_CONSUMER_OFFSET = 14,
        UPDATE_CONSUMER_OFFSET = 15,
        UPDATE_AND_CREATE_TOPIC = 17,
        UPDATE_AND_CREATE_TOPIC_LIST = 18,
        GET_ALL_TOPIC_CONFIG = 21,
        GET_BROKER_CONFIG = 26,
        GET_BROKER_RUNTIME_INFO = 28,
        GET_MAX_OFFSET = 30,
        GET_MIN_OFFSET = 31,
        HEART_BEAT = 34,
        UNREGISTER_CLIENT = 35,
        CONSUMER_SEND_MSG_BACK = 36,
        END_TRANSACTION = 37,
        GET_CONSUMER_LIST_BY_GROUP = 38,
        CHECK_TRANSACTION_STATE = 39,
        NOTIFY_CONSUMER_IDS_CHANGED = 40,
        LOCK_BATCH_MQ = 41,
        UNLOCK_BATCH_MQ = 42,
        GET_ALL_CONSUMER_OFFSET = 43,
        GET_ALL_DELAY_OFFSET = 45,
        REGISTER_BROKER = 103,
        GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201,
        UNREGISTER_BROKER = 104,
        GET_ROUTEINFO_BY_TOPIC = 105,
        GET_BROKER_CLUSTER_INFO = 106,
        GET_CONSUMER_RUNNING_INFO = 307,
        SEND_MESSAGE_V2 = 310,
        SEND_BATCH_MESSAGE = 320,
        SEND_REPLY_MESSAGE = 324,
        SEND_REPLY_MESSAGE_V2 = 325,
        LITE_PULL_MESSAGE = 361,
        GET_BROKER_HA_STATUS = 907,
    }
}

code_enum! {
    /// Response codes (reference §2.2).
    #[allow(non_camel_case_types)]
    ResponseCode {
        SUCCESS = 0,
        SYSTEM_ERROR = 1,
        SYSTEM_BUSY = 2,
        REQUEST_CODE_NOT_SUPPORTED = 3,
        TRANSACTION_FAILED = 4,
        FLUSH_DISK_TIMEOUT = 10,
        SLAVE_NOT_AVAILABLE = 11,
        FLUSH_SLAVE_TIMEOUT = 12,
        MESSAGE_ILLEGAL = 13,
        SERVICE_NOT_AVAILABLE = 14,
        VERSION_NOT_SUPPORTED = 15,
        NO_PERMISSION = 16,
        TOPIC_NOT_EXIST = 17,
        TOPIC_EXIST_ALREADY = 18,
        PULL_NOT_FOUND = 19,
        PULL_RETRY_IMMEDIATELY = 20,
        PULL_OFFSET_MOVED = 21,
        QUERY_NOT_FOUND = 22,
        SUBSCRIPTION_PARSE_FAILED = 23,
        SUBSCRIPTION_NOT_EXIST = 24,
        SUBSCRIPTION_NOT_LATEST = 25,
        SUBSCRIPTION_GROUP_NOT_EXIST = 26,
        FILTER_DATA_NOT_EXIST = 27,
        FILTER_DATA_NOT_LATEST = 28,
        INVALID_PARAMETER = 29,
        NO_BUYER_ID = 204,
        NOT_IN_CURRENT_UNIT = 205,
        NO_MESSAGE = 208,
        FLOW_CONTROL = 215,
        GO_AWAY = 1500,
    }
}

/// The sender's language (reference §1.2). Unknown bytes are kept as they are, so a frame
/// re-encodes to the same bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LanguageCode(pub u8);

const LANGUAGE_NAMES: &[&str] = &[
    "JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP",
    "OMS", "RUST", "NODE_JS",
];

impl LanguageCode {
    pub const JAVA: LanguageCode = LanguageCode(0);
    pub const OTHER: LanguageCode = LanguageCode(7);
    pub const RUST: LanguageCode = LanguageCode(12);

    /// The name fastjson writes in JSON headers; `None` for a byte no release defines.
    pub fn name(self) -> Option<&'static str> {
        LANGUAGE_NAMES.get(self.0 as usize).copied()
    }

    pub fn from_name(name: &str) -> Option<Self> {
        LANGUAGE_NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| LanguageCode(i as u8))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_rocketmq_values() {
        assert_eq!(RequestCode::SEND_MESSAGE_V2.as_i32(), 310);
        assert_eq!(
            RequestCode::from_i32(320),
            Some(RequestCode::SEND_BATCH_MESSAGE)
        );
        assert_eq!(RequestCode::from_i32(9999), None);
        assert_eq!(RequestCode::LOCK_BATCH_MQ.as_i32(), 41);
        assert_eq!(RequestCode::UNLOCK_BATCH_MQ.as_i32(), 42);
        assert_eq!(RequestCode::GET_MAX_OFFSET.as_i32(), 30);
        assert_eq!(ResponseCode::SUBSCRIPTION_NOT_EXIST.as_i32(), 24);
        assert_eq!(ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST.as_i32(), 26);
        assert_eq!(ResponseCode::SYSTEM_BUSY.as_i32(), 2);
        assert_eq!(
            ResponseCode::from_i32(13).unwrap().name(),
            "MESSAGE_ILLEGAL"
        );
        for code in ResponseCode::ALL {
            assert_eq!(ResponseCode::from_i32(code.as_i32()), Some(*code));
        }
    }

    #[test]
    fn language_names_round_trip() {
        assert_eq!(LanguageCode::JAVA.name(), Some("JAVA"));
        assert_eq!(LanguageCode::from_name("RUST"), Some(LanguageCode::RUST));
        assert_eq!(LanguageCode(200).name(), None);
    }
}
