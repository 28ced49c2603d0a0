//! The counters of the retry road, exposed in GET_BROKER_RUNTIME_INFO. Two names are
//! BrokerStatsManager's (`SNDBCK_PUT_NUMS`, 5.3's `SNDBCK2DLQ_TIMES`), here as totals over every
//! `topic@group`; the `schedule*` ones are ours (RocketMQ has only `scheduleMessageOffset_<level>`).

use std::sync::atomic::{AtomicU64, Ordering};

/// Levels counted one by one; a larger level (a custom `messageDelayLevel`) goes to the last.
const LEVEL_SLOTS: usize = 64;

#[derive(Debug)]
pub struct RetryStats {
    /// Successful CONSUMER_SEND_MSG_BACK puts, retry and DLQ alike (`SNDBCK_PUT_NUMS`).
    pub send_back_puts: AtomicU64,
    /// Of them, to `%DLQ%<group>` (`SNDBCK2DLQ_TIMES`).
    pub send_back_dlq: AtomicU64,
    /// CONSUMER_SEND_MSG_BACK answered with a non-zero code.
    pub send_back_failed: AtomicU64,
    /// Puts rewritten to SCHEDULE_TOPIC_XXXX, per level (index level − 1).
    scheduled: [AtomicU64; LEVEL_SLOTS],
    /// Messages the schedule service re-put to their real topic.
    pub delivered: AtomicU64,
    /// Re-puts the store refused (retried on the next round).
    pub deliver_failed: AtomicU64,
}

impl Default for RetryStats {
    fn default() -> Self {
        RetryStats {
            send_back_puts: AtomicU64::new(0),
            send_back_dlq: AtomicU64::new(0),
            send_back_failed: AtomicU64::new(0),
            scheduled: std::array::from_fn(|_| AtomicU64::new(0)),
            delivered: AtomicU64::new(0),
            deliver_failed: AtomicU64::new(0),
        }
    }
}

impl RetryStats {
    pub fn scheduled(&self, level: i32) {
        let i = (level.max(1) as usize - 1).min(LEVEL_SLOTS - 1);
        self.scheduled[i].fetch_add(1, Ordering::Relaxed);
    }

    /// The runtime-info entries: totals, and one `scheduleMessagePutNums_<level>` per level
    /// that was used.
    pub fn runtime_info(&self) -> Vec<(String, String)> {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = vec![
            ("SNDBCK_PUT_NUMS".to_owned(), get(&self.send_back_puts)),
            ("SNDBCK2DLQ_TIMES".to_owned(), get(&self.send_back_dlq)),
            ("sndbckFailedNums".to_owned(), get(&self.send_back_failed)),
            (
                "scheduleMessageDeliverNums".to_owned(),
                get(&self.delivered),
            ),
            (
                "scheduleMessageDeliverFailedNums".to_owned(),
                get(&self.deliver_failed),
            ),
        ];
        let mut total = 0;
        for (i, n) in self.scheduled.iter().enumerate() {
            let n = get(n);
            total += n;
            if n > 0 {
                out.push((format!("scheduleMessagePutNums_{}", i + 1), n));
            }
        }
        out.push(("scheduleMessagePutNums".to_owned(), total));
        out.into_iter().map(|(k, v)| (k, v.to_string())).collect()
    }
}
