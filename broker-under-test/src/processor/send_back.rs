//! CONSUMER_SEND_MSG_BACK (36), SendMessageProcessor's `consumerSendMsgBack` (4.3, 4.9's async
//! form) / AbstractSendMessageProcessor's (5.3) — retention-retry reference B2. Checks in
//! RocketMQ's order, the first failure answers; then the record at the header's CommitLog
//! offset is stored again in `%RETRY%<group>` with its delay level (so through
//! SCHEDULE_TOPIC_XXXX) or, past the retry limit, in `%DLQ%<group>`.

use std::sync::atomic::Ordering;

use remoting::{
    headers::ConsumerSendMsgBackRequestHeader,
    message::{
        decode_properties, encode_properties, offset_msg_id, MessageRecord,
        PROPERTY_DELAY_TIME_LEVEL, PROPERTY_ORIGIN_MESSAGE_ID, PROPERTY_RETRY_TOPIC,
        PROPERTY_WAIT_STORE_MSG_OK,
    },
    RemotingCommand, ResponseCode,
};

use crate::{
    broker::{Broker, PERM_READ, PERM_WRITE},
    config::{BrokerRole, VersionProfile},
    dispatch::response,
    processor::{header::header_error, pull::faq},
    schedule::redirect_delayed,
    store::{PutMessage, PutMessageStatus},
    task::RequestTask,
};

/// MixAll.RETRY_GROUP_TOPIC_PREFIX and DLQ_GROUP_TOPIC_PREFIX.
pub const RETRY_PREFIX: &str = "%RETRY%";
pub const DLQ_PREFIX: &str = "%DLQ%";
/// MQVersion.Version.V3_4_9: from this request version on the header's `maxReconsumeTimes`
/// counts.
const V3_4_9: i32 = 121;

/// Where a sent-back message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// `%RETRY%<group>` at this delay level.
    Retry {
        level: i32,
    },
    DeadLetter,
}

/// Where a 4.3.2 broker unboxes the header's `maxReconsumeTimes` (`int max =
/// requestHeader.getMaxReconsumeTimes()`), the first stack frame of the NullPointerException
/// a request without the field raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitSite {
    /// CONSUMER_SEND_MSG_BACK (4.3.2 SendMessageProcessor l.178).
    SendBack,
    /// A plain send to `%RETRY%<group>` (4.3.2 SendMessageProcessor l.268).
    RetrySend,
}

impl LimitSite {
    fn frame(self) -> &'static str {
        match self {
            LimitSite::SendBack => "org.apache.rocketmq.broker.processor.SendMessageProcessor.consumerSendMsgBack(SendMessageProcessor.java:178)",
            LimitSite::RetrySend => "org.apache.rocketmq.broker.processor.SendMessageProcessor.handleRetryAndDLQ(SendMessageProcessor.java:268)",
        }
    }
}

/// The retry limit of a request: the header's `maxReconsumeTimes` from request version 121
/// (V3_4_9) on, else the group's `retryMaxTimes`. A request of version ≥ 121 without the field
/// takes the group's on 4.9 and 5.3 (4.9.8 l.184-189, 5.3.3 AbstractSendMessageProcessor
/// l.173-179), while 4.3.2 unboxes the null: Err is the remark of the answer the remoting layer
/// makes of the exception, code 1 with `exceptionSimpleDesc` (Java 8's NullPointerException
/// has no message; 4.3 runs on Java 8).
pub fn retry_limit(
    profile: VersionProfile,
    request_version: i32,
    header: Option<i32>,
    group_max: i32,
    site: LimitSite,
) -> Result<i32, String> {
    if request_version < V3_4_9 {
        return Ok(group_max);
    }
    match header {
        Some(m) => Ok(m),
        None if profile == VersionProfile::V4_3 => {
            Err(format!("java.lang.NullPointerException, {}", site.frame()))
        }
        None => Ok(group_max),
    }
}

/// B2.2 steps 8–10: the retry limit and the destination of a record consumed
/// `reconsume_times` times.
pub fn destination(reconsume_times: i32, delay_level: i32, max: i32) -> Destination {
    if reconsume_times >= max || delay_level < 0 {
        Destination::DeadLetter
    } else if delay_level == 0 {
        Destination::Retry {
            level: 3 + reconsume_times,
        }
    } else {
        Destination::Retry { level: delay_level }
    }
}

/// PutMessageStatus.name(), the remark of a failed send-back put, as the version spells it
/// (5.3.3 store/PutMessageStatus.java l.25, l.28 renamed two of 4.9.8's; 5.3.3
/// AbstractSendMessageProcessor l.286 puts the name in the remark).
pub fn status_name(profile: VersionProfile, s: PutMessageStatus) -> &'static str {
    let five = profile == VersionProfile::V5_3;
    match s {
        PutMessageStatus::CreateMappedFileFailed if five => "CREATE_MAPPED_FILE_FAILED",
        PutMessageStatus::OsPageCacheBusy if five => "OS_PAGE_CACHE_BUSY",
        PutMessageStatus::PutOk => "PUT_OK",
        PutMessageStatus::FlushDiskTimeout => "FLUSH_DISK_TIMEOUT",
        PutMessageStatus::FlushSlaveTimeout => "FLUSH_SLAVE_TIMEOUT",
        PutMessageStatus::SlaveNotAvailable => "SLAVE_NOT_AVAILABLE",
        PutMessageStatus::CreateMappedFileFailed => "CREATE_MAPEDFILE_FAILED",
        PutMessageStatus::MessageIllegal => "MESSAGE_ILLEGAL",
        PutMessageStatus::PropertiesSizeExceeded => "PROPERTIES_SIZE_EXCEEDED",
        PutMessageStatus::ServiceNotAvailable => "SERVICE_NOT_AVAILABLE",
        PutMessageStatus::OsPageCacheBusy => "OS_PAGECACHE_BUSY",
        PutMessageStatus::UnknownError => "UNKNOWN_ERROR",
    }
}

/// Runs one send-back on the send executor and returns its answer.
pub fn process(broker: &Broker, task: &RequestTask) -> RemotingCommand {
    let r = handle(broker, task);
    if r.code != ResponseCode::SUCCESS.as_i32() {
        broker
            .schedule
            .stats
            .send_back_failed
            .fetch_add(1, Ordering::Relaxed);
    }
    r
}

fn handle(broker: &Broker, task: &RequestTask) -> RemotingCommand {
    let profile = broker.config.profile;
    let req = &task.request;
    let fail = |code: ResponseCode, remark: String| response(profile, req, code, Some(remark));
    let h = match req.header::<ConsumerSendMsgBackRequestHeader>() {
        Ok(h) => h,
        Err(e) => return header_error(broker, req, &e),
    };
    if profile == VersionProfile::V5_3 && broker.config.broker_role == BrokerRole::Slave {
        return fail(
            ResponseCode::SYSTEM_ERROR,
            format!("no master available along with {}", broker.config.broker_ip),
        );
    }
    let Some(group) = broker.find_group(&h.group) else {
        return fail(
            ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group not exist, {} {}", h.group, faq(profile)),
        );
    };
    if group.retry_queue_nums <= 0 {
        // No retry for this group: the message is dropped, and that is a success.
        return response(profile, req, ResponseCode::SUCCESS, None);
    }
    let retry_topic = format!("{RETRY_PREFIX}{}", h.group);
    let retry_config = broker.topics.create_if_absent(
        &retry_topic,
        group.retry_queue_nums,
        PERM_READ | PERM_WRITE,
    );
    if retry_config.perm & PERM_WRITE == 0 {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!("the topic[{retry_topic}] sending message is forbidden"),
        );
    }
    let Some(record) = broker.store.look_message_by_offset(h.offset) else {
        return fail(
            ResponseCode::SYSTEM_ERROR,
            format!("look message by offset failed, {}", h.offset),
        );
    };
    let max = match retry_limit(
        profile,
        req.version,
        h.max_reconsume_times,
        group.retry_max_times,
        LimitSite::SendBack,
    ) {
        Ok(max) => max,
        Err(remark) => return fail(ResponseCode::SYSTEM_ERROR, remark),
    };
    let dest = destination(record.reconsume_times, h.delay_level, max);
    let (topic, queue_id, delay) = match dest {
        Destination::DeadLetter => {
            let dlq = format!("{DLQ_PREFIX}{}", h.group);
            // 4.9.2 made the DLQ readable; before, it was write-only.
            let perm = if profile == VersionProfile::V4_3 {
                PERM_WRITE
            } else {
                PERM_READ | PERM_WRITE
            };
            broker.topics.create_if_absent(&dlq, 1, perm);
            // 4.9.2+ and 5.x write DELAY=0 so a DLQ message is never scheduled.
            let delay = (profile != VersionProfile::V4_3).then_some(0);
            (dlq, 0, delay)
        }
        Destination::Retry { level } => {
            let queue_id = fastrand::i32(0..99_999_999) % group.retry_queue_nums;
            (retry_topic, queue_id, Some(level))
        }
    };
    let mut msg = PutMessage {
        topic,
        queue_id,
        flag: record.flag,
        body: record.body.clone().into(),
        properties: properties(&record, delay),
        sys_flag: record.sys_flag,
        born_timestamp: record.born_timestamp,
        born_host: record.born_host,
        reconsume_times: record.reconsume_times + 1,
        wait_store_ok: false,
    };
    let scheduled = redirect_delayed(&mut msg, &broker.schedule.levels);
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    broker.store.put_message(
        msg,
        Box::new(move |r| {
            let _ = tx.send(r.status);
        }),
    );
    let status = rx.recv().unwrap_or(PutMessageStatus::UnknownError);
    if status != PutMessageStatus::PutOk {
        return fail(
            ResponseCode::SYSTEM_ERROR,
            status_name(profile, status).to_owned(),
        );
    }
    let stats = &broker.schedule.stats;
    stats.send_back_puts.fetch_add(1, Ordering::Relaxed);
    if dest == Destination::DeadLetter {
        stats.send_back_dlq.fetch_add(1, Ordering::Relaxed);
    }
    if let Some(level) = scheduled {
        stats.scheduled(level);
    }
    response(profile, req, ResponseCode::SUCCESS, None)
}

/// SendMessageProcessor.handleRetryAndDLQ (reference B3): a plain send to `%RETRY%<group>` (the
/// Java client's fallback after a failed send-back, and an orderly consumer's message at its
/// retry limit) goes to `%DLQ%<group>` once its header `reconsumeTimes` reaches the limit (4.x:
/// ≥, 4.3.2 l.251-293, 4.9.8 l.344-387; 5.x: >, 5.3.3 l.180-240), and on 5.3 also whenever the
/// group holds an unexpired queue lock (5.3.3 l.201-209, since 5.1.1): a 4.x orderly client
/// sends its count unraised, which `>` alone would send back to `%RETRY%` forever. Returns the
/// DLQ topic when it goes there; Err is the answer for an unknown group. The caller keeps the
/// client's DELAY on 4.x (handleRetryAndDLQ's DELAY=0 is overwritten by the request's
/// properties, so the DLQ-bound record waits in SCHEDULE_TOPIC_XXXX) and writes DELAY=-1 on 5.x.
pub fn retry_send_to_dlq(
    broker: &Broker,
    req: &RemotingCommand,
    topic: &str,
    reconsume_times: Option<i32>,
    max_reconsume_times: Option<i32>,
) -> Result<Option<String>, RemotingCommand> {
    let Some(group_name) = topic.strip_prefix(RETRY_PREFIX) else {
        return Ok(None);
    };
    let profile = broker.config.profile;
    let Some(group) = broker.find_group(group_name) else {
        return Err(response(
            profile,
            req,
            ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
            Some(format!(
                "subscription group not exist, {group_name} {}",
                faq(profile)
            )),
        ));
    };
    let max = retry_limit(
        profile,
        req.version,
        max_reconsume_times,
        group.retry_max_times,
        LimitSite::RetrySend,
    )
    .map_err(|remark| response(profile, req, ResponseCode::SYSTEM_ERROR, Some(remark)))?;
    let times = reconsume_times.unwrap_or(0);
    let dead = if profile.is_4x() {
        times >= max
    } else {
        times > max || !broker.locks.is_lock_all_expired(group_name)
    };
    if !dead {
        return Ok(None);
    }
    let dlq = format!("{DLQ_PREFIX}{group_name}");
    let perm = if profile == VersionProfile::V4_3 {
        PERM_WRITE
    } else {
        PERM_READ | PERM_WRITE
    };
    broker.topics.create_if_absent(&dlq, 1, perm);
    Ok(Some(dlq))
}

/// The record's properties with what the send-back sets: RETRY_TOPIC (if absent, the record's
/// topic), WAIT=false, DELAY, ORIGIN_MESSAGE_ID (if absent, the record's offset message id).
fn properties(record: &MessageRecord, delay: Option<i32>) -> String {
    let mut pairs = decode_properties(&record.properties);
    let has = |pairs: &[(String, String)], k: &str| pairs.iter().any(|(n, _)| n == k);
    if !has(&pairs, PROPERTY_RETRY_TOPIC) {
        pairs.push((PROPERTY_RETRY_TOPIC.into(), record.topic.clone()));
    }
    let mut set = |k: &str, v: String| {
        pairs.retain(|(n, _)| n != k);
        pairs.push((k.to_owned(), v));
    };
    set(PROPERTY_WAIT_STORE_MSG_OK, "false".into());
    if let Some(level) = delay {
        set(PROPERTY_DELAY_TIME_LEVEL, level.to_string());
    }
    if !has(&pairs, PROPERTY_ORIGIN_MESSAGE_ID) {
        pairs.push((
            PROPERTY_ORIGIN_MESSAGE_ID.into(),
            offset_msg_id(record.store_host, record.physical_offset),
        ));
    }
    encode_properties(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Audit #11: 5.3.3 renamed two PutMessageStatus constants (CREATE_MAPPED_FILE_FAILED,
    /// OS_PAGE_CACHE_BUSY), and a failed send-back's remark is the name.
    #[test]
    fn the_remark_names_the_status_as_the_version_spells_it() {
        use PutMessageStatus as S;
        use VersionProfile as V;
        for v in [V::V4_3, V::V4_9] {
            assert_eq!(status_name(v, S::OsPageCacheBusy), "OS_PAGECACHE_BUSY");
            assert_eq!(
                status_name(v, S::CreateMappedFileFailed),
                "CREATE_MAPEDFILE_FAILED"
            );
        }
        assert_eq!(
            status_name(V::V5_3, S::OsPageCacheBusy),
            "OS_PAGE_CACHE_BUSY"
        );
        assert_eq!(
            status_name(V::V5_3, S::CreateMappedFileFailed),
            "CREATE_MAPPED_FILE_FAILED"
        );
        assert_eq!(
            status_name(V::V5_3, S::ServiceNotAvailable),
            "SERVICE_NOT_AVAILABLE"
        );
    }

    /// Audit #22 (fidelity-after-wave-3): a request of version ≥ 121 without
    /// `maxReconsumeTimes` takes the group's limit on 4.9 and 5.3 and is a NullPointerException
    /// (code 1) on 4.3; before 121 the header is not read.
    #[test]
    fn a_missing_limit_is_the_group_s_except_on_4_3() {
        use VersionProfile as V;
        for v in [V::V4_9, V::V5_3] {
            assert_eq!(retry_limit(v, 121, None, 16, LimitSite::SendBack), Ok(16));
        }
        assert_eq!(
            retry_limit(V::V4_3, 121, Some(3), 16, LimitSite::SendBack),
            Ok(3)
        );
        assert_eq!(
            retry_limit(V::V4_3, 120, None, 16, LimitSite::SendBack),
            Ok(16)
        );
        assert_eq!(
            retry_limit(V::V4_3, 120, Some(3), 16, LimitSite::SendBack),
            Ok(16)
        );
        assert_eq!(
            retry_limit(V::V4_3, 121, None, 16, LimitSite::SendBack),
            Err("java.lang.NullPointerException, org.apache.rocketmq.broker.processor.SendMessageProcessor.consumerSendMsgBack(SendMessageProcessor.java:178)".into())
        );
        assert!(retry_limit(V::V4_3, 400, None, 16, LimitSite::RetrySend)
            .unwrap_err()
            .ends_with("handleRetryAndDLQ(SendMessageProcessor.java:268)"));
    }

    #[test]
    fn the_level_follows_reconsume_times_and_the_limit_sends_to_the_dlq() {
        assert_eq!(destination(0, 0, 16), Destination::Retry { level: 3 });
        assert_eq!(destination(15, 0, 16), Destination::Retry { level: 18 });
        assert_eq!(destination(16, 0, 16), Destination::DeadLetter);
        assert_eq!(destination(2, 5, 16), Destination::Retry { level: 5 });
        assert_eq!(destination(0, -1, 16), Destination::DeadLetter);
        assert_eq!(destination(0, 0, 0), Destination::DeadLetter);
    }

    #[test]
    fn properties_keep_the_first_hop_s_origin() {
        let record = MessageRecord {
            queue_id: 0,
            flag: 0,
            queue_offset: 0,
            physical_offset: 4096,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: "127.0.0.1:1".parse().unwrap(),
            store_timestamp: 0,
            store_host: "127.0.0.1:10911".parse().unwrap(),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: vec![],
            topic: "T".into(),
            properties: encode_properties([("UNIQ_KEY", "K"), ("WAIT", "true")]),
        };
        let p = properties(&record, Some(3));
        let get = |k| remoting::message::property(&p, k).map(str::to_owned);
        assert_eq!(get("RETRY_TOPIC").as_deref(), Some("T"));
        assert_eq!(get("WAIT").as_deref(), Some("false"));
        assert_eq!(get("DELAY").as_deref(), Some("3"));
        let origin = offset_msg_id(record.store_host, 4096);
        assert_eq!(get("ORIGIN_MESSAGE_ID"), Some(origin.clone()));
        let second = MessageRecord {
            topic: "%RETRY%G".into(),
            physical_offset: 9999,
            properties: p.clone(),
            ..record
        };
        let p2 = properties(&second, Some(4));
        assert_eq!(remoting::message::property(&p2, "RETRY_TOPIC"), Some("T"));
        assert_eq!(
            remoting::message::property(&p2, "ORIGIN_MESSAGE_ID"),
            Some(origin.as_str())
        );
        assert_eq!(remoting::message::property(&p2, "DELAY"), Some("4"));
    }
}
