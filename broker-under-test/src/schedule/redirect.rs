//! The put-time rewrite of a delayed message (reference B4.2): 5.x's
//! `HookUtils.handleScheduleMessage` before the store; 4.x does the same inside
//! `CommitLog.putMessage`. Called on every send and send-back right before the store's put.

use remoting::message::{
    decode_properties, encode_properties, property, PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC, SYSFLAG_TRANSACTION_MASK,
};

use super::levels::{DelayLevels, SCHEDULE_TOPIC};
use crate::store::PutMessage;

/// MessageSysFlag.TRANSACTION_COMMIT_TYPE (NOT_TYPE is 0).
const TRANSACTION_COMMIT: i32 = 0x8;

/// The `DELAY` property as `getDelayTimeLevel` reads it: absent or not a number is 0.
pub fn delay_level(properties: &str) -> i32 {
    property(properties, PROPERTY_DELAY_TIME_LEVEL)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Rewrites `msg` to `SCHEDULE_TOPIC_XXXX` if it carries `DELAY` > 0 and is an ordinary or
/// committed message: the level is clamped to `maxDelayLevel` (and written back), `REAL_TOPIC`
/// and `REAL_QID` keep the target, the queue becomes level − 1. Returns the level used.
pub fn redirect_delayed(msg: &mut PutMessage, levels: &DelayLevels) -> Option<i32> {
    let tran = msg.sys_flag & SYSFLAG_TRANSACTION_MASK;
    if tran != 0 && tran != TRANSACTION_COMMIT {
        return None;
    }
    let asked = delay_level(&msg.properties);
    if asked <= 0 {
        return None;
    }
    let level = asked.min(levels.max_level());
    let mut pairs: Vec<(String, String)> = decode_properties(&msg.properties)
        .into_iter()
        .filter(|(k, _)| {
            k != PROPERTY_DELAY_TIME_LEVEL
                && k != PROPERTY_REAL_TOPIC
                && k != PROPERTY_REAL_QUEUE_ID
        })
        .collect();
    pairs.push((PROPERTY_DELAY_TIME_LEVEL.into(), level.to_string()));
    pairs.push((PROPERTY_REAL_TOPIC.into(), msg.topic.clone()));
    pairs.push((PROPERTY_REAL_QUEUE_ID.into(), msg.queue_id.to_string()));
    msg.properties = encode_properties(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    msg.topic = SCHEDULE_TOPIC.to_owned();
    msg.queue_id = level - 1;
    Some(level)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(props: &str, sys_flag: i32) -> PutMessage {
        PutMessage {
            topic: "T".into(),
            queue_id: 3,
            flag: 0,
            body: bytes::Bytes::from_static(b"x"),
            properties: props.into(),
            sys_flag,
            born_timestamp: 0,
            born_host: "127.0.0.1:1".parse().unwrap(),
            reconsume_times: 0,
            wait_store_ok: true,
        }
    }

    #[test]
    fn a_delayed_message_goes_to_its_level_s_queue_and_keeps_its_target() {
        let levels = DelayLevels::default();
        let mut m = msg(&encode_properties([("DELAY", "3"), ("UNIQ_KEY", "K")]), 0);
        assert_eq!(redirect_delayed(&mut m, &levels), Some(3));
        assert_eq!((m.topic.as_str(), m.queue_id), (SCHEDULE_TOPIC, 2));
        assert_eq!(property(&m.properties, "REAL_TOPIC"), Some("T"));
        assert_eq!(property(&m.properties, "REAL_QID"), Some("3"));
        assert_eq!(property(&m.properties, "UNIQ_KEY"), Some("K"));

        let mut high = msg(&encode_properties([("DELAY", "40")]), 0);
        assert_eq!(redirect_delayed(&mut high, &levels), Some(18), "clamped");
        assert_eq!(property(&high.properties, "DELAY"), Some("18"));
        assert_eq!(high.queue_id, 17);
    }

    #[test]
    fn no_delay_or_a_prepared_message_is_left_alone() {
        let levels = DelayLevels::default();
        for (props, sys) in [
            (String::new(), 0),
            (encode_properties([("DELAY", "0")]), 0),
            (encode_properties([("DELAY", "-1")]), 0),
            (encode_properties([("DELAY", "x")]), 0),
            (encode_properties([("DELAY", "2")]), 0x4),
        ] {
            let mut m = msg(&props, sys);
            assert_eq!(redirect_delayed(&mut m, &levels), None, "{props:?}");
            assert_eq!(m.topic, "T");
        }
        let mut committed = msg(&encode_properties([("DELAY", "2")]), 0x8);
        assert_eq!(redirect_delayed(&mut committed, &levels), Some(2));
    }
}
