//! The text form of fastjson's output. fastjson writes `Map<Integer|Long, …>` keys without
//! quotes (`{0:250}`), which strict JSON parsers refuse and RocketMQ's own parser accepts; we read
//! both, and pretty-print config files with tabs as `toJSONString(obj, true)` does.

use serde::de::DeserializeOwned;

/// Decodes a body as fastjson would: UTF-8 text, bare integer keys allowed. The lenient field
/// conversions live in the target type (see [`super::lenient`] and [`super::enums`]).
pub fn from_slice<T: DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("not UTF-8: {e}"))?;
    serde_json::from_str(&quote_integer_keys(text)).map_err(|e| e.to_string())
}

/// Quotes bare integer object keys (`{0:"a",-1:"b"}` → `{"0":"a","-1":"b"}`) outside strings;
/// everything else is copied unchanged.
pub fn quote_integer_keys(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.char_indices().peekable();
    let mut in_string = false;
    // After `{` or `,` (ignoring whitespace) a key may start.
    let mut key_position = false;
    while let Some((i, c)) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some((_, n)) = chars.next() {
                    out.push(n);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                key_position = false;
                out.push(c);
            }
            '{' | ',' => {
                key_position = true;
                out.push(c);
            }
            c if c.is_ascii_whitespace() => out.push(c),
            c if key_position && (c == '-' || c.is_ascii_digit()) => {
                let rest = &text[i..];
                let len = rest
                    .char_indices()
                    .skip(1)
                    .find(|(_, d)| !d.is_ascii_digit())
                    .map_or(rest.len(), |(j, _)| j);
                if rest[len..].trim_start().starts_with(':') {
                    out.push('"');
                    out.push_str(&rest[..len]);
                    out.push('"');
                } else {
                    out.push_str(&rest[..len]);
                }
                for _ in 1..len {
                    chars.next();
                }
                key_position = false;
            }
            _ => {
                key_position = false;
                out.push(c);
            }
        }
    }
    out
}

/// Pretty-prints `value` the way fastjson's `toJSONString(obj, true)` looks: tab indentation,
/// keys in the value's order (the callers build sorted maps).
pub fn pretty_tabs(value: &serde_json::Value) -> String {
    use serde::Serialize;
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"\t");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    // Serializing a Value into a Vec cannot fail.
    let _ = value.serialize(&mut ser);
    String::from_utf8(buf).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn integer_keys_are_quoted_only_in_key_position() {
        assert_eq!(
            quote_integer_keys(r#"{0:"a", -12 :"b","k":[1,2],"s":"{3:4}"}"#),
            r#"{"0":"a", "-12" :"b","k":[1,2],"s":"{3:4}"}"#
        );
        assert_eq!(quote_integer_keys(r#"{"é":{7:"ü"}}"#), r#"{"é":{"7":"ü"}}"#);
        let text = r#"{"offsetTable":{"T@G":{0:250,1:249, -1 :3},"a,{0:1}":{}}}"#;
        assert_eq!(
            quote_integer_keys(text),
            r#"{"offsetTable":{"T@G":{"0":250,"1":249, "-1" :3},"a,{0:1}":{}}}"#
        );
    }

    #[test]
    fn values_and_arrays_of_numbers_are_not_keys() {
        let text = "{\"a\":[1,2,3],\"b\":-5,\"c\":\"x\\\"y\",\"d\":[10,{2:3}]}";
        assert_eq!(
            quote_integer_keys(text),
            "{\"a\":[1,2,3],\"b\":-5,\"c\":\"x\\\"y\",\"d\":[10,{\"2\":3}]}"
        );
    }

    #[test]
    fn pretty_output_uses_tabs() {
        let v = serde_json::json!({"a": {"b": 1}});
        assert_eq!(pretty_tabs(&v), "{\n\t\"a\": {\n\t\t\"b\": 1\n\t}\n}");
    }

    #[test]
    fn from_slice_names_what_is_wrong() {
        assert!(from_slice::<serde_json::Value>(b"{nope")
            .unwrap_err()
            .contains("key must be a string"));
        assert!(from_slice::<serde_json::Value>(&[0xff])
            .unwrap_err()
            .starts_with("not UTF-8"));
    }

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            any::<i64>().prop_map(serde_json::Value::from),
            any::<bool>().prop_map(serde_json::Value::from),
            "[ -~]{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                prop::collection::btree_map("[a-z0-9{}:, -]{0,6}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Bare integer keys (as fastjson writes them) inside any JSON value.
    fn with_bare_keys(v: &serde_json::Value) -> String {
        match v {
            serde_json::Value::Object(m) => {
                let parts: Vec<String> = m
                    .iter()
                    .map(|(k, v)| {
                        let key = if k.parse::<i64>().is_ok() {
                            k.clone()
                        } else {
                            serde_json::Value::String(k.clone()).to_string()
                        };
                        format!("{key}:{}", with_bare_keys(v))
                    })
                    .collect();
                format!("{{{}}}", parts.join(","))
            }
            serde_json::Value::Array(a) => {
                let parts: Vec<String> = a.iter().map(with_bare_keys).collect();
                format!("[{}]", parts.join(","))
            }
            other => other.to_string(),
        }
    }

    proptest! {
        /// Strict JSON passes through unchanged; fastjson's bare keys read back as the value.
        #[test]
        fn quoting_is_identity_on_json_and_repairs_bare_keys(
            v in json_value(),
            keys in prop::collection::btree_map(-1000i64..1000, any::<i64>(), 0..4),
        ) {
            let strict = v.to_string();
            prop_assert_eq!(quote_integer_keys(&strict), strict.clone());
            let mut with_ints = serde_json::Map::new();
            with_ints.insert("v".into(), v);
            with_ints.insert(
                "m".into(),
                serde_json::Value::Object(
                    keys.iter().map(|(k, x)| (k.to_string(), (*x).into())).collect(),
                ),
            );
            let value = serde_json::Value::Object(with_ints);
            let bare = with_bare_keys(&value);
            prop_assert_eq!(from_slice::<serde_json::Value>(bare.as_bytes()), Ok(value));
        }
    }
}
