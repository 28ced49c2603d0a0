//! The whole profile document: the strict serde pass, the domain checks located in the
//! source text and the matrix axes (`--set` overrides are in set.rs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::ab::{AbSettings, RawAb};
use super::auth::{AuthSection, RawAuth};
use super::cluster::ClusterSpec;
use super::consumer::{check_consumer_axis, Consumer};
use super::diagnostics::{
    did_you_mean, find_key_span, find_quoted_key_span, help_for, line_col, ProfileError,
    SectionError, Source,
};
use super::fault::{fault_plan, fault_with, FaultPlan};
use super::knee::Knee;
use super::settings::{Order, Validity, KEY_METRICS};
use super::slo::{RawSlo, Slo};
use super::value::{is_scalar, value_string};
use super::version_table::version_keys;
use super::workload::{workload_with, Workload, WORKLOAD_KEYS};

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
    consumer: Option<Consumer>,
    knee: Option<Knee>,
    slo: Option<RawSlo>,
    cluster: Option<Spanned<ClusterSpec>>,
    #[allow(dead_code)]
    gate: Option<toml::Value>,
    /// Read from the document table by `profile/fault.rs`; named here so it is not unknown.
    #[allow(dead_code)]
    fault: Option<toml::Table>,
    ab: Option<RawAb>,
    auth: Option<RawAuth>,
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
    /// `[broker."<version>"]`: keys only for the cells whose `version` is that one (the model
    /// imitating it and Apache's JVM alike), over `[broker]`'s: a key one release has and the
    /// other refuses (5.3's `inSyncReplicas`). A matrix axis may not set them too. Default: none.
    pub broker_by_version: BTreeMap<String, BTreeMap<String, String>>,
    /// Axes sorted by key.
    pub axes: Vec<Axis>,
    pub validity: Validity,
    /// `[knee]`: the search of `model = "knee"` (defaults when absent).
    pub knee: Knee,
    /// `[slo]`: what a knee probe must meet; required by `model = "knee"`.
    pub slo: Option<Slo>,
    /// Where each broker key was given, for messages about it found later (against the
    /// broker's own key list): `file:line:column` of the `[broker]` key or the matrix axis, or
    /// `--set broker.k=v`. Keyed by the bare broker.conf key.
    pub broker_origins: BTreeMap<String, String>,
    /// The `[consumer]` table as written (plus `--set`), to which axis values are applied;
    /// None without consumers.
    pub consumer_table: Option<toml::Table>,
    /// The base consumer settings (no axis applied).
    pub consumer: Option<Consumer>,
    /// The `[fault]` table as written (plus `--set fault.…`), to which axis values are applied.
    pub fault_table: toml::Table,
    /// The base fault plan (no axis applied); None without `[fault]`.
    pub fault: Option<FaultPlan>,
    /// `[cluster]`: a name server and several brokers per cell.
    pub cluster: Option<ClusterSpec>,
    /// The `[ab]` table, for `harness ab`; None when the profile has none (defaults apply).
    pub ab: Option<AbSettings>,
    /// `[auth]`: ACL credentials as written (the environment overrides them, the harness's `auth`).
    pub auth: Option<AuthSection>,
    /// `[knee]`, `[slo]` and `[ab]` as written (plus `--set`): a `--set knee.k=v` is checked
    /// against the whole table, as the file's own table is.
    pub(super) section_tables: BTreeMap<&'static str, toml::Table>,
}

/// The sections whose keys `--set` takes besides `workload.`, `broker.`, `consumer.`, `fault.`.
pub(super) const SET_SECTIONS: &[&str] = &["knee", "slo", "ab"];
/// Every prefix `--set` takes, for the message about one it does not.
pub(super) const SET_PREFIXES: &[&str] = &[
    "workload", "broker", "consumer", "fault", "knee", "slo", "ab",
];

/// `[section]` holding `table`, as TOML text for that section's own parser.
pub(super) fn section_text(section: &str, table: &toml::Table) -> String {
    let mut doc = toml::Table::new();
    doc.insert(section.to_owned(), toml::Value::Table(table.clone()));
    toml::to_string(&doc).unwrap_or_default()
}

/// `[section]` holding `table`, read by that section's own serde rules (unknown keys included).
fn section_of<T: serde::de::DeserializeOwned>(
    section: &'static str,
    table: &toml::Table,
) -> Result<T, SectionError> {
    let mut doc: BTreeMap<String, T> =
        toml::from_str(&section_text(section, table)).map_err(|error| SectionError::Toml {
            section,
            error: Box::new(error),
        })?;
    doc.remove(section).ok_or(SectionError::Missing { section })
}

pub(super) fn knee_of(table: &toml::Table) -> Result<Knee, SectionError> {
    let knee: Knee = section_of("knee", table)?;
    knee.validate()
        .map_err(|(_, message)| SectionError::Invalid {
            section: "knee",
            message,
        })?;
    Ok(knee)
}

pub(super) fn slo_of(table: &toml::Table) -> Result<Slo, SectionError> {
    Slo::from_raw(&section_of::<RawSlo>("slo", table)?).map_err(|(_, message)| {
        SectionError::Invalid {
            section: "slo",
            message,
        }
    })
}

impl Profile {
    /// Reads and validates `path`, then applies `sets` (`workload.k=v`, `broker.k=v`).
    pub fn load(path: &Path, sets: &[String]) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|error| ProfileError::Io {
            file: path.to_owned(),
            error,
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
            let help = help_for(&msg)
                .or_else(|| {
                    msg.starts_with("missing field `name`")
                        .then(|| "add `name = \"my-profile\"` at the top of the file".to_owned())
                })
                .or_else(|| {
                    // A bare dotted key such as `1.injectPutStallMillis` is a TOML table.
                    msg.contains("expected a borrowed string").then(|| {
                        "quote a per-broker key: \"1.injectPutStallMillis\" = 800".to_owned()
                    })
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

        let consumer_table = match doc.get("consumer") {
            Some(toml::Value::Table(t)) => Some(t.clone()),
            _ => None,
        };
        if let Some(c) = &raw.consumer {
            if let Err((key, msg)) = c.validate() {
                let span = find_key_span(text, "consumer", key);
                return Err(src.err(span, msg, None));
            }
        }
        let fault_table = match doc.get("fault") {
            Some(toml::Value::Table(t)) => t.clone(),
            _ => toml::Table::new(),
        };
        let fault = fault_plan(&fault_table)
            .and_then(|f| match &f {
                Some(plan) => plan.check_workload(&workload).map(|()| f),
                None => Ok(f),
            })
            .map_err(|e| {
                let key = e.key().unwrap_or("kill");
                src.err(find_key_span(text, "fault", key), e.to_string(), None)
            })?;

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

        let locate = |span: std::ops::Range<usize>| {
            let (line, column) = line_col(text, span.start);
            format!("{file}:{line}:{column}")
        };
        let mut broker_origins = BTreeMap::new();
        let mut broker = BTreeMap::new();
        let mut broker_by_version: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (k, v) in raw.broker.iter().flatten() {
            if let toml::Value::Table(t) = v.get_ref() {
                let keys =
                    version_keys(k, t).map_err(|e| src.err(Some(v.span()), e.to_string(), None))?;
                let table = format!("broker.\"{k}\"");
                for key in keys.keys() {
                    let span = find_key_span(text, &table, key).unwrap_or_else(|| v.span());
                    broker_origins
                        .entry(key.clone())
                        .or_insert_with(|| locate(span));
                }
                broker_by_version.insert(k.clone(), keys);
                continue;
            }
            // A per-broker key is written quoted (`"1.injectPutStallMillis"`).
            let key_span = if k.contains('.') {
                find_quoted_key_span(text, k)
            } else {
                find_key_span(text, "broker", k)
            }
            .unwrap_or_else(|| v.span());
            broker_origins.insert(k.clone(), locate(key_span));
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
            check_axis(
                key,
                &values,
                &workload_table,
                &broker,
                consumer_table.as_ref(),
                &fault_table,
                raw.cluster.is_some(),
            )
            .map_err(|(m, h)| src.err(span.clone(), m, h))?;
            if let Some(k) = key.strip_prefix("broker.") {
                if let Some(version) = broker_by_version.iter().find(|(_, t)| t.contains_key(k)) {
                    return Err(src.err(
                        span,
                        format!(
                            "broker key `{k}` is both a matrix axis and a key of [broker.\"{}\"]",
                            version.0
                        ),
                        Some("keep one of the two".into()),
                    ));
                }
                let axis_span = find_quoted_key_span(text, key).unwrap_or_else(|| v.span());
                broker_origins.insert(k.to_owned(), locate(axis_span));
            }
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

        let knee = raw.knee.clone().unwrap_or_default();
        if let Err((key, msg)) = knee.validate() {
            return Err(src.err(find_key_span(text, "knee", key), msg, None));
        }
        let slo = match &raw.slo {
            Some(s) => Some(Slo::from_raw(s).map_err(|(span, m)| {
                let span = (!span.is_empty())
                    .then_some(span)
                    .or_else(|| find_key_span(text, "slo", "terms"));
                src.err(span, m, None)
            })?),
            None => None,
        };
        if workload.model == super::workload::Model::Knee && slo.is_none() {
            return Err(src.err(
                find_key_span(text, "workload", "model"),
                "model = \"knee\" searches for the highest rate that meets an [slo], and there is none",
                Some("add [slo] with terms = [\"busy_rate <= 0.1%\", \"p99_ms <= 50\"]".into()),
            ));
        }

        let slaves = raw.cluster.as_ref().map_or(0, |c| c.get_ref().slaves);
        if let Some((m, fix)) = fault.as_ref().and_then(|f| f.role_problem(slaves)) {
            return Err(src.err(find_key_span(text, "fault", "role"), m, Some(fix)));
        }
        let cluster = match &raw.cluster {
            Some(c) => {
                c.get_ref().validate().map_err(|(key, m, help)| {
                    let span = find_key_span(text, "cluster", key).or(Some(c.span()));
                    src.err(span, m, help)
                })?;
                if workload.ordering != super::workload::SendOrdering::None {
                    return Err(src.err(
                        find_key_span(text, "workload", "ordering"),
                        "`ordering` selects queues of one broker; it is not supported with [cluster]",
                        None,
                    ));
                }
                Some(c.get_ref().clone())
            }
            None => None,
        };
        if let (Some(plan), Some(c)) = (&fault, &cluster) {
            let span = find_key_span(text, "fault", "broker");
            (plan.check_brokers(c.brokers as usize))
                .map_err(|e| src.err(span, e.to_string(), None))?;
        }
        if workload.jit_warmup.is_some() && (fault.is_some() || cluster.is_some()) {
            let other = if fault.is_some() {
                "[fault]"
            } else {
                "[cluster]"
            };
            return Err(src.err(
                find_key_span(text, "workload", "jit_warmup"),
                format!(
                    "`jit_warmup` warms one broker the job then keeps; with {other} the job \
                     starts (and kills) its own brokers"
                ),
                Some(format!("remove `jit_warmup`, or run without {other}")),
            ));
        }
        let ab = match raw.ab {
            Some(r) => Some(r.validate().map_err(|(m, h, span)| src.err(span, m, h))?),
            None => None,
        };
        let section_tables = SET_SECTIONS
            .iter()
            .map(|&name| match doc.get(name) {
                Some(toml::Value::Table(t)) => (name, t.clone()),
                _ => (name, toml::Table::new()),
            })
            .collect();
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
            broker_by_version,
            axes,
            validity: raw.validity.unwrap_or_default(),
            knee,
            slo,
            broker_origins,
            consumer_table,
            consumer: raw.consumer,
            fault_table,
            fault,
            cluster,
            ab,
            auth: raw.auth.map(AuthSection::from),
            section_tables,
        };
        for arg in sets {
            profile.apply_set(arg)?;
        }
        profile.check_per_broker_keys()?;
        Ok(profile)
    }
}

pub(super) fn check_axis(
    key: &str,
    values: &[toml::Value],
    workload: &toml::Table,
    broker: &BTreeMap<String, String>,
    consumer: Option<&toml::Table>,
    fault: &toml::Table,
    has_cluster: bool,
) -> Result<(), (String, Option<String>)> {
    if key == super::cluster::CLUSTER_BROKERS_AXIS {
        super::cluster::check_brokers_axis(values, has_cluster)
            .map_err(|e| (e.to_string(), None))?;
    } else if let Some(k) = key.strip_prefix("fault.") {
        if fault.contains_key(k) {
            return Err((
                format!("`{k}` is both fixed in [fault] and a matrix axis"),
                Some(format!(
                    "remove `{k}` from [fault] or the axis `{key}` from [matrix]"
                )),
            ));
        }
        for v in values {
            fault_with(fault, k, v)
                .map_err(|e| (format!("matrix axis `{key}`, value {v}: {e}"), None))?;
        }
    } else if let Some(k) = key.strip_prefix("workload.") {
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
                .map_err(|e| (format!("matrix axis `{key}`, value {v}: {e}"), None))?;
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
    } else if key.starts_with("consumer.") {
        check_consumer_axis(key, values, consumer)?;
    } else {
        let help = format!(
            "write \"workload.{key}\", \"broker.{key}\", \"consumer.{key}\" or \"fault.{key}\" (or \"cluster.brokers\")"
        );
        return Err((
            format!(
                "matrix axis `{key}` must start with `workload.`, `broker.`, `consumer.` or `fault.`, or be `cluster.brokers`"
            ),
            Some(help),
        ));
    }
    Ok(())
}
