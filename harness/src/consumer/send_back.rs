//! The client side of a failed message (retention-retry reference B6.3): CONSUMER_SEND_MSG_BACK
//! (36), synchronous with a 5000 ms timeout, header as the Java client fills it; a send-back
//! that fails is followed by the inner producer's publish to `%RETRY%<group>` (`fallback.rs`),
//! and only when that fails too is the message consumed again locally after 5000 ms. Also the
//! broker's retry counters, read with GET_BROKER_RUNTIME_INFO at the start and end of a job.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use remoting::headers::ConsumerSendMsgBackRequestHeader;
use remoting::{RemotingCommand, RequestCode};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::consumer::fallback::{self, Published, Republish};
use crate::consumer::process_queue::Msg;
use crate::consumer::state::Instance;
use crate::consumer::wire::Wire;

/// The send-back call's timeout.
const SEND_BACK_TIMEOUT: Duration = Duration::from_secs(5);
/// ConsumeMessageConcurrentlyService's `submitConsumeRequestLater` delay.
pub const LOCAL_RETRY_DELAY: Duration = Duration::from_secs(5);

/// The runtime-info keys of the retry road (the broker's `SNDBCK_*` and schedule counters).
pub const BROKER_RETRY_KEYS: [&str; 4] = [
    "SNDBCK_PUT_NUMS",
    "SNDBCK2DLQ_TIMES",
    "scheduleMessagePutNums",
    "scheduleMessageDeliverNums",
];

/// One CONSUMER_SEND_MSG_BACK for `m` at `delay_level`, to the master of `broker`, the broker
/// name the message was pulled from (`getBrokerNameFromMessageQueue`); Err names the code or
/// the failure.
///
/// The address is `findBrokerAddressInPublish(name)`: the master's only, never a slave's (4.9.8
/// DefaultMQPushConsumerImpl.sendMessageBack l.522-549, 5.3.3 l.759-800). With the master gone
/// from the route there is no address and the send-back fails without a request: 5.3.3 throws
/// `master node does not exist`, 4.3 fails on the null address (VIP channel on by default).
/// Not copied: a 4.9 client (VIP off) sends the request to a name server instead, which never
/// answers code 36, so its send-back fails only after the 5000 ms timeout.
pub async fn send_back(
    inst: &Instance,
    broker: &Arc<str>,
    m: &Msg,
    delay_level: i32,
) -> Result<(), String> {
    let cfg = &inst.shared.cfg;
    let header = ConsumerSendMsgBackRequestHeader {
        offset: m.commit_log_offset,
        group: cfg.group.clone(),
        delay_level,
        origin_msg_id: m.uniq_key.as_deref().map(str::to_owned),
        origin_topic: Some(m.topic.to_string()),
        unit_mode: Some(false),
        max_reconsume_times: Some(cfg.max_reconsume()),
        bname: Some(broker.to_string()),
    };
    let cmd = RemotingCommand::request(RequestCode::CONSUMER_SEND_MSG_BACK, 0).with_header(&header);
    let link = inst.master_link(broker).map_err(|e| e.to_string())?;
    match link.call(cmd, SEND_BACK_TIMEOUT).await {
        Ok(r) if r.code == 0 => Ok(()),
        Ok(r) => Err(format!(
            "CODE: {} DESC: {}",
            r.code,
            r.remark.unwrap_or_default()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Whether the broker stores a send-back of `m` at `level` in `%DLQ%<group>` (B2.2 #9): it
/// reads the count from the record at the header's CommitLog offset (4.9.8
/// `asyncConsumerSendMsgBack` l.191), which a local re-consume does not raise; the header's
/// `maxReconsumeTimes` is `max`.
pub fn send_back_dead_letters(m: &Msg, max: i32, level: i32) -> bool {
    m.stored_reconsume_times >= max || level < 0
}

/// processConsumeResult for a batch the listener failed (CLUSTERING): every message sent back,
/// else published to `%RETRY%<group>`; the ones for which both failed are returned, their
/// reconsumeTimes raised, to be consumed again here after [`LOCAL_RETRY_DELAY`].
pub async fn send_back_failed(inst: &Instance, broker: &Arc<str>, msgs: &[Msg]) -> Vec<Msg> {
    let f = &inst.shared.failures;
    let cfg = &inst.shared.cfg;
    let level = cfg.delay_level_when_next_consume;
    let mut kept = Vec::new();
    for m in msgs {
        f.failed(m);
        match send_back(inst, broker, m, level).await {
            Ok(()) => {
                f.send_backs.fetch_add(1, Ordering::Relaxed);
                if send_back_dead_letters(m, cfg.max_reconsume(), level) {
                    f.dead_lettered(m);
                }
            }
            Err(e) => {
                inst.log(
                    "ERROR",
                    &format!(
                        "sendMessageBack exception, group: {} msg: {:?} {e}",
                        cfg.group, m.uniq_key
                    ),
                );
                match fallback::publish(inst, m, Republish::AfterSendBack).await {
                    Ok(published) => {
                        f.send_back_fallback.fetch_add(1, Ordering::Relaxed);
                        if published == Published::DeadLettered {
                            f.dead_lettered(m);
                        }
                    }
                    Err(e) => {
                        f.send_back_failed.fetch_add(1, Ordering::Relaxed);
                        inst.log(
                            "WARN",
                            &format!(
                                "send to %RETRY%{} failed, consumed again locally: msg: {:?} {e}",
                                cfg.group, m.uniq_key
                            ),
                        );
                        let mut again = m.clone();
                        again.reconsume_times += 1;
                        kept.push(again);
                    }
                }
            }
        }
    }
    kept
}

/// The broker's retry counters now (None when the broker does not answer or lacks them).
pub async fn broker_retry_counters(addr: SocketAddr, tracker: &TaskTracker) -> Option<[u64; 4]> {
    let stop = CancellationToken::new();
    let wire = Wire::connect(addr, Arc::new(Notify::new()), tracker, stop.clone())
        .await
        .ok()?;
    let r = wire
        .call(
            RemotingCommand::request(RequestCode::GET_BROKER_RUNTIME_INFO, 0),
            Duration::from_secs(3),
        )
        .await;
    stop.cancel();
    let r = r.ok().filter(|r| r.code == 0)?;
    let v: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
    let table: BTreeMap<String, String> = serde_json::from_value(v["table"].clone()).ok()?;
    let mut out = [0; 4];
    for (slot, key) in out.iter_mut().zip(BROKER_RETRY_KEYS) {
        *slot = table.get(key)?.parse().ok()?;
    }
    Some(out)
}

/// The retry counters summed over every broker of the route (None when one does not answer:
/// a partial sum would read as fewer retries).
pub async fn broker_retry_sum(
    route: &crate::consumer::route::Route,
    tracker: &TaskTracker,
) -> Option<[u64; 4]> {
    let mut total = [0u64; 4];
    for b in route.brokers() {
        let c = broker_retry_counters(b.addr, tracker).await?;
        for (t, v) in total.iter_mut().zip(c) {
            *t += v;
        }
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Audit #20 (fidelity-after-wave-3): a message re-consumed locally once (its in-memory
    /// count raised from 15 to 16) and then sent back is retried by the broker, which reads the
    /// stored 15; at a stored 16 it goes to the DLQ; a negative level always does.
    #[test]
    fn the_dlq_follows_the_stored_count_not_the_raised_one() {
        let raised = Msg {
            reconsume_times: 16,
            stored_reconsume_times: 15,
            ..Msg::default()
        };
        assert!(!send_back_dead_letters(&raised, 16, 0));
        let stored = Msg {
            reconsume_times: 16,
            stored_reconsume_times: 16,
            ..Msg::default()
        };
        assert!(send_back_dead_letters(&stored, 16, 0));
        assert!(send_back_dead_letters(&raised, 16, -1));
    }
}
