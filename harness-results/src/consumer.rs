//! The consumers' figures as the result folder takes them: one second (the consumer columns of
//! `timeseries.csv`) and a whole job (those of `summary.csv`). Plain data: the consumers
//! (`harness::consumer`) fill them, the rows ([`crate::cols`]) write them.

use hdrhistogram::Histogram;

/// One sampled second of the consumers.
#[derive(Debug, Clone, Default)]
pub struct ConsumerSecond {
    /// Consume starts in the second.
    pub consumed: u64,
    /// Flow-control events in the second: count, size, span, not locked.
    pub fc: [u64; 4],
    /// Listener failures, redeliveries (reconsumeTimes > 0) and messages sent to the DLQ in
    /// the second.
    pub failures: [u64; 3],
    /// Broker max offset − committed offset, summed over queues, at the end of the second.
    pub lag: i64,
    /// Messages and MiB in every process queue at the end of the second.
    pub cached: u64,
    pub cached_mib: f64,
    /// Born → consume start, µs, this second (empty before the measured window).
    pub e2e: Option<Histogram<u64>>,
    /// Stored → consume start, µs, this second.
    pub stored_e2e: Option<Histogram<u64>>,
}

/// A job's consumer figures: the `consumed` … `stored_e2e_p99_ms` columns of summary.csv.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsumerFigures {
    /// Consume starts over the whole job (duplicates included).
    pub consumed: u64,
    /// Consume starts per second over the measured window.
    pub consume_rate: f64,
    /// Distinct prefill messages per second from the first pull to the backlog's last message;
    /// None without a prefill or when the backlog did not drain.
    pub drain_rate: Option<f64>,
    pub fc: [u64; 4],
    pub lag_max: i64,
    /// Messages acknowledged by the broker and never consumed by the end of the drain; None
    /// without acknowledgements (oneway sends).
    pub lost: Option<u64>,
    pub duplicates: u64,
    /// Born → consume start p50, p99, p99.9 in µs.
    pub e2e_us: [u64; 3],
    pub stored_e2e_p99_us: u64,
    pub cached_max: u64,
    pub cached_mib_max: f64,
    /// found, not found, retry immediately, offset moved, errors.
    pub pulls: [u64; 5],
    /// Pull answers with code 2 (and 1 `[PC_SYNCHRONIZED]`) by busy class.
    pub pull_busy: [u64; 6],
    pub decode_errors: u64,
    /// Consumed messages that no producer of this job sent.
    pub foreign: u64,
    /// Whether every acknowledged message was consumed (and the lag was 0) within the drain.
    pub drained: bool,
    /// Lag when the drain ended.
    pub lag_at_end: i64,
    /// The longest time from a restarted broker being ready to the first consume of a message
    /// pulled from it; None without a restart (or if nothing was consumed after one).
    pub recovery: Option<std::time::Duration>,
    /// Duplicates consumed after the first restart; None without a restart.
    pub restart_duplicates: Option<u64>,
    /// Failures, retries and the DLQ.
    pub retry: RetryFigures,
    /// Per broker of the route, by name: consumed from its queues, its lag (one entry on one
    /// broker).
    pub per_broker: Vec<(String, BrokerCounts)>,
}

/// A job's failure and retry figures: the `consumer_failures` … `broker_schedule_deliver_nums`
/// columns of summary.csv.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RetryFigures {
    pub failures: u64,
    pub retries: u64,
    pub dlq: u64,
    /// Failed, neither redelivered nor in the DLQ when the drain ended.
    pub pending: u64,
    pub send_backs: u64,
    pub send_back_failed: u64,
    pub send_back_fallback: u64,
    pub suspends: u64,
    /// Failure → next delivery p50, p99, µs.
    pub delay_us: [u64; 2],
    /// The broker's SNDBCK_PUT_NUMS, SNDBCK2DLQ_TIMES, scheduleMessagePutNums and
    /// scheduleMessageDeliverNums over the job; None when the broker does not report them.
    pub broker: Option<[u64; 4]>,
}

/// One broker's share of the consumers' figures.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BrokerCounts {
    /// Messages started from this broker's queues (its retry queue included).
    pub consumed: u64,
    /// Max offset − committed offset over its queues, at the last sample.
    pub lag: i64,
    /// The largest lag sampled in the measured window.
    pub lag_max: i64,
}
