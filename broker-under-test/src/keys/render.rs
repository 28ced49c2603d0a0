//! The key table for other readers: `--list-keys` (JSON, for the harness) and
//! `--list-keys=markdown` (the README's table).

use serde_json::{json, Value};

use super::{
    spec::{DefaultEnv, KeyType},
    table::{cpus, KEYS},
    version::VersionProfile,
};

/// One JSON object per key; defaults are the strings `-p` prints on this machine.
pub fn list_json() -> String {
    let keys: Vec<Value> = KEYS
        .iter()
        .map(|k| {
            let (min, max, unit) = match k.ty {
                KeyType::Int { unit, min, max } => {
                    (json!(min), json!(max), json!(unit.map(|u| u.as_str())))
                }
                _ => (Value::Null, Value::Null, Value::Null),
            };
            let values = match k.ty {
                KeyType::Enum(v) => json!(v),
                _ => Value::Null,
            };
            let mut default = serde_json::Map::new();
            for profile in VersionProfile::ALL {
                let env = DefaultEnv {
                    profile,
                    cpus: cpus(),
                    send_threads: None,
                };
                default.insert(profile.to_string(), json!(k.default.value(&env)));
            }
            json!({
                "name": k.name,
                "type": k.ty.name(),
                "min": min,
                "max": max,
                "values": values,
                "unit": unit,
                "default": default,
                "ours": k.ours,
                "doc": k.doc,
            })
        })
        .collect();
    let mut out = serde_json::to_string_pretty(&Value::Array(keys)).unwrap_or_default();
    out.push('\n');
    out
}

/// The README's key table. The 4.9 column is empty where 4.9 keeps 4.3's default, the 5.3
/// column is empty where nothing changed and says "same" where it keeps 4.9's new default; a
/// 4.3 default that later releases changed is bold.
pub fn markdown() -> String {
    let mut out = String::from("| key | 4.3 | 4.9 | 5.3 | notes |\n|---|---|---|---|---|\n");
    for k in KEYS {
        let [old, mid, new] = VersionProfile::ALL.map(|p| k.default.formula(p));
        let old_cell = if old != mid || old != new {
            format!("**{old}**")
        } else {
            old.to_owned()
        };
        let mid_cell = if mid == old { "" } else { mid };
        let new_cell = match (new == mid, mid == old) {
            (true, true) => "",
            (true, false) => "same",
            (false, _) => new,
        };
        out.push_str(&format!(
            "| `{}` | {old_cell} | {mid_cell} | {new_cell} | {} |\n",
            k.name, k.doc
        ));
    }
    out
}
