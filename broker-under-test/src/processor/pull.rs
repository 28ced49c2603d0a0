//! PULL_MESSAGE (11): PullMessageProcessor (consumer §1–§3). The checks in RocketMQ's order,
//! the read with its limits and TAG filter (`pull_read.rs`), the answer per store status, the
//! offset commit carried by the pull, and long polling: a pull that finds nothing new and allows
//! suspension is parked in [`PullHold`](crate::consumer::hold::PullHold) without an answer.
//! The body is the concatenated CommitLog records (send-path reference §7.6).

use std::{sync::Arc, time::Instant};

use remoting::{
    headers::{PullMessageRequestHeader, PullMessageResponseHeader},
    RemotingCommand, ResponseCode,
};

use super::pull_read::{read, ReadStatus};
use crate::{
    broker::{Broker, PERM_READ},
    config::BrokerRole,
    consumer::{filter::TagFilter, hold::HeldPull},
    dispatch::{answer, response},
    ha,
    keys::VersionProfile,
    processor::header::header_error,
    store::{GetMessageStatus, OffsetCorrection},
    task::{AnswerSource, RequestTask},
};

/// PullSysFlag bits (consumer §1.2).
pub const FLAG_COMMIT_OFFSET: i32 = 0x1;
pub const FLAG_SUSPEND: i32 = 0x2;
pub const FLAG_SUBSCRIPTION: i32 = 0x4;

/// `FAQUrl.suggestTodo(url)` of the profile's release.
pub fn faq(profile: VersionProfile) -> &'static str {
    if profile.is_4x() {
        "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
    } else {
        "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
    }
}

/// Runs one pull. `allow_suspend` is RocketMQ's `brokerAllowSuspend`: true on the first run,
/// false when long polling re-runs a held pull.
pub fn process(broker: &Arc<Broker>, task: RequestTask, allow_suspend: bool) {
    let finish = |task: &RequestTask, r: RemotingCommand| {
        answer(
            broker.config.profile,
            &task.request,
            &task.responder,
            r,
            AnswerSource::Processor,
        )
    };
    let h = match task.request.header::<PullMessageRequestHeader>() {
        Ok(h) => h,
        Err(e) => return finish(&task, header_error(broker, &task.request, &e)),
    };
    let filter = match checks(broker, &task, &h) {
        Ok(f) => f,
        Err(r) => return finish(&task, r),
    };
    let profile = broker.config.profile;
    let got = read(
        broker,
        &h.topic,
        h.queue_id,
        h.queue_offset,
        h.max_msg_nums,
        &filter,
    );
    use GetMessageStatus as S;
    let (code, remark) = match got.status {
        ReadStatus::NoMatchedMessage => {
            (ResponseCode::PULL_RETRY_IMMEDIATELY, "NO_MATCHED_MESSAGE")
        }
        ReadStatus::Store(s) => {
            let code = match s {
                S::Found => ResponseCode::SUCCESS,
                S::NoMessageInQueue | S::NoMatchedLogicQueue if h.queue_offset != 0 => {
                    ResponseCode::PULL_OFFSET_MOVED
                }
                S::NoMessageInQueue
                | S::NoMatchedLogicQueue
                | S::OffsetFoundNull
                | S::OffsetOverflowOne => ResponseCode::PULL_NOT_FOUND,
                S::OffsetOverflowBadly | S::OffsetTooSmall => ResponseCode::PULL_OFFSET_MOVED,
                // The consumer walks on from nextBeginOffset at once (retention reference A8).
                S::MessageWasRemoving => ResponseCode::PULL_RETRY_IMMEDIATELY,
            };
            (code, status_name(s))
        }
    };
    // §2.3: the pull carries the consumer's offset; only the first run commits it.
    let commit = allow_suspend
        && h.sys_flag & FLAG_COMMIT_OFFSET != 0
        && (!profile.is_4x() || broker.config.broker_role != BrokerRole::Slave);
    if commit {
        broker
            .offsets
            .commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
    }
    if code == ResponseCode::PULL_NOT_FOUND && allow_suspend && h.sys_flag & FLAG_SUSPEND != 0 {
        let hold = if broker.config.long_polling_enable {
            std::time::Duration::from_millis(h.suspend_timeout_millis.max(0) as u64)
        } else {
            broker.config.short_polling_time
        };
        let (topic, queue_id, offset) = (h.topic.clone(), h.queue_id, h.queue_offset);
        let store = &broker.store;
        broker.pull_hold.hold(
            &topic,
            queue_id,
            HeldPull {
                task,
                offset,
                suspended_at: Instant::now(),
                hold,
                filter,
            },
            || store.max_offset_in_queue(&topic, queue_id),
        );
        return;
    }
    let mut suggest = suggest_broker(broker, &h.consumer_group, &got.body);
    let code = if code == ResponseCode::PULL_OFFSET_MOVED {
        offset_moved(broker, &h, got.next_begin_offset, &mut suggest)
    } else {
        code
    };
    let header = PullMessageResponseHeader {
        suggest_which_broker_id: suggest,
        next_begin_offset: got.next_begin_offset,
        min_offset: got.min_offset,
        max_offset: got.max_offset,
    };
    let r = response(profile, &task.request, code, Some(remark.into())).with_header(&header);
    let r = if code == ResponseCode::SUCCESS {
        r.with_body(got.body)
    } else {
        r
    };
    finish(&task, r)
}

/// PULL_OFFSET_MOVED's last step (4.9.8 PullMessageProcessor l.428-452, 5.3.3
/// DefaultPullMessageResultHandler l.191-214, same in 4.3.2): a master, or a SLAVE with
/// `offsetCheckInSlave`, answers 21 with the corrected offset; any other SLAVE answers 20
/// PULL_RETRY_IMMEDIATELY with the requested offset (the store kept it) and suggests the
/// group's `brokerId`, so the consumer keeps its offset and pulls again at once.
fn offset_moved(
    broker: &Broker,
    h: &PullMessageRequestHeader,
    next_begin_offset: i64,
    suggest: &mut i64,
) -> ResponseCode {
    match broker.config.store.offset_correction {
        OffsetCorrection::Correct => {
            eprintln!(
                "PULL_OFFSET_MOVED:correction offset. topic={}, groupId={}, requestOffset={}, \
                 newOffset={next_begin_offset}, suggestBrokerId={suggest}",
                h.topic, h.consumer_group, h.queue_offset
            );
            ResponseCode::PULL_OFFSET_MOVED
        }
        OffsetCorrection::KeepRequested => {
            *suggest = broker
                .find_group(&h.consumer_group)
                .map_or(0, |g| g.broker_id);
            eprintln!(
                "PULL_OFFSET_MOVED:none correction. topic={}, groupId={}, requestOffset={}, \
                 suggestBrokerId={suggest}",
                h.topic, h.consumer_group, h.queue_offset
            );
            ResponseCode::PULL_RETRY_IMMEDIATELY
        }
    }
}

/// §2.1 in order, up to the subscription; the filter to read with, or the early answer.
/// `suggestWhichBrokerId` (HA reference §4.1, §4.2).
fn suggest_broker(broker: &Broker, group: &str, body: &[u8]) -> i64 {
    let c = &broker.config;
    if !c.ha.slave_read_enable {
        return 0;
    }
    let Some(group) = broker.find_group(group) else {
        return 0;
    };
    let ratio = ha::read::effective_memory_ratio(
        c.access_message_in_memory_max_ratio,
        c.profile,
        c.broker_role,
    );
    let from_slave = ha::read::last_physical_offset(body).is_some_and(|read| {
        ha::read::suggest_pulling_from_slave(
            broker.store.commit_log_max_offset(),
            read,
            ha::read::total_physical_memory(),
            ratio,
        )
    });
    ha::read::suggest_which_broker_id(true, from_slave, &group)
}

fn checks(
    broker: &Broker,
    task: &RequestTask,
    h: &PullMessageRequestHeader,
) -> Result<TagFilter, RemotingCommand> {
    let profile = broker.config.profile;
    let req = &task.request;
    let fail = |code: ResponseCode, remark: String| response(profile, req, code, Some(remark));
    let faq = faq(profile);
    let Some(group) = broker.find_group(&h.consumer_group) else {
        return Err(fail(
            ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!(
                "subscription group [{}] does not exist, {faq}",
                h.consumer_group
            ),
        ));
    };
    if !group.consume_enable {
        return Err(fail(
            ResponseCode::NO_PERMISSION,
            format!("subscription group no permission, {}", h.consumer_group),
        ));
    }
    let Some(topic) = broker.topics.get(&h.topic) else {
        return Err(fail(
            ResponseCode::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist, apply first please! {faq}", h.topic),
        ));
    };
    if topic.perm & PERM_READ == 0 {
        return Err(fail(
            ResponseCode::NO_PERMISSION,
            format!("the topic[{}] pulling message is forbidden", h.topic),
        ));
    }
    if h.queue_id < 0 || h.queue_id >= topic.read_queue_nums {
        // 5.3.2 changed the code from SYSTEM_ERROR to INVALID_PARAMETER.
        let code = if profile.is_4x() {
            ResponseCode::SYSTEM_ERROR
        } else {
            ResponseCode::INVALID_PARAMETER
        };
        return Err(fail(
            code,
            format!(
                "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}] consumer:[/{}]",
                h.queue_id,
                h.topic,
                topic.read_queue_nums,
                // Java prints the channel's SocketAddress, which starts with a slash.
                task.responder.peer()
            ),
        ));
    }
    let (expression_type, filter) = if h.sys_flag & FLAG_SUBSCRIPTION != 0 {
        (
            h.expression_type.clone().unwrap_or_else(|| "TAG".into()),
            TagFilter::parse(h.subscription.as_deref()),
        )
    } else {
        broker
            .consumers
            .pull_subscription(
                &h.consumer_group,
                &h.topic,
                h.sub_version,
                group.consume_broadcast_enable,
            )
            .map_err(|(code, remark)| fail(code, format!("{remark}{}", remark_faq(code, faq))))?
    };
    if expression_type != "TAG" {
        return Err(fail(
            ResponseCode::SYSTEM_ERROR,
            format!("The broker does not support consumer to filter message by {expression_type}"),
        ));
    }
    Ok(filter)
}

/// The registered-subscription failures that end with the FAQ link.
fn remark_faq(code: ResponseCode, faq: &'static str) -> &'static str {
    if code == ResponseCode::SUBSCRIPTION_NOT_EXIST {
        faq
    } else {
        ""
    }
}

/// GetMessageStatus.name(), which RocketMQ puts in the remark.
fn status_name(s: GetMessageStatus) -> &'static str {
    use GetMessageStatus as S;
    match s {
        S::Found => "FOUND",
        S::NoMessageInQueue => "NO_MESSAGE_IN_QUEUE",
        S::OffsetFoundNull => "OFFSET_FOUND_NULL",
        S::OffsetOverflowOne => "OFFSET_OVERFLOW_ONE",
        S::OffsetOverflowBadly => "OFFSET_OVERFLOW_BADLY",
        S::OffsetTooSmall => "OFFSET_TOO_SMALL",
        S::NoMatchedLogicQueue => "NO_MATCHED_LOGIC_QUEUE",
        S::MessageWasRemoving => "MESSAGE_WAS_REMOVING",
    }
}
