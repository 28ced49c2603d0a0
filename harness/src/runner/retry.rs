//! The client retry policy: which final answers the Java producer sends again, and how often.

use std::time::Instant;

use remoting::ResponseCode;

use crate::profile::RetryPolicy;
use crate::recorder::Outcome;

/// Attempts of one send under a retry policy: retryTimesWhenSendFailed (2) + 1 (§11).
pub const MAX_ATTEMPTS: u32 = 3;

/// `DefaultMQProducer`'s retry codes up to 5.2.
const ROCKETMQ4_CODES: [i32; 6] = [
    ResponseCode::TOPIC_NOT_EXIST as i32,
    ResponseCode::SERVICE_NOT_AVAILABLE as i32,
    ResponseCode::SYSTEM_ERROR as i32,
    ResponseCode::NO_PERMISSION as i32,
    ResponseCode::NO_BUYER_ID as i32,
    ResponseCode::NOT_IN_CURRENT_UNIT as i32,
];

/// What 5.3.0 adds: a busy or draining broker is worth another attempt.
const ROCKETMQ53_EXTRA_CODES: [i32; 2] = [
    ResponseCode::SYSTEM_BUSY as i32,
    ResponseCode::GO_AWAY as i32,
];

/// Whether `policy` sends again after `outcome` (with the response `code`, if answered).
pub fn retryable(policy: RetryPolicy, outcome: Outcome, code: Option<i32>) -> bool {
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

    #[test]
    fn policies_retry_the_java_clients_codes() {
        let busy = Outcome::Busy(crate::recorder::BusyClass::Other);
        for c in [17, 14, 1, 16, 204, 205] {
            assert!(retryable(
                RetryPolicy::Rocketmq4,
                Outcome::SystemError,
                Some(c)
            ));
            assert!(retryable(
                RetryPolicy::Rocketmq53,
                Outcome::SystemError,
                Some(c)
            ));
        }
        for c in [2, 1500] {
            assert!(!retryable(RetryPolicy::Rocketmq4, busy, Some(c)));
            assert!(retryable(RetryPolicy::Rocketmq53, busy, Some(c)));
        }
        assert!(!retryable(RetryPolicy::Rocketmq53, Outcome::Ok, Some(0)));
        assert!(!retryable(RetryPolicy::None, Outcome::Timeout, None));
        assert!(retryable(RetryPolicy::Rocketmq4, Outcome::Timeout, None));
        assert!(retryable(
            RetryPolicy::Rocketmq4,
            Outcome::ConnectionError,
            None
        ));
    }
}
