//! SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320): SendMessageProcessor.
//! Broker-level checks in RocketMQ's order (reference §7.1), then the store; the answer is built
//! from the store's completion callback (reference §7.3).

use std::sync::Arc;

use remoting::{
    headers::{SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader},
    message::{
        decode_batch, decode_properties, encode_properties, property, PROPERTY_CLUSTER,
        PROPERTY_DELAY_TIME_LEVEL, PROPERTY_UNIQ_CLIENT_MESSAGE_ID, PROPERTY_WAIT_STORE_MSG_OK,
    },
    RemotingCommand, RequestCode, ResponseCode,
};

use crate::{
    broker::Broker,
    config::{BrokerRole, VersionProfile},
    dispatch::{answer, response, AnswerSource, RequestTask},
    namesrv::hook::TopicOrigin,
    processor::header::header_error,
    store::{PutMessage, PutMessageStatus, PutResult},
};

/// TopicValidator.TOPIC_MAX_LENGTH.
pub const TOPIC_MAX_LENGTH: usize = 127;

const MSG_REGION: &str = "MSG_REGION";
const TRACE_ON: &str = "TRACE_ON";
/// FAQUrl.suggestTodo(APPLY_TOPIC_URL).
pub const FAQ_SUFFIX: &str = "\nSee http://rocketmq.apache.org/docs/faq/ for further details.";

/// TopicValidator.validateTopic: `Err(remark)` when the topic is blank, has characters outside
/// `^[%|a-zA-Z0-9_-]+$`, or is longer than 127 characters.
pub fn validate_topic(topic: &str) -> Result<(), String> {
    if topic.trim().is_empty() {
        return Err("The specified topic is blank.".into());
    }
    let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '%' | '|' | '_' | '-');
    if !topic.chars().all(legal) {
        return Err(
            "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
                .into(),
        );
    }
    if topic.chars().count() > TOPIC_MAX_LENGTH {
        return Err("The specified topic is longer than topic max length.".into());
    }
    Ok(())
}

/// Java's `ThreadLocalRandom.nextInt(99999999) % n`: a per-thread generator, uniform in
/// `0..99_999_999`, then reduced modulo the queue count (so slightly biased, as in Java).
fn random_queue_id(n: i32) -> i32 {
    fastrand::i32(0..99_999_999) % n.max(1)
}

/// The `%5.2f` ratios of the code-14 remark: the CommitLog, consume-queue and index paths,
/// measured now (by the store, so a capped test disk shows here too).
fn disk_util(broker: &Broker) -> String {
    let r = broker.store.disk_ratios();
    format!(
        "CL: {:5.2} CQ: {:5.2} INDEX: {:5.2}",
        r.commit_log, r.consume_queue, r.index
    )
}

fn service_not_available_remark(broker: &Broker) -> String {
    if broker.config.profile == VersionProfile::V4_3 {
        // Up to 4.7.x.
        return format!(
            "service not available now, maybe disk full, {}, maybe your broker machine memory \
             too small.",
            disk_util(broker)
        );
    }
    format!(
        "service not available now. It may be caused by one of the following reasons: \
         the broker's disk is full [{}], messages are put to the slave, message store has been \
         shut down, etc.",
        disk_util(broker)
    )
}

/// The properties string as stored: the broker adds CLUSTER; 4.9.x also drops WAIT (it is
/// honoured, not stored).
fn stored_properties(broker: &Broker, original: &str) -> String {
    let strip_wait = broker.config.profile == VersionProfile::V4_9;
    let mut pairs: Vec<(String, String)> = decode_properties(original)
        .into_iter()
        .filter(|(k, _)| k != PROPERTY_CLUSTER && !(strip_wait && k == PROPERTY_WAIT_STORE_MSG_OK))
        .collect();
    pairs.push((
        PROPERTY_CLUSTER.to_owned(),
        broker.config.broker_cluster_name.clone(),
    ));
    encode_properties(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// `properties` with `key` set to `value` (replacing it if present).
fn with_property(properties: &str, key: &str, value: &str) -> String {
    let mut pairs: Vec<(String, String)> = decode_properties(properties)
        .into_iter()
        .filter(|(k, _)| k != key)
        .collect();
    pairs.push((key.to_owned(), value.to_owned()));
    encode_properties(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// A message's WAIT property: absent means true (Message.isWaitStoreMsgOK).
fn wait_store_ok(properties: &str) -> bool {
    property(properties, PROPERTY_WAIT_STORE_MSG_OK).is_none_or(|v| v.eq_ignore_ascii_case("true"))
}

fn finish(broker: &Broker, task: &RequestTask, r: RemotingCommand) {
    answer(
        broker.config.profile,
        &task.request,
        &task.responder,
        r,
        AnswerSource::Processor,
    );
}

pub fn process(broker: &Arc<Broker>, task: RequestTask) {
    let profile = broker.config.profile;
    let req = &task.request;
    if req.code == RequestCode::CONSUMER_SEND_MSG_BACK.as_i32() {
        let r = super::send_back::process(broker, &task);
        return finish(broker, &task, r);
    }
    let parsed = if req.code == RequestCode::SEND_MESSAGE.as_i32() {
        req.header::<SendMessageRequestHeader>()
    } else {
        req.header::<SendMessageRequestHeaderV2>().map(Into::into)
    };
    let h = match parsed {
        Ok(h) => h,
        Err(e) => return finish(broker, &task, header_error(broker, req, &e)),
    };
    let invalid = if profile.is_4x() {
        ResponseCode::SYSTEM_ERROR
    } else {
        ResponseCode::INVALID_PARAMETER
    };
    if let Err(remark) = validate_topic(&h.topic) {
        return finish(broker, &task, response(profile, req, invalid, Some(remark)));
    }
    // TopicValidator.isNotAllowedSendTopic (4.9, 5.3): the delay topic is written by the
    // broker only (send-path reference §7.1).
    if profile != VersionProfile::V4_3 && h.topic == crate::schedule::SCHEDULE_TOPIC {
        let remark = format!("Sending message to topic[{}] is forbidden.", h.topic);
        return finish(
            broker,
            &task,
            response(profile, req, ResponseCode::NO_PERMISSION, Some(remark)),
        );
    }
    // Without the TBW102 template (autoCreateTopicEnable=false) creation fails.
    let topic_config = match broker.topics.get(&h.topic).or_else(|| {
        let created =
            broker
                .topics
                .create_in_send(&h.topic, &h.default_topic, h.default_topic_queue_nums);
        if created.is_some() {
            // Before the answer, as TopicConfigManager does (4.x oneway, 5.x synchronous).
            broker.namesrv.topic_created(TopicOrigin::Send);
        }
        created
    }) {
        Some(c) => c,
        None => {
            let remark = format!(
                "topic[{}] not exist, apply first please!{FAQ_SUFFIX}",
                h.topic
            );
            return finish(
                broker,
                &task,
                response(profile, req, ResponseCode::TOPIC_NOT_EXIST, Some(remark)),
            );
        }
    };
    let id_valid = topic_config
        .read_queue_nums
        .max(topic_config.write_queue_nums);
    if h.queue_id >= id_valid {
        let remark = format!(
            "request queueId[{}] is illegal, {} Producer: {}",
            h.queue_id,
            topic_config,
            task.responder.peer()
        );
        return finish(broker, &task, response(profile, req, invalid, Some(remark)));
    }
    let queue_id = if h.queue_id < 0 {
        random_queue_id(topic_config.write_queue_nums)
    } else {
        h.queue_id
    };
    let is_batch = req.code == RequestCode::SEND_BATCH_MESSAGE.as_i32();
    let to_retry = h.topic.starts_with(super::send_back::RETRY_PREFIX);
    // A batch to a retry topic: 4.3.2 and 5.3.3 refuse it (sendBatchMessage, 4.3.2 l.514-517,
    // 5.3.3 l.573-576); 4.9.8's asyncSendBatchMessage has no such check and no
    // handleRetryAndDLQ either, so it stores the batch in the retry topic as sent.
    if is_batch && to_retry && profile != VersionProfile::V4_9 {
        let remark = format!("batch request does not support retry group {}", h.topic);
        return finish(
            broker,
            &task,
            response(profile, req, ResponseCode::MESSAGE_ILLEGAL, Some(remark)),
        );
    }
    let dlq = if is_batch {
        None
    } else {
        match super::send_back::retry_send_to_dlq(
            broker,
            req,
            &h.topic,
            h.reconsume_times,
            h.max_reconsume_times,
        ) {
            Ok(d) => d,
            Err(r) => return finish(broker, &task, r),
        }
    };
    // RocketMQ adds these before storing, so every store-level answer carries them.
    let mut region = std::collections::BTreeMap::new();
    region.insert(MSG_REGION.to_owned(), broker.config.region_id.clone());
    region.insert(TRACE_ON.to_owned(), broker.config.trace_on.to_string());
    if profile.is_4x() && broker.config.broker_role == BrokerRole::Slave {
        // 4.x: DefaultMessageStore refuses puts on a slave (5.x rejected it before queueing).
        let r = response(
            profile,
            req,
            ResponseCode::SERVICE_NOT_AVAILABLE,
            Some(service_not_available_remark(broker)),
        )
        .with_ext_fields(region);
        return finish(broker, &task, r);
    }
    let header_props = h.properties.clone().unwrap_or_default();
    let uniq_key = property(&header_props, PROPERTY_UNIQ_CLIENT_MESSAGE_ID).map(str::to_owned);
    let wait = wait_store_ok(&header_props);
    let base = PutMessage {
        topic: dlq.clone().unwrap_or_else(|| h.topic.clone()),
        queue_id: if dlq.is_some() { 0 } else { queue_id },
        flag: h.flag,
        body: req.body.clone(),
        properties: String::new(),
        sys_flag: h.sys_flag,
        born_timestamp: h.born_timestamp,
        born_host: task.responder.peer(),
        reconsume_times: h.reconsume_times.unwrap_or(0),
        wait_store_ok: wait,
    };
    let owner = broker.clone();
    let done_task_request = task.request.clone();
    let done_responder = task.responder.clone();
    // ≤ 4.6.1 the send thread waits for the store's result (through a sync flush, §4.3); later
    // releases hand completion to another thread and take the next task.
    let (sync_tx, sync_rx) = if profile == VersionProfile::V4_3 {
        let (t, r) = std::sync::mpsc::sync_channel::<()>(1);
        (Some(t), Some(r))
    } else {
        (None, None)
    };
    let done = Box::new(move |result: PutResult| {
        let r = handle_put_result(&owner, &done_task_request, result, queue_id, uniq_key)
            .with_ext_fields_merged(region);
        answer(
            owner.config.profile,
            &done_task_request,
            &done_responder,
            r,
            AnswerSource::Processor,
        );
        if let Some(t) = sync_tx {
            let _ = t.send(());
        }
    });
    if is_batch {
        let entries = match decode_batch(&req.body) {
            Ok(e) if !e.is_empty() => e,
            Ok(_) => {
                let r = response(
                    profile,
                    req,
                    ResponseCode::MESSAGE_ILLEGAL,
                    Some("the batch body is empty".into()),
                );
                return finish(broker, &task, r);
            }
            Err(e) => {
                let r = response(
                    profile,
                    req,
                    ResponseCode::SYSTEM_ERROR,
                    Some(format!("bad batch body: {e}")),
                );
                return finish(broker, &task, r);
            }
        };
        let msgs = entries
            .into_iter()
            .map(|e| PutMessage {
                flag: e.flag,
                body: e.body.into(),
                properties: stored_properties(broker, &e.properties),
                ..base.clone()
            })
            .collect();
        broker.store.put_messages(msgs, done);
    } else {
        let mut msg = PutMessage {
            properties: stored_properties(broker, &header_props),
            ..base
        };
        if dlq.is_some() && !profile.is_4x() {
            // 5.x marks it so it is never scheduled; 4.x keeps the client's DELAY, so the
            // message reaches the DLQ only after that level's delay (reference B3).
            msg.properties = with_property(&msg.properties, PROPERTY_DELAY_TIME_LEVEL, "-1");
        }
        // A producer's own DELAY takes the retry road (reference B4.2).
        if let Some(level) = crate::schedule::redirect_delayed(&mut msg, &broker.schedule.levels) {
            broker.schedule.stats.scheduled(level);
        }
        broker.store.put_message(msg, done);
    }
    if let Some(r) = sync_rx {
        // Err only if the store dropped the callback without calling it; nothing to wait for.
        let _ = r.recv();
    }
}

/// Adds ext fields to a response without dropping the ones it has.
trait MergeExt {
    fn with_ext_fields_merged(self, extra: std::collections::BTreeMap<String, String>) -> Self;
}

impl MergeExt for RemotingCommand {
    fn with_ext_fields_merged(mut self, extra: std::collections::BTreeMap<String, String>) -> Self {
        self.ext_fields.extend(extra);
        self
    }
}

/// SendMessageProcessor.handlePutMessageResult (reference §7.3).
fn handle_put_result(
    broker: &Broker,
    request: &RemotingCommand,
    result: PutResult,
    queue_id: i32,
    uniq_key: Option<String>,
) -> RemotingCommand {
    let profile = broker.config.profile;
    let (code, remark, filled) = match result.status {
        PutMessageStatus::PutOk => (ResponseCode::SUCCESS, None, true),
        PutMessageStatus::FlushDiskTimeout => (ResponseCode::FLUSH_DISK_TIMEOUT, None, true),
        // Stored on the master; the header is filled and the remark null (HA reference §3.5).
        PutMessageStatus::FlushSlaveTimeout => (ResponseCode::FLUSH_SLAVE_TIMEOUT, None, true),
        PutMessageStatus::SlaveNotAvailable => (ResponseCode::SLAVE_NOT_AVAILABLE, None, true),
        PutMessageStatus::CreateMappedFileFailed => (
            ResponseCode::SYSTEM_ERROR,
            Some("create mapped file failed, server is busy or broken.".to_owned()),
            false,
        ),
        PutMessageStatus::MessageIllegal | PutMessageStatus::PropertiesSizeExceeded => (
            ResponseCode::MESSAGE_ILLEGAL,
            Some(format!(
                "the message is illegal, maybe msg body or properties length not matched. \
                 msg body length limit {}B, msg properties length limit 32KB.",
                broker.config.store.max_message_size
            )),
            false,
        ),
        PutMessageStatus::ServiceNotAvailable => (
            ResponseCode::SERVICE_NOT_AVAILABLE,
            Some(service_not_available_remark(broker)),
            false,
        ),
        PutMessageStatus::OsPageCacheBusy => {
            broker.counters.pc_synchronized();
            // PR #8054: SYSTEM_ERROR up to 5.2.0, SYSTEM_BUSY from 5.3.0.
            let code = if profile.is_4x() {
                ResponseCode::SYSTEM_ERROR
            } else {
                ResponseCode::SYSTEM_BUSY
            };
            (
                code,
                Some("[PC_SYNCHRONIZED]broker busy, start flow control for a while".to_owned()),
                false,
            )
        }
        PutMessageStatus::UnknownError => (
            ResponseCode::SYSTEM_ERROR,
            Some("UNKNOWN_ERROR".to_owned()),
            false,
        ),
    };
    let r = response(profile, request, code, remark);
    match (filled, result.append) {
        (true, Some(a)) => r.with_header(&SendMessageResponseHeader {
            msg_id: a.msg_ids.join(","),
            queue_id,
            queue_offset: a.queue_offset,
            transaction_id: if profile.is_4x() { None } else { uniq_key },
            batch_uniq_id: None,
        }),
        _ => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_validation_matches_rocketmq_remarks() {
        assert!(validate_topic("Topic_a-1%|x").is_ok());
        assert_eq!(
            validate_topic("  ").unwrap_err(),
            "The specified topic is blank."
        );
        assert!(validate_topic("a b")
            .unwrap_err()
            .contains("illegal characters"));
        assert!(validate_topic(&"a".repeat(128))
            .unwrap_err()
            .contains("longer than topic max length"));
        assert!(validate_topic(&"a".repeat(127)).is_ok());
    }

    #[test]
    fn wait_defaults_to_true() {
        assert!(wait_store_ok(""));
        assert!(!wait_store_ok("WAIT\u{1}false\u{2}"));
        assert!(wait_store_ok("WAIT\u{1}true\u{2}"));
    }

    /// `[PC_SYNCHRONIZED]` needs a send thread that takes a task after the page cache turned
    /// busy, which admission and BrokerFastFailure make a narrow race on the wire; here the
    /// processor runs the task directly against a store whose put lock is held by a stalled put.
    #[test]
    fn pc_synchronized_code_follows_the_profile() {
        use std::time::{Duration, Instant};

        use remoting::RemotingCommand;
        use tokio_util::sync::CancellationToken;

        use crate::{
            config::BrokerConfig,
            dispatch::{ProcessorKind, Responder},
            store::MessageStore,
        };

        for (profile, code) in [("4.3", 1), ("4.9", 1), ("5.3", 2)] {
            let dir = tempfile::tempdir().unwrap();
            let config = BrokerConfig::for_test(
                dir.path(),
                &[
                    ("brokerVersionProfile", profile),
                    ("sendMessageThreadPoolNums", "2"),
                    ("osPageCacheBusyTimeOutMills", "1000"),
                    ("injectPutStallMillis", "2000"),
                    ("injectPutStallIntervalMillis", "600000"),
                ],
            )
            .unwrap();
            let host: std::net::SocketAddr = "127.0.0.1:10911".parse().unwrap();
            let store = MessageStore::open(config.store_config(host)).unwrap();
            let broker = Arc::new(Broker::new(config, store, host));
            let (tx, mut rx) = tokio::sync::mpsc::channel(16);
            let responder = Responder::new(
                tx,
                CancellationToken::new(),
                "127.0.0.1:5555".parse().unwrap(),
            );
            let task = |opaque: i32| {
                let h = SendMessageRequestHeaderV2 {
                    a: "pg".into(),
                    b: "PcSync".into(),
                    c: "TBW102".into(),
                    d: 4,
                    e: 0,
                    f: 0,
                    g: 0,
                    h: 0,
                    i: None,
                    j: None,
                    k: None,
                    l: None,
                    m: None,
                    n: None,
                };
                RequestTask {
                    request: RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, opaque)
                        .with_header(&h)
                        .with_body(&b"x"[..]),
                    responder: responder.clone(),
                    processor: ProcessorKind::Send,
                    created: Instant::now(),
                    created_epoch_ms: 0,
                }
            };
            let (b2, first) = (broker.clone(), task(1));
            let stalled = std::thread::spawn(move || process(&b2, first));
            // Busy from 1000 ms into the 2000 ms stall; poll rather than sleep a fixed time so
            // that a slow thread start on a loaded machine cannot move the window.
            let deadline = Instant::now() + Duration::from_secs(10);
            while !broker.store.is_os_page_cache_busy() {
                assert!(
                    Instant::now() < deadline,
                    "{profile}: page cache never busy"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            process(&broker, task(2));
            let decode = |f: bytes::Bytes| RemotingCommand::decode(f.slice(4..)).unwrap();
            let r = decode(rx.blocking_recv().unwrap());
            assert_eq!(r.opaque, 2, "{profile}");
            assert_eq!(r.code, code, "{profile}");
            assert_eq!(
                r.remark.as_deref(),
                Some("[PC_SYNCHRONIZED]broker busy, start flow control for a while")
            );
            assert_eq!(r.ext("MSG_REGION"), Some("DefaultRegion"));
            stalled.join().unwrap();
            let r = decode(rx.blocking_recv().unwrap());
            assert_eq!((r.opaque, r.code), (1, 0), "{profile}");
            let counters: std::collections::BTreeMap<_, _> =
                broker.counters.snapshot().into_iter().collect();
            assert_eq!(counters["flowControlPcSynchronized"], 1);
            assert_eq!(counters["flowControlTotal"], 1);
            broker.store.shutdown();
        }
    }

    #[test]
    fn random_queue_ids_stay_in_range() {
        for _ in 0..1000 {
            let q = random_queue_id(4);
            assert!((0..4).contains(&q));
        }
    }
}
