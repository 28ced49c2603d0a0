//! A benchmark profile: a typed, validated TOML document.
//!
//! Parsing happens in two passes so that errors can point at a line: a strict serde pass over
//! the source text (unknown keys, wrong types — `toml` reports the span), then domain checks
//! (`Workload::validate`, matrix axes) that report the span of the offending value. `--set`
//! overrides are applied after the strict pass and reported against the command line.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use toml::Spanned;

/// Every key accepted in `[workload]`, in documentation order. Used for "did you mean" help and
/// for checking matrix axes.
pub const WORKLOAD_KEYS: &[&str] = &[
    "model",
    "rate",
    "concurrency",
    "steps",
    "duration",
    "warmup",
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
    "create_topic",
];

/// A duration written as seconds (`5`, `0.5`) or with a unit (`"500ms"`, `"5s"`, `"2m"`).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Secs(pub f64);

impl Secs {
    pub fn duration(self) -> Duration {
        Duration::from_secs_f64(self.0.max(0.0))
    }
}

impl fmt::Display for Secs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.0)
    }
}

impl Serialize for Secs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

/// Parses `"500ms"`, `"5s"`, `"2m"`, `"1.5"` (seconds).
pub fn parse_secs(text: &str) -> Option<f64> {
    let t = text.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 0.000_001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * mult)
}

impl<'de> Deserialize<'de> for Secs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Secs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a duration: seconds as a number, or a string like \"500ms\", \"5s\", \"2m\"",
                )
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Secs, E> {
                if v < 0 {
                    return Err(E::custom("a duration cannot be negative"));
                }
                Ok(Secs(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Secs, E> {
                Ok(Secs(v as f64))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Secs, E> {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(E::custom(
                        "a duration must be a finite, non-negative number",
                    ));
                }
                Ok(Secs(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Secs, E> {
                parse_secs(v).map(Secs).ok_or_else(|| {
                    E::custom(format!(
                        "`{v}` is not a duration; write e.g. \"500ms\", \"5s\", \"2m\" or a number of seconds"
                    ))
                })
            }
        }
        d.deserialize_any(V)
    }
}

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
    /// Open loop: sends per second (requests, so a batch counts once). Default: 1000.
    pub rate: f64,
    /// Closed loop: outstanding sends. Default: 16.
    pub concurrency: u32,
    /// Steps model: the stairs. Default: none.
    pub steps: Vec<Step>,
    /// Measured window (open/closed). Default: 10s.
    pub duration: Secs,
    /// Excluded from results; runs at the (first) rate. Default: 2s.
    pub warmup: Secs,
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
    /// Create the topic with UPDATE_AND_CREATE_TOPIC before the load. Default: true.
    pub create_topic: bool,
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
            create_topic: true,
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
            Model::Open => positive("rate", self.rate)?,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Repetition rounds in cell order.
    #[default]
    Sequential,
    /// Each repetition round shuffled with `seed`.
    Randomized,
}

/// The `[validity]` table: when a run is not scored.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Validity {
    /// Generator lag p99 limit in µs. Default: 1000.
    pub max_lag_p99_us: f64,
    /// Harness CPU limit in percent of its CPUs (spin-waiting excluded). Default: 85.
    pub max_harness_cpu: f64,
    /// Achieved / target rate below which an unexplained shortfall invalidates. Default: 0.95.
    pub min_achieved_ratio: f64,
}

impl Default for Validity {
    fn default() -> Self {
        Validity {
            max_lag_p99_us: 1000.0,
            max_harness_cpu: 85.0,
            min_achieved_ratio: 0.95,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: Spanned<String>,
    description: Option<String>,
    repetitions: Option<Spanned<u32>>,
    order: Option<Order>,
    seed: Option<u64>,
    pin: Option<bool>,
    key_metric: Option<Spanned<String>>,
    workload: Option<Workload>,
    broker: Option<BTreeMap<String, Spanned<toml::Value>>>,
    matrix: Option<BTreeMap<String, Spanned<toml::Value>>>,
    validity: Option<Validity>,
    #[allow(dead_code)]
    gate: Option<toml::Value>,
}

/// One matrix axis: a `workload.<key>` or `broker.<key>` and its values, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub key: String,
    pub values: Vec<toml::Value>,
}

/// A validated profile.
#[derive(Debug, Clone)]
pub struct Profile {
    pub path: PathBuf,
    pub name: String,
    pub description: String,
    pub repetitions: u32,
    pub order: Order,
    pub seed: u64,
    pub pin: bool,
    pub key_metric: String,
    /// The `[workload]` table as written (plus `--set`), to which axis values are applied.
    pub workload_table: toml::Table,
    /// The base workload (no axis applied).
    pub workload: Workload,
    /// Fixed broker.conf keys, values as strings.
    pub broker: BTreeMap<String, String>,
    /// Axes sorted by key.
    pub axes: Vec<Axis>,
    pub validity: Validity,
}

/// Summary columns that can serve as `key_metric`.
pub const KEY_METRICS: &[&str] = &[
    "ok_rate",
    "achieved_rate",
    "busy_rate",
    "busy",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "service_p99_ms",
    "broker_cpu_avg",
    "timeouts",
];

/// Whether a larger value of `metric` is better.
pub fn higher_is_better(metric: &str) -> bool {
    matches!(metric, "ok_rate" | "achieved_rate")
}

/// A profile problem, located in the file (or on the command line for `--set`).
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read profile {file}: {source}")]
    Io {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: {message}{}", help.as_deref().map(|h| format!("\n  help: {h}")).unwrap_or_default())]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        message: String,
        help: Option<String>,
    },
    #[error("--set {arg}: {message}")]
    Set { arg: String, message: String },
}

struct Source<'a> {
    file: String,
    text: &'a str,
}

impl Source<'_> {
    fn err(
        &self,
        span: Option<Range<usize>>,
        message: impl Into<String>,
        help: Option<String>,
    ) -> ProfileError {
        let (line, column) = match span {
            Some(r) => line_col(self.text, r.start),
            None => (1, 1),
        };
        ProfileError::Invalid {
            file: self.file.clone(),
            line,
            column,
            message: message.into(),
            help,
        }
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Levenshtein distance, for "did you mean".
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The closest candidate within a small edit distance.
pub fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (distance(word, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Adds "did you mean" / valid keys to serde's unknown-field and unknown-variant messages.
fn help_for(message: &str) -> Option<String> {
    let quoted: Vec<&str> = message.split('`').skip(1).step_by(2).collect();
    let (bad, valid) = quoted.split_first()?;
    if !(message.starts_with("unknown field") || message.starts_with("unknown variant")) {
        return None;
    }
    let mut help = String::new();
    if let Some(best) = did_you_mean(bad, valid) {
        help.push_str(&format!("did you mean `{best}`? "));
    }
    help.push_str(&format!("valid: {}", valid.join(", ")));
    Some(help)
}

/// Parses a `--set` value: a TOML value if it parses as one, else a bare string.
pub fn parse_set_value(text: &str) -> toml::Value {
    let doc = format!("v = {text}");
    match toml::from_str::<toml::Table>(&doc) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(text.to_owned())),
        Err(_) => toml::Value::String(text.to_owned()),
    }
}

/// The string form of a value as written into broker.conf and CSV `param_` columns.
pub fn value_string(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        other => other.to_string(),
    }
}

fn is_scalar(v: &toml::Value) -> bool {
    matches!(
        v,
        toml::Value::String(_)
            | toml::Value::Integer(_)
            | toml::Value::Float(_)
            | toml::Value::Boolean(_)
    )
}

/// Applies `key = value` to a workload table and validates the result.
pub fn workload_with(
    table: &toml::Table,
    key: &str,
    value: &toml::Value,
) -> Result<Workload, String> {
    let mut t = table.clone();
    t.insert(key.to_owned(), value.clone());
    let w: Workload = toml::Value::Table(t)
        .try_into()
        .map_err(|e: toml::de::Error| e.message().to_owned())?;
    w.validate().map_err(|(_, m)| m)?;
    Ok(w)
}

impl Profile {
    /// Reads and validates `path`, then applies `sets` (`workload.k=v`, `broker.k=v`).
    pub fn load(path: &Path, sets: &[String]) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            file: path.to_owned(),
            source,
        })?;
        Profile::parse(&text, &path.display().to_string(), path, sets)
    }

    /// Parses profile text; `file` is the name used in messages.
    pub fn parse(
        text: &str,
        file: &str,
        path: &Path,
        sets: &[String],
    ) -> Result<Profile, ProfileError> {
        let src = Source {
            file: file.to_owned(),
            text,
        };
        let doc: toml::Table =
            toml::from_str(text).map_err(|e| src.err(e.span(), e.message().trim(), None))?;
        let raw: RawProfile = toml::from_str(text).map_err(|e| {
            let msg = e.message().trim().to_owned();
            let help = help_for(&msg).or_else(|| {
                msg.starts_with("missing field `name`")
                    .then(|| "add `name = \"my-profile\"` at the top of the file".to_owned())
            });
            src.err(e.span(), msg, help)
        })?;

        let workload_table = match doc.get("workload") {
            Some(toml::Value::Table(t)) => t.clone(),
            _ => toml::Table::new(),
        };
        let workload = raw.workload.clone().unwrap_or_default();
        if let Err((key, msg)) = workload.validate() {
            // Point at the [workload] key when it was written, else at the table.
            let span = find_key_span(text, "workload", key);
            return Err(src.err(span, msg, None));
        }

        let name = raw.name.get_ref().clone();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        {
            return Err(src.err(
                Some(raw.name.span()),
                "`name` must be non-empty and use only [A-Za-z0-9._-] (it names the result folder)",
                None,
            ));
        }

        let mut broker = BTreeMap::new();
        for (k, v) in raw.broker.iter().flatten() {
            if !is_scalar(v.get_ref()) {
                return Err(src.err(Some(v.span()), format!("broker key `{k}` must be a string, number or boolean (it is written into broker.conf)"), None));
            }
            broker.insert(k.clone(), value_string(v.get_ref()));
        }

        let mut axes = Vec::new();
        for (key, v) in raw.matrix.iter().flatten() {
            let span = Some(v.span());
            let values = match v.get_ref() {
                toml::Value::Array(a) => a.clone(),
                _ => {
                    return Err(src.err(
                        span,
                        format!("matrix axis `{key}` must be a list of values"),
                        Some(format!("\"{key}\" = [a, b]")),
                    ))
                }
            };
            if values.is_empty() {
                return Err(src.err(
                    span,
                    format!("matrix axis `{key}` is empty"),
                    Some("give at least one value, or remove the axis".into()),
                ));
            }
            check_axis(key, &values, &workload_table, &broker)
                .map_err(|(m, h)| src.err(span.clone(), m, h))?;
            axes.push(Axis {
                key: key.clone(),
                values,
            });
        }

        let key_metric = match &raw.key_metric {
            Some(m) if !KEY_METRICS.contains(&m.get_ref().as_str()) => {
                let help = did_you_mean(m.get_ref(), KEY_METRICS)
                    .map_or(String::new(), |b| format!("did you mean `{b}`? "));
                return Err(src.err(
                    Some(m.span()),
                    format!("unknown key_metric `{}`", m.get_ref()),
                    Some(format!("{help}valid: {}", KEY_METRICS.join(", "))),
                ));
            }
            Some(m) => m.get_ref().clone(),
            None => "ok_rate".to_owned(),
        };
        let repetitions = match &raw.repetitions {
            Some(r) if *r.get_ref() == 0 => {
                return Err(src.err(Some(r.span()), "`repetitions` must be at least 1", None))
            }
            Some(r) => *r.get_ref(),
            None => 1,
        };

        let mut profile = Profile {
            path: path.to_owned(),
            name,
            description: raw.description.unwrap_or_default(),
            repetitions,
            order: raw.order.unwrap_or_default(),
            seed: raw.seed.unwrap_or(1),
            pin: raw.pin.unwrap_or(true),
            key_metric,
            workload_table,
            workload,
            broker,
            axes,
            validity: raw.validity.unwrap_or_default(),
        };
        for arg in sets {
            profile.apply_set(arg)?;
        }
        Ok(profile)
    }

    /// `workload.k=v` or `broker.k=v`; on an axis key the axis collapses to that one value.
    pub fn apply_set(&mut self, arg: &str) -> Result<(), ProfileError> {
        let set_err = |message: String| ProfileError::Set {
            arg: arg.to_owned(),
            message,
        };
        let (key, value) = arg.split_once('=').ok_or_else(|| {
            set_err(
                "expected key=value, e.g. workload.rate=5000 or broker.sendMessageThreadPoolNums=4"
                    .into(),
            )
        })?;
        let key = key.trim();
        let value = parse_set_value(value.trim());
        self.axes.retain(|a| a.key != key);
        if let Some(k) = key.strip_prefix("workload.") {
            if !WORKLOAD_KEYS.contains(&k) {
                let help = did_you_mean(k, WORKLOAD_KEYS).map_or(String::new(), |b| {
                    format!(" (did you mean `workload.{b}`?)")
                });
                return Err(set_err(format!("unknown workload key `{k}`{help}")));
            }
            self.workload = workload_with(&self.workload_table, k, &value).map_err(set_err)?;
            self.workload_table.insert(k.to_owned(), value);
        } else if let Some(k) = key.strip_prefix("broker.") {
            if k.is_empty() || !is_scalar(&value) {
                return Err(set_err(
                    "a broker key needs a name and a scalar value".into(),
                ));
            }
            self.broker.insert(k.to_owned(), value_string(&value));
        } else {
            return Err(set_err(
                "the key must start with `workload.` or `broker.`".into(),
            ));
        }
        // Axis values were checked against the old base; check them again.
        for axis in &self.axes {
            check_axis(&axis.key, &axis.values, &self.workload_table, &self.broker)
                .map_err(|(m, _)| set_err(m))?;
        }
        Ok(())
    }

    /// Whether any axis varies a broker key (an error with `--target`).
    pub fn broker_axes(&self) -> Vec<&str> {
        self.axes
            .iter()
            .filter(|a| a.key.starts_with("broker."))
            .map(|a| a.key.as_str())
            .collect()
    }
}

fn check_axis(
    key: &str,
    values: &[toml::Value],
    workload: &toml::Table,
    broker: &BTreeMap<String, String>,
) -> Result<(), (String, Option<String>)> {
    if let Some(k) = key.strip_prefix("workload.") {
        if !WORKLOAD_KEYS.contains(&k) {
            let help = did_you_mean(k, WORKLOAD_KEYS)
                .map_or(String::new(), |b| format!("did you mean `workload.{b}`? "));
            return Err((
                format!("unknown workload key `{k}` in matrix axis `{key}`"),
                Some(format!("{help}valid: {}", WORKLOAD_KEYS.join(", "))),
            ));
        }
        if workload.contains_key(k) {
            return Err((
                format!("`{k}` is both fixed in [workload] and a matrix axis"),
                Some(format!(
                    "remove `{k}` from [workload] or the axis `{key}` from [matrix]"
                )),
            ));
        }
        for v in values {
            workload_with(workload, k, v)
                .map_err(|m| (format!("matrix axis `{key}`, value {v}: {m}"), None))?;
        }
    } else if let Some(k) = key.strip_prefix("broker.") {
        if k.is_empty() {
            return Err((
                "empty broker key in matrix".into(),
                Some("write \"broker.<broker.conf key>\" = [..]".into()),
            ));
        }
        if broker.contains_key(k) {
            return Err((
                format!("`{k}` is both fixed in [broker] and a matrix axis"),
                Some(format!(
                    "remove `{k}` from [broker] or the axis `{key}` from [matrix]"
                )),
            ));
        }
        if let Some(bad) = values.iter().find(|v| !is_scalar(v)) {
            return Err((
                format!("matrix axis `{key}`: value {bad} is not a string, number or boolean"),
                None,
            ));
        }
    } else {
        let help = format!("write \"workload.{key}\" or \"broker.{key}\"");
        return Err((
            format!("matrix axis `{key}` must start with `workload.` or `broker.`"),
            Some(help),
        ));
    }
    Ok(())
}

/// Best-effort span of `key = ...` inside `[table]`, for domain errors found after parsing.
fn find_key_span(text: &str, table: &str, key: &str) -> Option<Range<usize>> {
    let header = format!("[{table}]");
    let start = text.find(&header)?;
    for line in text[start..].split_inclusive('\n').skip(1) {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') && !trimmed.starts_with("[[") {
            break;
        }
        if let Some(rest) = trimmed.strip_prefix(key) {
            if rest.trim_start().starts_with('=') {
                let pos = text[start..].find(line).map(|p| start + p)?;
                return Some(pos..pos + line.len());
            }
        }
    }
    Some(start..start + header.len())
}
