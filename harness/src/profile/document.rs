//! The whole profile document: the strict serde pass, the domain checks located in the
//! source text, matrix axes and `--set` overrides.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::ab::{AbSettings, RawAb};
use super::diagnostics::{
    did_you_mean, find_key_span, find_quoted_key_span, help_for, line_col, ProfileError, Source,
};
use super::settings::{Order, Validity, KEY_METRICS};
use super::value::{is_scalar, parse_set_value, value_string};
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
    #[allow(dead_code)]
    gate: Option<toml::Value>,
    ab: Option<RawAb>,
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
    /// Where each broker key was given, for messages about it found later (against the
    /// broker's own key list): `file:line:column` of the `[broker]` key or the matrix axis, or
    /// `--set broker.k=v`. Keyed by the bare broker.conf key.
    pub broker_origins: BTreeMap<String, String>,
    /// The `[ab]` table, for `harness ab`; None when the profile has none (defaults apply).
    pub ab: Option<AbSettings>,
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

        let locate = |span: std::ops::Range<usize>| {
            let (line, column) = line_col(text, span.start);
            format!("{file}:{line}:{column}")
        };
        let mut broker_origins = BTreeMap::new();
        let mut broker = BTreeMap::new();
        for (k, v) in raw.broker.iter().flatten() {
            let key_span = find_key_span(text, "broker", k).unwrap_or_else(|| v.span());
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
            check_axis(key, &values, &workload_table, &broker)
                .map_err(|(m, h)| src.err(span.clone(), m, h))?;
            if let Some(k) = key.strip_prefix("broker.") {
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

        let ab = match raw.ab {
            Some(r) => Some(r.validate().map_err(|(m, h, span)| src.err(span, m, h))?),
            None => None,
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
            broker_origins,
            ab,
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
            self.broker_origins
                .insert(k.to_owned(), format!("--set {}", arg.trim()));
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
