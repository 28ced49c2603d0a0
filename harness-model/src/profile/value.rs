//! Scalar TOML values as they travel from a profile to broker.conf and the CSV `param_`
//! columns.

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

pub(super) fn is_scalar(v: &toml::Value) -> bool {
    matches!(
        v,
        toml::Value::String(_)
            | toml::Value::Integer(_)
            | toml::Value::Float(_)
            | toml::Value::Boolean(_)
    )
}
