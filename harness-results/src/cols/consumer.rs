//! The consumers' columns at the end of `summary.csv` and `timeseries.csv` (empty cells in a
//! job without consumers). The names are a contract: scripts rely on them (issue 12).

use serde::Serialize;

use crate::cells::{ms, Fixed};
use crate::consumer::{BrokerCounts, ConsumerFigures, ConsumerSecond};

/// `summary.csv`'s consumer columns, after `invalid_reason`.
#[derive(Debug, Default, Serialize)]
pub struct SummaryConsumer {
    consumed: Option<u64>,
    consume_rate: Option<Fixed<1>>,
    consumer_fc_count: Option<u64>,
    consumer_fc_size: Option<u64>,
    consumer_fc_span: Option<u64>,
    consumer_fc_not_locked: Option<u64>,
    consumer_lag_max: Option<i64>,
    consumer_lost: Option<u64>,
    consumer_duplicates: Option<u64>,
    e2e_p50_ms: Option<Fixed<3>>,
    e2e_p99_ms: Option<Fixed<3>>,
    e2e_p999_ms: Option<Fixed<3>>,
    stored_e2e_p99_ms: Option<Fixed<3>>,
    consumer_cached_max: Option<u64>,
    consumer_cached_mib_max: Option<Fixed<1>>,
    pulls_found: Option<u64>,
    pulls_not_found: Option<u64>,
    pulls_retry_immediately: Option<u64>,
    pulls_offset_moved: Option<u64>,
    pulls_errors: Option<u64>,
    pulls_busy_pcbusy_clean_queue: Option<u64>,
    pulls_busy_timeout_clean_queue: Option<u64>,
    pulls_busy_rejectrequest: Option<u64>,
    pulls_busy_overload: Option<u64>,
    pulls_busy_pc_synchronized: Option<u64>,
    pulls_busy_other: Option<u64>,
    consumer_decode_errors: Option<u64>,
    consumer_foreign: Option<u64>,
    consumer_drained: Option<bool>,
    consumer_failures: Option<u64>,
    consumer_retries: Option<u64>,
    consumer_dlq: Option<u64>,
    consumer_retry_pending: Option<u64>,
    consumer_send_backs: Option<u64>,
    consumer_send_back_failed: Option<u64>,
    consumer_send_back_fallback: Option<u64>,
    consumer_suspends: Option<u64>,
    retry_delay_p50_ms: Option<Fixed<3>>,
    retry_delay_p99_ms: Option<Fixed<3>>,
    broker_sndbck_put_nums: Option<u64>,
    broker_sndbck2dlq_times: Option<u64>,
    broker_schedule_put_nums: Option<u64>,
    broker_schedule_deliver_nums: Option<u64>,
    consumer_recovery_ms: Option<Fixed<1>>,
    consumer_restart_duplicates: Option<u64>,
    /// Per broker of a cluster, `broker-0=N;broker-1=M` (empty with one broker).
    broker_consumed: Option<String>,
    broker_lag_max: Option<String>,
    drain_rate: Option<Fixed<1>>,
}

impl SummaryConsumer {
    pub fn of(f: Option<&ConsumerFigures>) -> SummaryConsumer {
        let Some(f) = f else {
            return SummaryConsumer::default();
        };
        let [p50, p99, p999] = f.e2e_us.map(ms);
        SummaryConsumer {
            consumed: Some(f.consumed),
            consume_rate: Some(Fixed(f.consume_rate)),
            consumer_fc_count: Some(f.fc[0]),
            consumer_fc_size: Some(f.fc[1]),
            consumer_fc_span: Some(f.fc[2]),
            consumer_fc_not_locked: Some(f.fc[3]),
            consumer_lag_max: Some(f.lag_max),
            consumer_lost: f.lost,
            consumer_duplicates: Some(f.duplicates),
            e2e_p50_ms: Some(p50),
            e2e_p99_ms: Some(p99),
            e2e_p999_ms: Some(p999),
            stored_e2e_p99_ms: Some(ms(f.stored_e2e_p99_us)),
            consumer_cached_max: Some(f.cached_max),
            consumer_cached_mib_max: Some(Fixed(f.cached_mib_max)),
            pulls_found: Some(f.pulls[0]),
            pulls_not_found: Some(f.pulls[1]),
            pulls_retry_immediately: Some(f.pulls[2]),
            pulls_offset_moved: Some(f.pulls[3]),
            pulls_errors: Some(f.pulls[4]),
            pulls_busy_pcbusy_clean_queue: Some(f.pull_busy[0]),
            pulls_busy_timeout_clean_queue: Some(f.pull_busy[1]),
            pulls_busy_rejectrequest: Some(f.pull_busy[2]),
            pulls_busy_overload: Some(f.pull_busy[3]),
            pulls_busy_pc_synchronized: Some(f.pull_busy[4]),
            pulls_busy_other: Some(f.pull_busy[5]),
            consumer_decode_errors: Some(f.decode_errors),
            consumer_foreign: Some(f.foreign),
            consumer_drained: Some(f.drained),
            consumer_failures: Some(f.retry.failures),
            consumer_retries: Some(f.retry.retries),
            consumer_dlq: Some(f.retry.dlq),
            consumer_retry_pending: Some(f.retry.pending),
            consumer_send_backs: Some(f.retry.send_backs),
            consumer_send_back_failed: Some(f.retry.send_back_failed),
            consumer_send_back_fallback: Some(f.retry.send_back_fallback),
            consumer_suspends: Some(f.retry.suspends),
            retry_delay_p50_ms: Some(ms(f.retry.delay_us[0])),
            retry_delay_p99_ms: Some(ms(f.retry.delay_us[1])),
            broker_sndbck_put_nums: f.retry.broker.map(|b| b[0]),
            broker_sndbck2dlq_times: f.retry.broker.map(|b| b[1]),
            broker_schedule_put_nums: f.retry.broker.map(|b| b[2]),
            broker_schedule_deliver_nums: f.retry.broker.map(|b| b[3]),
            consumer_recovery_ms: f.recovery.map(|d| Fixed(d.as_secs_f64() * 1000.0)),
            consumer_restart_duplicates: f.restart_duplicates,
            broker_consumed: per_broker(f, |b| b.consumed.to_string()),
            broker_lag_max: per_broker(f, |b| b.lag_max.to_string()),
            drain_rate: f.drain_rate.map(Fixed),
        }
    }
}

/// `name=value;name=value` of one per-broker figure, as `broker_ok` is written; None with
/// one broker (its figure is the total's).
fn per_broker(f: &ConsumerFigures, value: impl Fn(&BrokerCounts) -> String) -> Option<String> {
    (f.per_broker.len() > 1).then(|| {
        f.per_broker
            .iter()
            .map(|(name, b)| format!("{name}={}", value(b)))
            .collect::<Vec<_>>()
            .join(";")
    })
}

/// `timeseries.csv`'s consumer columns, at the end of each row.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TimeseriesConsumer {
    pub consumed: Option<u64>,
    pub consumer_lag: Option<i64>,
    pub consumer_cached: Option<u64>,
    pub consumer_cached_mib: Option<Fixed<1>>,
    pub consumer_fc_count: Option<u64>,
    pub consumer_fc_size: Option<u64>,
    pub consumer_fc_span: Option<u64>,
    pub consumer_fc_not_locked: Option<u64>,
    /// The second's listener failures, redeliveries and DLQ sends (`harness::consumer::failure`).
    pub consumer_failures: Option<u64>,
    pub consumer_retries: Option<u64>,
    pub consumer_dlq: Option<u64>,
    pub e2e_p50_ms: Option<Fixed<3>>,
    pub e2e_p99_ms: Option<Fixed<3>>,
}

impl TimeseriesConsumer {
    pub fn of(s: Option<&ConsumerSecond>) -> TimeseriesConsumer {
        let Some(s) = s else {
            return TimeseriesConsumer::default();
        };
        let q = |p: f64| s.e2e.as_ref().map(|h| ms(crate::segment::quantile(h, p)));
        TimeseriesConsumer {
            consumed: Some(s.consumed),
            consumer_lag: Some(s.lag),
            consumer_cached: Some(s.cached),
            consumer_cached_mib: Some(Fixed(s.cached_mib)),
            consumer_fc_count: Some(s.fc[0]),
            consumer_fc_size: Some(s.fc[1]),
            consumer_fc_span: Some(s.fc[2]),
            consumer_fc_not_locked: Some(s.fc[3]),
            consumer_failures: Some(s.failures[0]),
            consumer_retries: Some(s.failures[1]),
            consumer_dlq: Some(s.failures[2]),
            e2e_p50_ms: q(0.5),
            e2e_p99_ms: q(0.99),
        }
    }
}
