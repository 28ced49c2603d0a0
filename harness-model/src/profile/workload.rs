//! The `[workload]` table: how sends are paced, shaped and retried, with the domain checks
//! serde cannot express.

use serde::{Deserialize, Serialize};

use super::diagnostics::TableError;
use super::secs::Secs;

/// Every key accepted in `[workload]`, in documentation order. Used for "did you mean" help and
/// for checking matrix axes.
pub const WORKLOAD_KEYS: &[&str] = &[
    "model",
    "rate",
    "concurrency",
    "steps",
    "duration",
    "warmup",
    "jit_warmup",
    "connections",
    "max_in_flight",
    "send_timeout",
    "header",
    "code",
    "batch",
    "oneway",
    "message_size",
    "topic",
    "queues",
    "producer_group",
    "retry",
    "retry_another_broker_when_not_store_ok",
    "create_topic",
    "latency_fault",
    "ordering",
    "order_keys",
];

/// How sends are paced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    /// Fixed rate; send `i` is due at `start + i/rate` whatever the broker does.
    #[default]
    Open,
    /// `concurrency` outstanding sends, like producer.sh threads.
    Closed,
    /// Open loop over a list of `{rate, duration}` stairs, each reported separately.
    Steps,
    /// Open-loop probes searching the highest rate that meets `[slo]` (`[knee]`, `runner::knee`).
    Knee,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum HeaderKind {
    #[default]
    Json,
    Rocketmq,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SendCode {
    /// SEND_MESSAGE_V2 (310), the Java client's default (`sendSmartMsg=true`).
    #[default]
    V2,
    /// SEND_MESSAGE (10) with long header names.
    V1,
}

/// Client retry behaviour (reference §11). Off by default so busy answers are never masked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
pub enum RetryPolicy {
    #[default]
    #[serde(rename = "none")]
    None,
    /// Java client ≤ 5.2: retries codes 17, 14, 1, 16, 204, 205 and transport errors.
    #[serde(rename = "rocketmq-4")]
    Rocketmq4,
    /// Java client ≥ 5.3.0: additionally retries SYSTEM_BUSY (2) and GO_AWAY (1500).
    #[serde(rename = "rocketmq-5.3")]
    Rocketmq53,
}

/// How the producer orders its sends (`harness::order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
pub enum SendOrdering {
    /// Queues round robin, sends pipelined, no order promised: today's producer.
    #[default]
    #[serde(rename = "none")]
    None,
    /// `order_keys` keys; a key always goes to one queue (`SelectMessageQueueByHash`), its
    /// sends are pipelined.
    #[serde(rename = "by-key")]
    ByKey,
    /// Like `by-key`, with at most one send of a key in flight (RocketMQ's ordered-message
    /// guide: synchronous sends).
    #[serde(rename = "sync-by-key")]
    SyncByKey,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Sends per second during this stair.
    pub rate: f64,
    /// Length of this stair.
    pub duration: Secs,
}

/// The `[workload]` table.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Workload {
    /// `open`, `closed` or `steps`. Default: open.
    pub model: Model,
    /// Open loop: sends per second (requests, so a batch counts once); 0 sends nothing.
    /// Default: 1000.
    pub rate: f64,
    /// Closed loop: outstanding sends. Default: 16.
    pub concurrency: u32,
    /// Steps model: the stairs. Default: none.
    pub steps: Vec<Step>,
    /// Measured window (open/closed). Default: 10s.
    pub duration: Secs,
    /// Excluded from results; runs at the (first) rate. Default: 2s.
    pub warmup: Secs,
    /// Before the schedule, on a JVM broker: the cell's own load (every stair in each window for
    /// steps, without its fault) in windows of [`super::knee::WARM_UP_WINDOW`] on the broker the job then uses,
    /// until its JIT compiled for less than [`super::knee::WARM_UP_JIT_QUIET`] of a window, at most
    /// this long (`runner::jit_job`). A JVM's first minute is spent compiling: Apache's short
    /// cells were measured with the JIT busy for 30-109% of their windows (fidelity,
    /// 7 December). A broker without a JIT (broker-under-test) skips it. Default: none.
    pub jit_warmup: Option<Secs>,
    /// TCP connections. Default: 4.
    pub connections: u32,
    /// Pipelined requests per connection. Default: 4096.
    pub max_in_flight: u32,
    /// Per-send budget (like the Java client's sendMsgTimeout). Default: 3s.
    pub send_timeout: Secs,
    /// Header serialization, `json` or `rocketmq`. Default: json.
    pub header: HeaderKind,
    /// `v2` (SEND_MESSAGE_V2, 310) or `v1` (SEND_MESSAGE, 10). Default: v2.
    pub code: SendCode,
    /// Messages per request; > 1 sends SEND_BATCH_MESSAGE (320). Default: 1.
    pub batch: u32,
    /// Oneway sends (no response expected). Default: false.
    pub oneway: bool,
    /// Body bytes per message. Default: 1024.
    pub message_size: u32,
    /// Default: "BenchmarkTopic".
    pub topic: String,
    /// Queue ids used round robin. Default: 4.
    pub queues: u32,
    /// Default: "harness_producer".
    pub producer_group: String,
    /// `none`, `rocketmq-4`, `rocketmq-5.3`. Default: none.
    pub retry: RetryPolicy,
    /// The Java producer's `retryAnotherBrokerWhenNotStoreOK`: a send answered 10
    /// FLUSH_DISK_TIMEOUT, 11 SLAVE_NOT_AVAILABLE or 12 FLUSH_SLAVE_TIMEOUT (a `SendResult`
    /// whose status is not SEND_OK, stored on the master) is sent again on another broker,
    /// within the `retry` policy's attempts and `send_timeout`. Default: false.
    pub retry_another_broker_when_not_store_ok: bool,
    /// Create the topic with UPDATE_AND_CREATE_TOPIC before the load. Default: true.
    pub create_topic: bool,
    /// The Java producer's `sendLatencyFaultEnable`: with several brokers, avoid one that
    /// answered slowly, busy or not at all for the client's fault duration (`harness::cluster`).
    /// Default: false.
    pub latency_fault: bool,
    /// `none`, `by-key` or `sync-by-key` (`harness::order`). Default: none.
    pub ordering: SendOrdering,
    /// Ordering keys (`ORDER-0` … `ORDER-<n-1>`); send `i` carries key `i mod n`. Default: 16.
    pub order_keys: u32,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            model: Model::Open,
            rate: 1000.0,
            concurrency: 16,
            steps: Vec::new(),
            duration: Secs(10.0),
            warmup: Secs(2.0),
            jit_warmup: None,
            connections: 4,
            max_in_flight: 4096,
            send_timeout: Secs(3.0),
            header: HeaderKind::Json,
            code: SendCode::V2,
            batch: 1,
            oneway: false,
            message_size: 1024,
            topic: "BenchmarkTopic".to_owned(),
            queues: 4,
            producer_group: "harness_producer".to_owned(),
            retry: RetryPolicy::None,
            retry_another_broker_when_not_store_ok: false,
            create_topic: true,
            latency_fault: false,
            ordering: SendOrdering::None,
            order_keys: 16,
        }
    }
}

impl Workload {
    /// Domain checks serde cannot express. Returns (key, message) of the first problem.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let positive = |key: &'static str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err((key, format!("`{key}` must be > 0 (got {v})")))
            }
        };
        match self.model {
            // 0 sends nothing: consumers alone on a prefilled topic (`[consumer] prefill`).
            Model::Open if self.rate == 0.0 => {}
            Model::Open | Model::Knee => positive("rate", self.rate)?,
            Model::Closed => {
                if self.concurrency == 0 {
                    return Err(("concurrency", "`concurrency` must be at least 1".into()));
                }
                if self.oneway {
                    return Err((
                        "oneway",
                        "a closed loop needs responses; use model = \"open\" with oneway = true"
                            .into(),
                    ));
                }
            }
            Model::Steps => {
                if self.steps.is_empty() {
                    return Err(("steps", "model = \"steps\" needs `steps = [{ rate = 1000, duration = \"10s\" }, ...]`".into()));
                }
                for s in &self.steps {
                    positive("steps", s.rate)?;
                    positive("steps", s.duration.0)?;
                }
            }
        }
        if self.model != Model::Steps {
            positive("duration", self.duration.0)?;
        }
        positive("send_timeout", self.send_timeout.0)?;
        if let Some(limit) = self.jit_warmup {
            if self.model == Model::Knee {
                return Err((
                    "jit_warmup",
                    "a knee search warms its broker with `[knee] warm_up`; remove `jit_warmup`"
                        .into(),
                ));
            }
            if !(limit.0.is_finite() && limit.0 >= super::knee::WARM_UP_WINDOW.0) {
                return Err((
                    "jit_warmup",
                    format!(
                        "`jit_warmup` must be at least one window, {}s (got {}s)",
                        super::knee::WARM_UP_WINDOW.0,
                        limit.0
                    ),
                ));
            }
        }
        if !(1..=256).contains(&self.connections) {
            return Err((
                "connections",
                "`connections` must be between 1 and 256".into(),
            ));
        }
        if !(1..=1_000_000).contains(&self.max_in_flight) {
            return Err((
                "max_in_flight",
                "`max_in_flight` must be between 1 and 1000000".into(),
            ));
        }
        if !(1..=1024).contains(&self.batch) {
            return Err(("batch", "`batch` must be between 1 and 1024".into()));
        }
        if !(1..=4 * 1024 * 1024).contains(&self.message_size) {
            return Err((
                "message_size",
                "`message_size` must be between 1 and 4194304 (the client's maxMessageSize)".into(),
            ));
        }
        if !(1..=1024).contains(&self.queues) {
            return Err(("queues", "`queues` must be between 1 and 1024".into()));
        }
        if self.topic.is_empty()
            || self.topic.len() > 127
            || !self
                .topic
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '%' || c == '|')
        {
            return Err((
                "topic",
                "`topic` must be 1–127 characters of [%|a-zA-Z0-9_-]".into(),
            ));
        }
        if self.oneway && self.retry != RetryPolicy::None {
            return Err((
                "retry",
                "oneway sends are never retried by the Java client; set retry = \"none\"".into(),
            ));
        }
        if self.retry_another_broker_when_not_store_ok && self.retry == RetryPolicy::None {
            return Err((
                "retry_another_broker_when_not_store_ok",
                "sending again needs attempts: the Java client's loop runs                  retryTimesWhenSendFailed + 1 times; set retry = \"rocketmq-4\" or \"rocketmq-5.3\""
                    .into(),
            ));
        }
        self.validate_ordering()
    }

    /// The `ordering` checks: what the Java client's `send(msg, selector, arg)` cannot do.
    fn validate_ordering(&self) -> Result<(), (&'static str, String)> {
        if !(1..=65_536).contains(&self.order_keys) {
            return Err((
                "order_keys",
                "`order_keys` must be between 1 and 65536".into(),
            ));
        }
        if self.ordering == SendOrdering::None {
            return Ok(());
        }
        if self.retry != RetryPolicy::None {
            return Err((
                "retry",
                "ordered sends are never retried by the Java client (send(msg, selector, arg) \
                 sends once, DefaultMQProducerImpl.sendSelectImpl); set retry = \"none\""
                    .into(),
            ));
        }
        if self.batch > 1 {
            return Err((
                "batch",
                "ordering keys are per message; use batch = 1 with `ordering`".into(),
            ));
        }
        if self.ordering == SendOrdering::SyncByKey && self.oneway {
            return Err((
                "oneway",
                "sync-by-key waits for each answer; oneway sends have none".into(),
            ));
        }
        Ok(())
    }

    /// Rate of the warm-up phase (open loop and steps).
    pub fn warmup_rate(&self) -> f64 {
        match self.model {
            Model::Steps => self.steps.first().map_or(self.rate, |s| s.rate),
            _ => self.rate,
        }
    }
}

/// Applies `key = value` to a workload table and validates the result.
pub fn workload_with(
    table: &toml::Table,
    key: &str,
    value: &toml::Value,
) -> Result<Workload, TableError> {
    let mut t = table.clone();
    t.insert(key.to_owned(), value.clone());
    let w: Workload = toml::Value::Table(t)
        .try_into()
        .map_err(|e| TableError::Toml(Box::new(e)))?;
    w.validate()
        .map_err(|(key, message)| TableError::Invalid { key, message })?;
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Workload, String> {
        let w: Workload = toml::from_str(text).map_err(|e| e.message().to_owned())?;
        w.validate().map_err(|(_, m)| m)?;
        Ok(w)
    }

    #[test]
    fn ordering_parses_and_refuses_what_the_java_client_cannot_do() {
        let w = parse("ordering = \"sync-by-key\"\norder_keys = 8").unwrap();
        assert_eq!((w.ordering, w.order_keys), (SendOrdering::SyncByKey, 8));
        assert_eq!(parse("").unwrap().ordering, SendOrdering::None);
        assert!(parse("ordering = \"by-key\"\nretry = \"rocketmq-4\"")
            .unwrap_err()
            .contains("sendSelectImpl"));
        assert!(parse("ordering = \"by-key\"\nbatch = 4").is_err());
        assert!(parse("ordering = \"sync-by-key\"\noneway = true").is_err());
        assert!(parse("ordering = \"by-key\"\noneway = true").is_ok());
        assert!(parse("order_keys = 0").is_err());
        assert!(parse("ordering = \"by-hash\"").is_err());
        // Without ordering, retries and batches stay as they were.
        assert!(parse("retry = \"rocketmq-5.3\"\nbatch = 4").is_ok());
    }
}
