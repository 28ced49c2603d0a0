//! The JSON dialect of RocketMQ's config files. fastjson writes `Map<Integer, …>` keys without
//! quotes (`{0:250}`), which strict JSON parsers refuse; RocketMQ's own loader accepts both. We
//! read both and write what fastjson writes, so a file moves between this broker and RocketMQ.

/// Quotes bare integer object keys (`{0:1,-1:2}` → `{"0":1,"-1":2}`) outside strings, so the
/// text parses as strict JSON. Everything else is copied unchanged.
pub fn quote_integer_keys(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    let mut in_string = false;
    // After `{` or `,` (ignoring whitespace) a key may start.
    let mut key_position = false;
    while i < b.len() {
        let c = b[i];
        if in_string {
            out.push(c as char);
            if c == b'\\' && i + 1 < b.len() {
                out.push(b[i + 1] as char);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => {
                in_string = true;
                key_position = false;
                out.push('"');
                i += 1;
            }
            b'{' | b',' => {
                key_position = true;
                out.push(c as char);
                i += 1;
            }
            b' ' | b'\t' | b'\r' | b'\n' => {
                out.push(c as char);
                i += 1;
            }
            b'-' | b'0'..=b'9' if key_position => {
                let start = i;
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let mut j = i;
                while j < b.len() && b[j].is_ascii_whitespace() {
                    j += 1;
                }
                if j < b.len() && b[j] == b':' {
                    out.push('"');
                    out.push_str(&text[start..i]);
                    out.push('"');
                } else {
                    out.push_str(&text[start..i]);
                }
                key_position = false;
            }
            _ => {
                key_position = false;
                // Multi-byte UTF-8 outside strings cannot occur in valid JSON; copy bytes as
                // chars of the original text to stay lossless.
                let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
                out.push(ch);
                i += ch.len_utf8().max(1);
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

    #[test]
    fn bare_integer_keys_are_quoted_and_strings_left_alone() {
        let text = r#"{"offsetTable":{"T@G":{0:250,1:249, -1 :3},"a,{0:1}":{}}}"#;
        let fixed = quote_integer_keys(text);
        assert_eq!(
            fixed,
            r#"{"offsetTable":{"T@G":{"0":250,"1":249, "-1" :3},"a,{0:1}":{}}}"#
        );
        let v: serde_json::Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(v["offsetTable"]["T@G"]["1"], 249);
    }

    #[test]
    fn values_and_arrays_of_numbers_are_not_keys() {
        let text = "{\"a\":[1,2,3],\"b\":-5,\"c\":\"x\\\"y\"}";
        assert_eq!(quote_integer_keys(text), text);
    }

    #[test]
    fn pretty_output_uses_tabs() {
        let v = serde_json::json!({"a": {"b": 1}});
        assert_eq!(pretty_tabs(&v), "{\n\t\"a\": {\n\t\t\"b\": 1\n\t}\n}");
    }
}
