//! The rules file: a profile's `[gate]` table, or the same keys at the top level.

use std::collections::BTreeMap;

use super::ast::Rule;
use super::parse::parse_rule;

/// Which invalid (`valid=false`) candidate rows are acceptable.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum AllowInvalid {
    #[default]
    None,
    All,
    /// Rows of cells matching any of these scopes.
    Cells(Vec<BTreeMap<String, String>>),
}

/// A parsed `[gate]` table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GateRules {
    pub rules: Vec<Rule>,
    pub allow_invalid: AllowInvalid,
    pub threshold_pct: Option<f64>,
    pub alpha: Option<f64>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGate {
    #[serde(default)]
    rules: Vec<String>,
    #[serde(default)]
    rule: Vec<RawRule>,
    #[serde(default, alias = "allow-invalid")]
    allow_invalid: Option<RawAllow>,
    #[serde(default)]
    threshold: Option<f64>,
    #[serde(default)]
    alpha: Option<f64>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    expr: String,
    #[serde(default, rename = "where")]
    scope: BTreeMap<String, toml::Value>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum RawAllow {
    Flag(bool),
    Cells(Vec<BTreeMap<String, toml::Value>>),
}

fn scope_of(raw: BTreeMap<String, toml::Value>) -> Result<BTreeMap<String, String>, String> {
    raw.into_iter()
        .map(|(k, v)| {
            let v = match v {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => {
                    return Err(format!(
                        "where.{k}: `{other}` must be a string, number or boolean"
                    ))
                }
            };
            Ok((k.strip_prefix("param_").unwrap_or(&k).to_string(), v))
        })
        .collect()
}

/// Parse rules from TOML text: the `[gate]` table if there is one (a profile), else the
/// top level (a standalone rules file).
pub fn parse_rules_toml(text: &str) -> Result<GateRules, String> {
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    let table = match doc.get("gate") {
        Some(toml::Value::Table(t)) => t.clone(),
        Some(_) => return Err("`gate` must be a table".to_string()),
        None if doc.contains_key("rules") || doc.contains_key("rule") => doc,
        None => {
            return Err("no [gate] table (and no top-level `rules`/`[[rule]]`) found".to_string())
        }
    };
    let raw: RawGate = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| format!("[gate]: {e}"))?;
    let mut rules = Vec::new();
    for r in raw.rules {
        rules.push(parse_rule(&r, BTreeMap::new()).map_err(|e| e.to_string())?);
    }
    for r in raw.rule {
        let scope = scope_of(r.scope)?;
        rules.push(parse_rule(&r.expr, scope).map_err(|e| e.to_string())?);
    }
    if let Some(t) = raw.threshold {
        if !(0.0..=1000.0).contains(&t) {
            return Err(format!("threshold = {t}: must be a percentage in 0..=1000"));
        }
    }
    if let Some(a) = raw.alpha {
        if !(a > 0.0 && a < 1.0) {
            return Err(format!("alpha = {a}: must be in (0, 1)"));
        }
    }
    let allow_invalid = match raw.allow_invalid {
        None | Some(RawAllow::Flag(false)) => AllowInvalid::None,
        Some(RawAllow::Flag(true)) => AllowInvalid::All,
        Some(RawAllow::Cells(v)) => {
            AllowInvalid::Cells(v.into_iter().map(scope_of).collect::<Result<Vec<_>, _>>()?)
        }
    };
    Ok(GateRules {
        rules,
        allow_invalid,
        threshold_pct: raw.threshold,
        alpha: raw.alpha,
    })
}
