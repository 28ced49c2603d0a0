//! The rules file: a profile's `[gate]` table, or the same keys at the top level.

use std::collections::BTreeMap;

use super::ast::Rule;
use super::error::RulesFileError;
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

fn scope_of(
    raw: BTreeMap<String, toml::Value>,
) -> Result<BTreeMap<String, String>, RulesFileError> {
    raw.into_iter()
        .map(|(k, v)| {
            let v = match v {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                value => return Err(RulesFileError::ScopeValue { key: k, value }),
            };
            Ok((k.strip_prefix("param_").unwrap_or(&k).to_string(), v))
        })
        .collect()
}

/// Parse rules from TOML text: the `[gate]` table if there is one (a profile), else the
/// top level (a standalone rules file).
pub fn parse_rules_toml(text: &str) -> Result<GateRules, RulesFileError> {
    let doc: toml::Table = text
        .parse()
        .map_err(|e| RulesFileError::Toml(Box::new(e)))?;
    let table = match doc.get("gate") {
        Some(toml::Value::Table(t)) => t.clone(),
        Some(_) => return Err(RulesFileError::GateNotATable),
        None if doc.contains_key("rules") || doc.contains_key("rule") => doc,
        None => return Err(RulesFileError::NoGate),
    };
    let raw: RawGate = toml::Value::Table(table)
        .try_into()
        .map_err(|e| RulesFileError::Gate(Box::new(e)))?;
    let mut rules = Vec::new();
    for r in raw.rules {
        rules.push(parse_rule(&r, BTreeMap::new())?);
    }
    for r in raw.rule {
        let scope = scope_of(r.scope)?;
        rules.push(parse_rule(&r.expr, scope)?);
    }
    if let Some(t) = raw.threshold {
        if !(0.0..=1000.0).contains(&t) {
            return Err(RulesFileError::Threshold(t));
        }
    }
    if let Some(a) = raw.alpha {
        if !(a > 0.0 && a < 1.0) {
            return Err(RulesFileError::Alpha(a));
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
