//! Which broker answers the Java producer sends again (`DefaultMQProducer.retryResponseCodes`):
//! one list for the load generator's retry policy and for the consumer's inner producer (the
//! fallback publish after a failed send-back), so the two cannot drift apart.

use remoting::ResponseCode;

/// `DefaultMQProducer`'s retry codes up to 5.2 (4.9.8 DefaultMQProducer l.68-75).
pub const ROCKETMQ4_CODES: [i32; 6] = [
    ResponseCode::TOPIC_NOT_EXIST as i32,
    ResponseCode::SERVICE_NOT_AVAILABLE as i32,
    ResponseCode::SYSTEM_ERROR as i32,
    ResponseCode::NO_PERMISSION as i32,
    ResponseCode::NO_BUYER_ID as i32,
    ResponseCode::NOT_IN_CURRENT_UNIT as i32,
];

/// What 5.3.0 adds: a busy or draining broker is worth another attempt.
pub const ROCKETMQ53_EXTRA_CODES: [i32; 2] = [
    ResponseCode::SYSTEM_BUSY as i32,
    ResponseCode::GO_AWAY as i32,
];

/// The codes a 4.x client (`with_53 == false`) or a 5.3 client sends again.
pub fn retried(code: i32, with_53: bool) -> bool {
    ROCKETMQ4_CODES.contains(&code) || (with_53 && ROCKETMQ53_EXTRA_CODES.contains(&code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_is_retried_by_5_3_only() {
        assert!(retried(1, false) && retried(17, false) && retried(14, true));
        assert!(!retried(2, false) && retried(2, true));
        assert!(!retried(0, true) && !retried(12, true) && !retried(26, true));
    }
}
