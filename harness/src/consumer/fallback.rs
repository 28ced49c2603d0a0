//! The Java client's fallback after a failed send-back (audit #4, fidelity-after-wave-3): when
//! CONSUMER_SEND_MSG_BACK fails (an error code, a timeout, no master in the route), the client
//! publishes the message itself to `%RETRY%<group>` with its inner producer, and only if that
//! fails too is the message consumed again locally (4.9.8 DefaultMQPushConsumerImpl
//! .sendMessageBack l.529-545, 4.3.2 l.504-519, 5.3.3 sendMessageBackAsNormalMessage
//! l.787-802).
//!
//! The message: topic `%RETRY%<group>`, `RETRY_TOPIC` = the topic the listener saw,
//! `DELAY` = 3 + reconsumeTimes, `RECONSUME_TIME` = reconsumeTimes + 1 and
//! `MAX_RECONSUME_TIMES`, which the producer moves into the request header before sending
//! (4.9.8 DefaultMQProducerImpl.sendKernelImpl l.779-790); the broker's handleRetryAndDLQ
//! dead-letters it on that header count. The send: `CLIENT_INNER_PRODUCER`'s defaults, sync,
//! 3000 ms for every attempt together, `retryTimesWhenSendFailed` 2 (three attempts), the next
//! attempt avoiding the last broker, on transport errors and the retried codes only
//! (`sendDefaultImpl` l.558-625); 10 / 11 / 12 are send results, so the publish succeeded.
//!
//! What differs: the body is `body_len` zero bytes and the properties are the ones the harness
//! reads (UNIQ_KEY, WAIT, the retry ones); the process queue keeps neither the body nor the
//! other properties, and nothing the harness measures reads them. ORIGIN_MESSAGE_ID is the
//! UNIQ_KEY (Java keeps the first hop's). The inner producer's queues are the retry queue
//! (`retryQueueNums` 1) of every broker of the topic's route that has a master
//! (`topicRouteData2TopicPublishInfo` skips a name without one), as `Route::sub_queues` assumes,
//! starting at a random one (`sendWhichQueue` is a ThreadLocalIndex with a random start).
//!
//! The same inner producer carries an orderly consumer's message at its retry limit (audit #7):
//! ConsumeMessageOrderlyService.sendMessageBack (4.9.8 l.377-398, 4.3.2 l.361-381, 5.3.3
//! l.379-400) publishes it to `%RETRY%<group>` with `DELAY` = 3 + reconsumeTimes and
//! `RECONSUME_TIME` = reconsumeTimes (r + 1 from 5.1.1, commit 7cfffe7f48), for the broker's
//! handleRetryAndDLQ to dead-letter ([`Republish::OrderlyAtLimit`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use remoting::headers::SendMessageRequestHeaderV2;
use remoting::message::{
    encode_properties, PROPERTY_DELAY_TIME_LEVEL, PROPERTY_ORIGIN_MESSAGE_ID, PROPERTY_RETRY_TOPIC,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID, PROPERTY_WAIT_STORE_MSG_OK,
};
use remoting::{RemotingCommand, RequestCode};
use rmq_client::retry_codes;

use crate::consumer::failure::DlqRule;
use crate::consumer::link::Link;
use crate::consumer::process_queue::Msg;
use crate::consumer::route::{retry_topic, MASTER_ID};
use crate::consumer::state::Instance;
use harness_model::profile::ClientVersion;

/// `MixAll.CLIENT_INNER_PRODUCER_GROUP`.
pub const INNER_PRODUCER_GROUP: &str = "CLIENT_INNER_PRODUCER";
/// `DefaultMQProducer.sendMsgTimeout`: for every attempt of one send together.
const SEND_TIMEOUT: Duration = Duration::from_millis(3000);
/// `retryTimesWhenSendFailed` (2) + 1.
const ATTEMPTS: usize = 3;
/// Send results that are not SEND_OK: FLUSH_DISK_TIMEOUT, SLAVE_NOT_AVAILABLE,
/// FLUSH_SLAVE_TIMEOUT (`MQClientAPIImpl.processSendResponse`).
const NOT_STORE_OK: [i32; 3] = [10, 11, 12];

/// Which of the Java client's two publishes to `%RETRY%<group>` a message takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Republish {
    /// After a failed send-back (DefaultMQPushConsumerImpl.sendMessageBack): the header's
    /// reconsumeTimes is the message's + 1 in every version.
    AfterSendBack,
    /// An orderly message at its retry limit (ConsumeMessageOrderlyService.sendMessageBack):
    /// the message's own count from a 4.x client, + 1 from a 5.1.1+ one.
    OrderlyAtLimit,
}

impl Republish {
    /// The `RECONSUME_TIME` the message carries, which the producer moves into the header.
    pub fn reconsume_times(self, m: &Msg, client: ClientVersion) -> i32 {
        match (self, client) {
            (Republish::OrderlyAtLimit, ClientVersion::V43 | ClientVersion::V49) => {
                m.reconsume_times
            }
            _ => m.reconsume_times + 1,
        }
    }
}

/// The SEND_MESSAGE_V2 for `m`, to `queue_id` of `%RETRY%<group>`, header reconsumeTimes
/// `reconsume_times`.
pub fn request(
    group: &str,
    m: &Msg,
    reconsume_times: i32,
    max_reconsume: i32,
    queue_id: i32,
) -> RemotingCommand {
    let delay = (3 + m.reconsume_times).to_string();
    let mut props: Vec<(&str, &str)> = vec![
        (PROPERTY_WAIT_STORE_MSG_OK, "true"),
        (PROPERTY_RETRY_TOPIC, &m.topic),
        (PROPERTY_DELAY_TIME_LEVEL, &delay),
    ];
    if let Some(k) = m.uniq_key.as_deref() {
        props.push((PROPERTY_UNIQ_CLIENT_MESSAGE_ID, k));
        props.push((PROPERTY_ORIGIN_MESSAGE_ID, k));
    }
    let born = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let header = SendMessageRequestHeaderV2 {
        a: INNER_PRODUCER_GROUP.into(),
        b: retry_topic(group),
        c: "TBW102".into(),
        d: 4,
        e: queue_id,
        f: 0,
        g: born,
        h: 0,
        i: Some(encode_properties(props)),
        j: Some(reconsume_times),
        k: Some(false),
        l: Some(max_reconsume),
        m: Some(false),
        n: None,
    };
    RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, 0)
        .with_header(&header)
        .with_body(vec![0; m.body_len as usize])
}

/// How a fallback publish ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// Stored in `%RETRY%<group>` (through the schedule topic): it comes back at its level.
    Retry,
    /// The broker's handleRetryAndDLQ sent it to `%DLQ%<group>`.
    DeadLettered,
}

/// The inner producer's send of `m` to `%RETRY%<group>`; Err says why every attempt failed.
pub async fn publish(inst: &Instance, m: &Msg, what: Republish) -> Result<Published, String> {
    let cfg = &inst.shared.cfg;
    let times = what.reconsume_times(m, cfg.client_version);
    let mut masters: Vec<(Arc<str>, std::net::SocketAddr)> = inst
        .shared
        .route
        .brokers()
        .into_iter()
        .filter_map(|b| b.addrs.get(&MASTER_ID).map(|a| (b.name.clone(), *a)))
        .collect();
    if masters.is_empty() {
        return Err(format!(
            "No route info of this topic: {}",
            retry_topic(&cfg.group)
        ));
    }
    masters.sort();
    let with_53 = cfg.client_version == ClientVersion::V53;
    let start = Instant::now();
    let mut next = fastrand::usize(..masters.len());
    let mut last: Option<Arc<str>> = None;
    let mut why = String::new();
    for _ in 0..ATTEMPTS {
        // selectOneMessageQueue(info, lastBrokerName): the next queue of another broker than
        // the last one's, else simply the next.
        let pick = (0..masters.len())
            .map(|i| (next + i) % masters.len())
            .find(|&i| last.as_deref() != Some(&*masters[i].0))
            .unwrap_or(next % masters.len());
        next = pick + 1;
        let (name, addr) = &masters[pick];
        last = Some(name.clone());
        let Some(left) = SEND_TIMEOUT.checked_sub(start.elapsed()) else {
            return Err(format!("sendDefaultImpl call timeout: {why}"));
        };
        let link = inst.links.to(name, MASTER_ID, *addr);
        let cmd = request(&cfg.group, m, times, cfg.max_reconsume(), 0);
        match link.call(cmd, left).await {
            Ok(r) if r.code == 0 || NOT_STORE_OK.contains(&r.code) => {
                let rule = dlq_rule(inst, &link).await;
                // 5.1.1+ brokers also dead-letter while the group holds an unexpired queue lock
                // (5.3.3 handleRetryAndDLQ l.201-209). An orderly consumer consumes only under
                // its queue's lock, and the job's orderly instances lock every queue of the
                // topic, so the lock is taken as held on whichever broker the send reached.
                let locked = what == Republish::OrderlyAtLimit && rule == DlqRule::PastLimit;
                return Ok(if locked || rule.dead(times, cfg.max_reconsume()) {
                    Published::DeadLettered
                } else {
                    Published::Retry
                });
            }
            Ok(r) if retry_codes::retried(r.code, with_53) => {
                why = format!("CODE: {} DESC: {}", r.code, r.remark.unwrap_or_default());
            }
            Ok(r) => {
                return Err(format!(
                    "CODE: {} DESC: {}",
                    r.code,
                    r.remark.unwrap_or_default()
                ))
            }
            Err(e) => why = e.to_string(),
        }
    }
    Err(why)
}

/// The broker's dead-letter rule for a send to `%RETRY%`: asked once per run with
/// GET_BROKER_RUNTIME_INFO (`brokerVersionDesc`), else taken from the client's version.
async fn dlq_rule(inst: &Instance, link: &Link) -> DlqRule {
    let f = &inst.shared.failures;
    if let Some(r) = f.retry_dlq_rule.get() {
        return *r;
    }
    let cmd = RemotingCommand::request(RequestCode::GET_BROKER_RUNTIME_INFO, 0);
    let asked = link
        .call(cmd, Duration::from_secs(3))
        .await
        .ok()
        .filter(|r| r.code == 0)
        .and_then(|r| serde_json::from_slice::<serde_json::Value>(&r.body).ok())
        .and_then(|v| serde_json::from_value::<BTreeMap<String, String>>(v["table"].clone()).ok())
        .and_then(|t| {
            t.get("brokerVersionDesc")
                .map(|d| DlqRule::of_version_desc(d))
        });
    let rule = asked.unwrap_or(match inst.shared.cfg.client_version {
        ClientVersion::V53 => DlqRule::PastLimit,
        _ => DlqRule::AtLimit,
    });
    *f.retry_dlq_rule.get_or_init(|| rule)
}

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::headers::SendMessageRequestHeader;
    use remoting::message::decode_properties;

    #[test]
    fn the_fallback_message_is_the_java_clients() {
        let m = Msg {
            reconsume_times: 2,
            body_len: 5,
            uniq_key: Some("7F00000100002A9F0000000000000007".into()),
            topic: "BenchmarkTopic".into(),
            ..Msg::default()
        };
        let cmd = request("g", &m, 3, 16, 0);
        assert_eq!(cmd.code, RequestCode::SEND_MESSAGE_V2 as i32);
        let h: SendMessageRequestHeader =
            cmd.header::<SendMessageRequestHeaderV2>().unwrap().into();
        assert_eq!(h.topic, "%RETRY%g");
        assert_eq!(h.producer_group, "CLIENT_INNER_PRODUCER");
        // RECONSUME_TIME and MAX_RECONSUME_TIMES travel in the header.
        assert_eq!(
            (h.reconsume_times, h.max_reconsume_times),
            (Some(3), Some(16))
        );
        let props: BTreeMap<String, String> = decode_properties(h.properties.as_deref().unwrap())
            .into_iter()
            .collect();
        assert_eq!(props["DELAY"], "5", "3 + reconsumeTimes");
        assert_eq!(props["RETRY_TOPIC"], "BenchmarkTopic");
        assert_eq!(props["UNIQ_KEY"], "7F00000100002A9F0000000000000007");
        assert!(!props.contains_key("RECONSUME_TIME"));
        assert_eq!(cmd.body.len(), 5);
    }

    /// RECONSUME_TIME per publish and client: the orderly one is the message's own count
    /// before 5.1.1 (4.9.8 ConsumeMessageOrderlyService l.386), + 1 after (5.3.3 l.388).
    #[test]
    fn the_orderly_publish_carries_the_count_as_the_client_version_does() {
        let m = Msg {
            reconsume_times: 4,
            ..Msg::default()
        };
        use ClientVersion::{V43, V49, V53};
        let at_limit = Republish::OrderlyAtLimit;
        let fallback = Republish::AfterSendBack;
        assert_eq!(at_limit.reconsume_times(&m, V43), 4);
        assert_eq!(at_limit.reconsume_times(&m, V49), 4);
        assert_eq!(at_limit.reconsume_times(&m, V53), 5);
        for v in [V43, V49, V53] {
            assert_eq!(fallback.reconsume_times(&m, v), 5);
        }
        let props = |cmd: &RemotingCommand| {
            let h: SendMessageRequestHeader =
                cmd.header::<SendMessageRequestHeaderV2>().unwrap().into();
            let p: BTreeMap<String, String> = decode_properties(h.properties.as_deref().unwrap())
                .into_iter()
                .collect();
            (h.reconsume_times, p["DELAY"].clone())
        };
        let cmd = request("g", &m, at_limit.reconsume_times(&m, V49), 4, 0);
        assert_eq!(props(&cmd), (Some(4), "7".to_owned()), "DELAY 3 + r");
    }
}
