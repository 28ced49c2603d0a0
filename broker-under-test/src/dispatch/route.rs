//! Request code → (processor, executor) (reference §4.2).

use remoting::RequestCode;

use crate::{
    keys::VersionProfile,
    task::{ExecutorKind, ProcessorKind},
};

/// Routes a request code; `None` means REQUEST_CODE_NOT_SUPPORTED.
pub fn route(code: i32, profile: VersionProfile) -> Option<(ProcessorKind, ExecutorKind)> {
    use RequestCode as R;
    let r = match RequestCode::from_i32(code)? {
        // SendMessageProcessor serves CONSUMER_SEND_MSG_BACK too, on the send executor.
        R::SEND_MESSAGE
        | R::SEND_MESSAGE_V2
        | R::SEND_BATCH_MESSAGE
        | R::CONSUMER_SEND_MSG_BACK => (ProcessorKind::Send, ExecutorKind::Send),
        R::PULL_MESSAGE => (ProcessorKind::Pull, ExecutorKind::Pull),
        R::HEART_BEAT => (ProcessorKind::Heartbeat, ExecutorKind::Heartbeat),
        // 4.3.0 registered END_TRANSACTION on the send pool; 4.4.0 gave it its own.
        R::END_TRANSACTION if profile == VersionProfile::V4_3 => {
            (ProcessorKind::EndTransaction, ExecutorKind::Send)
        }
        R::END_TRANSACTION => (ProcessorKind::EndTransaction, ExecutorKind::EndTransaction),
        // RocketMQ runs these on the consumer-manage / client-manage pools, which have no
        // fast-failure limit; the admin pool stands in for both.
        R::QUERY_CONSUMER_OFFSET
        | R::UPDATE_CONSUMER_OFFSET
        | R::GET_CONSUMER_LIST_BY_GROUP
        | R::GET_MAX_OFFSET
        | R::GET_MIN_OFFSET => (ProcessorKind::ConsumerManage, ExecutorKind::Admin),
        R::UNREGISTER_CLIENT => (ProcessorKind::Heartbeat, ExecutorKind::Admin),
        R::LOCK_BATCH_MQ | R::UNLOCK_BATCH_MQ => (ProcessorKind::Lock, ExecutorKind::Admin),
        R::UPDATE_AND_CREATE_TOPIC | R::GET_BROKER_CONFIG | R::GET_BROKER_RUNTIME_INFO => {
            (ProcessorKind::Admin, ExecutorKind::Admin)
        }
        // 5.0.0+ only.
        R::GET_BROKER_HA_STATUS if profile == VersionProfile::V5_3 => {
            (ProcessorKind::Admin, ExecutorKind::Admin)
        }
        _ => return None,
    };
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_codes_go_to_the_send_executor_and_unknown_codes_nowhere() {
        for code in [10, 310, 320] {
            assert_eq!(
                route(code, VersionProfile::V5_3),
                Some((ProcessorKind::Send, ExecutorKind::Send))
            );
        }
        assert_eq!(route(9999, VersionProfile::V5_3), None);
        assert_eq!(
            route(37, VersionProfile::V4_3).map(|r| r.1),
            Some(ExecutorKind::Send)
        );
        assert_eq!(
            route(37, VersionProfile::V4_9).map(|r| r.1),
            Some(ExecutorKind::EndTransaction)
        );
    }
}
