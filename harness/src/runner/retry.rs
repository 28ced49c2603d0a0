//! The client retry policy: which final answers the Java producer sends again, and how often.

use std::time::Instant;

use rmq_client::retry_codes::{ROCKETMQ4_CODES, ROCKETMQ53_EXTRA_CODES};

use crate::recorder::Outcome;
use harness_model::profile::RetryPolicy;

/// Attempts of one send under a retry policy: retryTimesWhenSendFailed (2) + 1 (§11).
pub const MAX_ATTEMPTS: u32 = 3;

/// The Java producer's `retryAnotherBrokerWhenNotStoreOK` (reference HA §3.6): whether a
/// `SendResult` whose status is not SEND_OK ends the send or starts another attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotStoreOk {
    /// false, RocketMQ's default: the result is returned, whatever its status.
    Return,
    /// true: the loop goes on to the next queue, avoiding the last broker; the message is then
    /// stored twice (the master kept the first one).
    RetryAnotherBroker,
}

impl NotStoreOk {
    pub fn of(retry_another_broker: bool) -> NotStoreOk {
        if retry_another_broker {
            NotStoreOk::RetryAnotherBroker
        } else {
            NotStoreOk::Return
        }
    }
}

/// Whether `policy` sends again after `outcome` (with the response `code`, if answered).
/// Codes 10 / 11 / 12 are in no version's retry list: they are retried only under
/// [`NotStoreOk::RetryAnotherBroker`], and only when the policy retries at all.
pub fn retryable(
    policy: RetryPolicy,
    not_store_ok: NotStoreOk,
    outcome: Outcome,
    code: Option<i32>,
) -> bool {
    if policy != RetryPolicy::None && outcome != Outcome::Ok && outcome.is_send_result() {
        return not_store_ok == NotStoreOk::RetryAnotherBroker;
    }
    let transport = matches!(outcome, Outcome::Timeout | Outcome::ConnectionError);
    let listed =
        |extra: &[i32]| code.is_some_and(|c| ROCKETMQ4_CODES.contains(&c) || extra.contains(&c));
    match policy {
        RetryPolicy::None => false,
        RetryPolicy::Rocketmq4 => transport || listed(&[]),
        RetryPolicy::Rocketmq53 => transport || listed(&ROCKETMQ53_EXTRA_CODES),
    }
}

/// A send to be written again by the pacer, keeping its intended and first write times.
pub struct Retry {
    pub seq: u64,
    pub intended: Instant,
    pub first_written: Instant,
    pub segment: usize,
    pub attempt: u32,
    /// The broker of the failed attempt, which the next one avoids (cluster only).
    pub last_broker: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::classify;

    fn plain(policy: RetryPolicy, outcome: Outcome, code: Option<i32>) -> bool {
        retryable(policy, NotStoreOk::Return, outcome, code)
    }

    #[test]
    fn policies_retry_the_java_clients_codes() {
        let busy = Outcome::Busy(crate::recorder::BusyClass::Other);
        for c in [17, 14, 1, 16, 204, 205] {
            assert!(plain(RetryPolicy::Rocketmq4, Outcome::SystemError, Some(c)));
            assert!(plain(
                RetryPolicy::Rocketmq53,
                Outcome::SystemError,
                Some(c)
            ));
        }
        for c in [2, 1500] {
            assert!(!plain(RetryPolicy::Rocketmq4, busy, Some(c)));
            assert!(plain(RetryPolicy::Rocketmq53, busy, Some(c)));
        }
        assert!(!plain(RetryPolicy::Rocketmq53, Outcome::Ok, Some(0)));
        assert!(!plain(RetryPolicy::None, Outcome::Timeout, None));
        assert!(plain(RetryPolicy::Rocketmq4, Outcome::Timeout, None));
        assert!(plain(
            RetryPolicy::Rocketmq4,
            Outcome::ConnectionError,
            None
        ));
    }

    #[test]
    fn not_store_ok_statuses_are_results_retried_only_with_the_option() {
        // 11 and 12 are their own outcomes (counted in their columns), SendResults like 0 and 10.
        assert_eq!(classify(12, None), Outcome::FlushSlaveTimeout);
        assert_eq!(classify(11, None), Outcome::SlaveNotAvailable);
        for code in [10, 11, 12] {
            let o = classify(code, None);
            assert!(o.is_send_result(), "code {code}");
            for policy in [
                RetryPolicy::None,
                RetryPolicy::Rocketmq4,
                RetryPolicy::Rocketmq53,
            ] {
                assert!(!plain(policy, o, Some(code)), "{policy:?} code {code}");
            }
            let again = NotStoreOk::of(true);
            assert!(retryable(RetryPolicy::Rocketmq4, again, o, Some(code)));
            assert!(retryable(RetryPolicy::Rocketmq53, again, o, Some(code)));
            // retry = "none" makes no second attempt, whatever the option says.
            assert!(!retryable(RetryPolicy::None, again, o, Some(code)));
        }
        // The option never turns SEND_OK into another attempt, nor changes other codes.
        let again = NotStoreOk::RetryAnotherBroker;
        assert!(!retryable(
            RetryPolicy::Rocketmq4,
            again,
            Outcome::Ok,
            Some(0)
        ));
        let busy = classify(2, Some("[REJECTREQUEST]system busy"));
        assert!(!busy.is_send_result());
        assert!(!retryable(RetryPolicy::Rocketmq4, again, busy, Some(2)));
        assert!(!classify(14, None).is_send_result());
    }
}
