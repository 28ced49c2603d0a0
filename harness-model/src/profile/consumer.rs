//! The `[consumer]` table: push consumers that behave like RocketMQ's `DefaultMQPushConsumer`
//! (send-path reference §12, consumer §8), their processing-time model and the drain. Every key
//! is also a matrix axis and a `--set` key as `consumer.<key>`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::diagnostics::TableError;
use super::secs::Secs;

/// Every key accepted in `[consumer]`, in documentation order.
pub const CONSUMER_KEYS: &[&str] = &[
    "group",
    "instances",
    "mode",
    "client_version",
    "consume_threads",
    "pull_batch_size",
    "consume_batch_max_size",
    "pull_threshold_for_queue",
    "pull_threshold_size_for_queue",
    "pull_threshold_for_topic",
    "pull_threshold_size_for_topic",
    "consume_concurrently_max_span",
    "flow_control_delay",
    "broker_flow_control_delay",
    "exception_delay",
    "suspend_timeout",
    "consume_from",
    "prefill",
    "drain_timeout",
    "poll_name_server_interval",
    "processing",
    "processing_time",
    "processing_percentiles",
    "stall_every",
    "stall_time",
    "pause_every",
    "pause_for",
    "join_at",
    "leave_at",
    "fail_ratio",
    "fail_every",
    "fail_until",
    "max_reconsume_times",
    "delay_level_when_next_consume",
    "suspend_current_queue_time",
];

/// `concurrently` (ConsumeMessageConcurrentlyService) or `orderly` (queue locks, one thread
/// per queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ConsumeMode {
    #[default]
    Concurrently,
    Orderly,
}

/// The Java client whose delays and lock behaviour are copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
pub enum ClientVersion {
    /// 4.3.0: exception delay 3000 ms, a new orderly queue starts unlocked.
    #[serde(rename = "4.3")]
    V43,
    /// 4.9.x: exception delay 1000 ms (4.6.0+), new orderly queues start locked (4.9.5+).
    #[default]
    #[serde(rename = "4.9")]
    V49,
    /// 5.3.x: as 4.9, plus the first pull of a new queue after 500 ms.
    #[serde(rename = "5.3")]
    V53,
}

/// Where a queue without a committed offset starts (`consumeFromWhere`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ConsumeFrom {
    /// CONSUME_FROM_LAST_OFFSET, the Java default: the broker's answer, else the max offset.
    #[default]
    Last,
    /// CONSUME_FROM_FIRST_OFFSET: the broker's answer, else 0.
    First,
}

/// How long processing one message takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Processing {
    /// Always `processing_time`.
    #[default]
    Constant,
    /// Exponentially distributed with mean `processing_time`.
    Exponential,
    /// Drawn from `processing_percentiles` (linear between the points).
    Percentiles,
}

/// One point of a processing-time distribution.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PercentilePoint {
    /// Percentile, 0–100.
    pub p: f64,
    pub time: Secs,
}

/// The `[consumer]` table.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Consumer {
    /// Consumer group. Default: "harness_consumer".
    pub group: String,
    /// Client instances, each with its own client id, connection and heartbeats. Default: 1.
    pub instances: u32,
    /// `concurrently` or `orderly`. Default: concurrently.
    pub mode: ConsumeMode,
    /// `4.3`, `4.9` or `5.3`: which Java client's delays and lock rules. Default: 4.9.
    pub client_version: ClientVersion,
    /// `consumeThreadMin`. Default: 20.
    pub consume_threads: u32,
    /// `pullBatchSize`. Default: 32.
    pub pull_batch_size: u32,
    /// `consumeMessageBatchMaxSize`. Default: 1.
    pub consume_batch_max_size: u32,
    /// `pullThresholdForQueue`, messages cached per queue. Default: 1000.
    pub pull_threshold_for_queue: i64,
    /// `pullThresholdSizeForQueue`, MiB cached per queue. Default: 100.
    pub pull_threshold_size_for_queue: i64,
    /// `pullThresholdForTopic`, −1 = off. Default: −1.
    pub pull_threshold_for_topic: i64,
    /// `pullThresholdSizeForTopic` in MiB, −1 = off. Default: −1.
    pub pull_threshold_size_for_topic: i64,
    /// `consumeConcurrentlyMaxSpan`. Default: 2000.
    pub consume_concurrently_max_span: i64,
    /// Delay after cache flow control. Default: 50ms.
    pub flow_control_delay: Secs,
    /// Delay after a broker FLOW_CONTROL (215) answer. Default: 20ms.
    pub broker_flow_control_delay: Secs,
    /// Delay after an exception or a not-locked orderly queue. Default: 3s for client 4.3, else 1s.
    pub exception_delay: Option<Secs>,
    /// Long-polling `suspendTimeoutMillis`. Default: 15s.
    pub suspend_timeout: Secs,
    /// `last` or `first`. Default: last.
    pub consume_from: ConsumeFrom,
    /// Messages sent (and acknowledged) before the consumers start. Default: 0.
    pub prefill: u64,
    /// After the producers stop, how long to wait for the consumers to catch up. Default: 30s.
    pub drain_timeout: Secs,
    /// On a cluster, how often the topic's route is read again from the name server
    /// (`pollNameServerInterval`). Default: 30s.
    pub poll_name_server_interval: Secs,
    /// `constant`, `exponential` or `percentiles`. Default: constant.
    pub processing: Processing,
    /// Constant time, or the exponential mean. Default: 0s.
    pub processing_time: Secs,
    /// `[{p = 50, time = "1ms"}, {p = 100, time = "20ms"}]`. Default: none.
    pub processing_percentiles: Vec<PercentilePoint>,
    /// One message in N takes `stall_time` (0 = never). Default: 0.
    pub stall_every: u64,
    /// Default: 10s.
    pub stall_time: Secs,
    /// All processing stalls for `pause_for` every `pause_every` (0 = never). Default: 0.
    pub pause_every: Secs,
    /// Default: 0.
    pub pause_for: Secs,
    /// Instance index → when it starts, after the load starts. Default: all at 0.
    pub join_at: BTreeMap<String, Secs>,
    /// Instance index → when it stops (persisting its offsets, unregistering). Default: never.
    pub leave_at: BTreeMap<String, Secs>,
    /// Share of deliveries whose listener returns RECONSUME_LATER, drawn per delivery, 0–1.
    /// Default: 0.
    pub fail_ratio: f64,
    /// One message in N fails on every delivery, until the DLQ (0 = none). Default: 0.
    pub fail_every: u64,
    /// Every message fails its first K deliveries (0 = none). Default: 0.
    pub fail_until: u32,
    /// `maxReconsumeTimes`; −1 is the Java default: 16 concurrently, unlimited orderly.
    /// Default: −1.
    pub max_reconsume_times: i32,
    /// The context's `delayLevelWhenNextConsume`: 0 lets the broker choose 3 + reconsumeTimes,
    /// > 0 a fixed level, < 0 straight to the DLQ. Default: 0.
    pub delay_level_when_next_consume: i32,
    /// Orderly: `suspendCurrentQueueTimeMillis` after SUSPEND_CURRENT_QUEUE_A_MOMENT, clamped
    /// to 10ms–30s. Default: 1s.
    pub suspend_current_queue_time: Secs,
}

impl Default for Consumer {
    fn default() -> Self {
        Consumer {
            group: "harness_consumer".into(),
            instances: 1,
            mode: ConsumeMode::Concurrently,
            client_version: ClientVersion::V49,
            consume_threads: 20,
            pull_batch_size: 32,
            consume_batch_max_size: 1,
            pull_threshold_for_queue: 1000,
            pull_threshold_size_for_queue: 100,
            pull_threshold_for_topic: -1,
            pull_threshold_size_for_topic: -1,
            consume_concurrently_max_span: 2000,
            flow_control_delay: Secs(0.05),
            broker_flow_control_delay: Secs(0.02),
            exception_delay: None,
            suspend_timeout: Secs(15.0),
            consume_from: ConsumeFrom::Last,
            prefill: 0,
            drain_timeout: Secs(30.0),
            poll_name_server_interval: Secs(30.0),
            processing: Processing::Constant,
            processing_time: Secs(0.0),
            processing_percentiles: Vec::new(),
            stall_every: 0,
            stall_time: Secs(10.0),
            pause_every: Secs(0.0),
            pause_for: Secs(0.0),
            join_at: BTreeMap::new(),
            leave_at: BTreeMap::new(),
            fail_ratio: 0.0,
            fail_every: 0,
            fail_until: 0,
            max_reconsume_times: -1,
            delay_level_when_next_consume: 0,
            suspend_current_queue_time: Secs(1.0),
        }
    }
}

impl Consumer {
    /// The exception / not-locked delay: `exception_delay`, else the client version's.
    pub fn exception_delay(&self) -> Duration {
        match (self.exception_delay, self.client_version) {
            (Some(d), _) => d.duration(),
            (None, ClientVersion::V43) => Duration::from_millis(3000),
            (None, _) => Duration::from_millis(1000),
        }
    }

    /// When instance `i` joins and leaves, relative to the start of the load.
    pub fn schedule_of(&self, i: u32) -> (Duration, Option<Duration>) {
        let key = i.to_string();
        (
            self.join_at
                .get(&key)
                .map_or(Duration::ZERO, |s| s.duration()),
            self.leave_at.get(&key).map(|s| s.duration()),
        )
    }

    /// Domain checks serde cannot express. Returns (key, message) of the first problem.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let at_least_one = |key: &'static str, v: u64, max: u64| {
            if (1..=max).contains(&v) {
                Ok(())
            } else {
                Err((
                    key,
                    format!("`{key}` must be between 1 and {max} (got {v})"),
                ))
            }
        };
        if self.group.is_empty() || self.group.len() > 255 {
            return Err(("group", "`group` must be 1–255 characters".into()));
        }
        at_least_one("instances", self.instances.into(), 64)?;
        at_least_one("consume_threads", self.consume_threads.into(), 1000)?;
        at_least_one("pull_batch_size", self.pull_batch_size.into(), 1024)?;
        at_least_one(
            "consume_batch_max_size",
            self.consume_batch_max_size.into(),
            1024,
        )?;
        for (key, v) in [
            ("pull_threshold_for_queue", self.pull_threshold_for_queue),
            (
                "pull_threshold_size_for_queue",
                self.pull_threshold_size_for_queue,
            ),
            (
                "consume_concurrently_max_span",
                self.consume_concurrently_max_span,
            ),
        ] {
            if !(1..=65535 * 1024).contains(&v) {
                return Err((
                    key,
                    format!("`{key}` must be between 1 and 67107840 (got {v})"),
                ));
            }
        }
        for (key, v) in [
            ("pull_threshold_for_topic", self.pull_threshold_for_topic),
            (
                "pull_threshold_size_for_topic",
                self.pull_threshold_size_for_topic,
            ),
        ] {
            if v != -1 && v < 1 {
                return Err((
                    key,
                    format!("`{key}` must be -1 (off) or at least 1 (got {v})"),
                ));
            }
        }
        if self.suspend_timeout.0 <= 0.0 || self.suspend_timeout.0 > 60.0 {
            return Err((
                "suspend_timeout",
                "`suspend_timeout` must be > 0 and at most 60s".into(),
            ));
        }
        if self.drain_timeout.0 > 3600.0 {
            return Err(("drain_timeout", "`drain_timeout` must be at most 1h".into()));
        }
        let poll = self.poll_name_server_interval.0;
        if !(0.01..=3600.0).contains(&poll) {
            return Err((
                "poll_name_server_interval",
                "`poll_name_server_interval` must be at least 10ms and at most 1h".into(),
            ));
        }
        if self.prefill > 10_000_000 {
            return Err(("prefill", "`prefill` must be at most 10000000".into()));
        }
        if self.processing == Processing::Percentiles {
            let pts = &self.processing_percentiles;
            if pts.is_empty() {
                return Err((
                    "processing_percentiles",
                    "processing = \"percentiles\" needs `processing_percentiles = [{ p = 50, time = \"1ms\" }, { p = 100, time = \"10ms\" }]`".into(),
                ));
            }
            let increasing = pts
                .windows(2)
                .all(|w| w[0].p < w[1].p && w[0].time.0 <= w[1].time.0);
            if !increasing || pts.iter().any(|x| !(0.0..=100.0).contains(&x.p)) {
                return Err((
                    "processing_percentiles",
                    "`processing_percentiles` must have p in 0–100, increasing, with non-decreasing times".into(),
                ));
            }
        }
        if (self.pause_for.0 > 0.0) != (self.pause_every.0 > 0.0)
            || (self.pause_every.0 > 0.0 && self.pause_for.0 >= self.pause_every.0)
        {
            return Err((
                "pause_for",
                "set both `pause_every` and `pause_for`, with pause_for < pause_every".into(),
            ));
        }
        for (key, map) in [("join_at", &self.join_at), ("leave_at", &self.leave_at)] {
            for k in map.keys() {
                match k.parse::<u32>() {
                    Ok(i) if i < self.instances => {}
                    _ => {
                        return Err((
                            key,
                            format!(
                                "`{key}` keys are instance numbers 0..{} (got `{k}`)",
                                self.instances
                            ),
                        ))
                    }
                }
            }
        }
        check_failure_keys(self)?;
        for (k, leave) in &self.leave_at {
            let join = self.join_at.get(k).map_or(0.0, |s| s.0);
            if leave.0 <= join {
                return Err((
                    "leave_at",
                    format!("instance {k} leaves at {leave} before it joins at {join}s"),
                ));
            }
        }
        Ok(())
    }
}

/// Applies `key = value` to a `[consumer]` table and validates the result.
pub fn consumer_with(
    table: &toml::Table,
    key: &str,
    value: &toml::Value,
) -> Result<Consumer, TableError> {
    let mut t = table.clone();
    t.insert(key.to_owned(), value.clone());
    let c: Consumer = toml::Value::Table(t)
        .try_into()
        .map_err(|e| TableError::Toml(Box::new(e)))?;
    c.validate()
        .map_err(|(key, message)| TableError::Invalid { key, message })?;
    Ok(c)
}

/// Checks a `consumer.<key>` matrix axis against the profile's `[consumer]` table.
pub fn check_consumer_axis(
    key: &str,
    values: &[toml::Value],
    table: Option<&toml::Table>,
) -> Result<(), (String, Option<String>)> {
    let Some(k) = key.strip_prefix("consumer.") else {
        return Err((format!("`{key}` is not a consumer key"), None));
    };
    let Some(table) = table else {
        return Err((
            format!("matrix axis `{key}` needs a [consumer] table"),
            Some("add `[consumer]` (it may be empty: every key has a default)".into()),
        ));
    };
    if !CONSUMER_KEYS.contains(&k) {
        let help = super::diagnostics::did_you_mean(k, CONSUMER_KEYS)
            .map_or(String::new(), |b| format!("did you mean `consumer.{b}`? "));
        return Err((
            format!("unknown consumer key `{k}` in matrix axis `{key}`"),
            Some(format!("{help}valid: {}", CONSUMER_KEYS.join(", "))),
        ));
    }
    if table.contains_key(k) {
        return Err((
            format!("`{k}` is both fixed in [consumer] and a matrix axis"),
            Some(format!(
                "remove `{k}` from [consumer] or the axis `{key}` from [matrix]"
            )),
        ));
    }
    for v in values {
        consumer_with(table, k, v)
            .map_err(|e| (format!("matrix axis `{key}`, value {v}: {e}"), None))?;
    }
    Ok(())
}

/// Range checks of the failure keys; (key, message) of the first problem.
fn check_failure_keys(c: &Consumer) -> Result<(), (&'static str, String)> {
    if !(0.0..=1.0).contains(&c.fail_ratio) {
        return Err((
            "fail_ratio",
            format!(
                "`fail_ratio` must be between 0 and 1 (got {})",
                c.fail_ratio
            ),
        ));
    }
    if c.max_reconsume_times < -1 {
        return Err((
            "max_reconsume_times",
            format!(
                "`max_reconsume_times` must be -1 (the Java default) or at least 0 (got {})",
                c.max_reconsume_times
            ),
        ));
    }
    // The broker clamps a level to its maxDelayLevel; only an absurd value is refused here.
    if c.delay_level_when_next_consume > 1000 {
        return Err((
            "delay_level_when_next_consume",
            "`delay_level_when_next_consume` must be at most 1000".into(),
        ));
    }
    if c.suspend_current_queue_time.0 < 0.0 {
        return Err((
            "suspend_current_queue_time",
            "`suspend_current_queue_time` must not be negative".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_java_clients() {
        let c: Consumer = toml::from_str("").unwrap();
        assert_eq!(c, Consumer::default());
        assert_eq!(c.exception_delay(), Duration::from_millis(1000));
        let old: Consumer = toml::from_str("client_version = \"4.3\"").unwrap();
        assert_eq!(old.exception_delay(), Duration::from_millis(3000));
        c.validate().unwrap();
    }

    #[test]
    fn bad_values_name_their_key() {
        let t: toml::Table = toml::from_str("instances = 2").unwrap();
        let e = consumer_with(
            &t,
            "join_at",
            &toml::from_str::<toml::Table>("v = { 2 = \"5s\" }").unwrap()["v"],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("instance numbers 0..2"), "{e}");
        let e =
            consumer_with(&t, "pull_threshold_for_queue", &toml::Value::Integer(0)).unwrap_err();
        assert!(matches!(
            e,
            TableError::Invalid {
                key: "pull_threshold_for_queue",
                ..
            }
        ));
        let e = e.to_string();
        assert!(e.contains("pull_threshold_for_queue"), "{e}");
        let e = consumer_with(&t, "processing", &toml::Value::String("percentiles".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("processing_percentiles"), "{e}");
        for bad in ["0s", "5ms", "3601s"] {
            let v = toml::Value::String(bad.into());
            let e = consumer_with(&t, "poll_name_server_interval", &v)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("`poll_name_server_interval` must be"),
                "{bad}: {e}"
            );
        }
        let v = toml::Value::String("200ms".into());
        let c = consumer_with(&t, "poll_name_server_interval", &v).unwrap();
        assert_eq!(
            c.poll_name_server_interval.duration(),
            Duration::from_millis(200)
        );
        let e = check_consumer_axis(
            "consumer.pull_treshold_for_queue",
            &[toml::Value::Integer(5)],
            Some(&t),
        )
        .unwrap_err();
        assert!(e.1.unwrap().contains("pull_threshold_for_queue"));
        assert!(
            check_consumer_axis("consumer.instances", &[toml::Value::Integer(3)], Some(&t))
                .is_err(),
            "fixed and swept"
        );
        assert!(
            check_consumer_axis("consumer.prefill", &[toml::Value::Integer(3)], None).is_err(),
            "no [consumer]"
        );
    }
}
