//! The two header serializations (reference §1.3, §1.4).

use std::collections::BTreeMap;

use bytes::{BufMut, BytesMut};
use serde::de::{self, Visitor};
use serde::Deserialize;
use std::fmt;

use crate::{code::LanguageCode, error::DecodeError, fastjson::lenient};

pub(crate) use crate::header_fields::{DecodedHeader, HeaderFields};

fn put_json_string(dst: &mut BytesMut, s: &str) {
    // Header keys and values are nearly always plain (names, numbers, addresses): those go out
    // as they are, without serde_json's String per field (a fifth of a kept pull request's
    // encoding cost in `make floor`).
    if !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        dst.reserve(s.len() + 2);
        dst.put_u8(b'"');
        dst.put_slice(s.as_bytes());
        dst.put_u8(b'"');
        return;
    }
    // serde_json escapes exactly as a JSON string must be escaped; writing into a Vec cannot fail.
    let escaped = serde_json::to_string(s).expect("string serialization is infallible");
    dst.put_slice(escaped.as_bytes());
}

/// An integer's decimal text, without a String.
fn put_int(dst: &mut BytesMut, v: i32) {
    use std::fmt::Write as _;
    let _ = write!(dst, "{v}");
}

/// fastjson's layout: keys in alphabetical order, null fields omitted, enums by name.
pub(crate) fn encode_json(h: &HeaderFields<'_>, dst: &mut BytesMut) {
    dst.put_slice(b"{\"code\":");
    put_int(dst, h.code);
    if !h.ext_fields.is_empty() {
        dst.put_slice(b",\"extFields\":{");
        for (i, (k, v)) in h.ext_fields.iter().enumerate() {
            if i > 0 {
                dst.put_u8(b',');
            }
            put_json_string(dst, k);
            dst.put_u8(b':');
            put_json_string(dst, v);
        }
        dst.put_u8(b'}');
    }
    dst.put_slice(b",\"flag\":");
    put_int(dst, h.flag);
    dst.put_slice(b",\"language\":");
    match h.language.name() {
        Some(name) => put_json_string(dst, name),
        None => put_int(dst, i32::from(h.language.0)),
    }
    dst.put_slice(b",\"opaque\":");
    put_int(dst, h.opaque);
    if let Some(remark) = h.remark {
        dst.put_slice(b",\"remark\":");
        put_json_string(dst, remark);
    }
    dst.put_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    put_int(dst, h.version);
    dst.put_u8(b'}');
}

/// Read as fastjson reads it: numbers may come as strings, unknown fields are ignored.
#[derive(Deserialize)]
struct JsonHeader {
    #[serde(deserialize_with = "lenient::int")]
    code: i32,
    #[serde(default)]
    language: Option<Language>,
    #[serde(default, deserialize_with = "lenient::opt_int")]
    version: Option<i32>,
    #[serde(default, deserialize_with = "lenient::opt_int")]
    opaque: Option<i32>,
    #[serde(default, deserialize_with = "lenient::opt_int")]
    flag: Option<i32>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    remark: Option<String>,
    #[serde(default, rename = "extFields")]
    ext_fields: ExtFields,
}

/// `extFields` read straight into the command's map, a null value left out (and a null map
/// empty), without building a map of [`ExtValue`]s first.
#[derive(Default)]
struct ExtFields(BTreeMap<String, String>);

impl<'de> Deserialize<'de> for ExtFields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ExtFields;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of ext fields")
            }
            fn visit_unit<E: de::Error>(self) -> Result<ExtFields, E> {
                Ok(ExtFields::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<ExtFields, E> {
                Ok(ExtFields::default())
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut a: A) -> Result<ExtFields, A::Error> {
                let mut map = BTreeMap::new();
                while let Some((k, v)) = a.next_entry::<String, ExtValue>()? {
                    match v.0 {
                        Some(v) => {
                            map.insert(k, v);
                        }
                        // A later null clears an earlier value, as a map of values would.
                        None => {
                            map.remove(&k);
                        }
                    }
                }
                Ok(ExtFields(map))
            }
        }
        d.deserialize_any(V)
    }
}

/// `language` as sent: a name, or an ordinal (C++ clients).
enum Language {
    Code(LanguageCode),
    Null,
}

impl<'de> Deserialize<'de> for Language {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Language;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a language name or ordinal")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Language, E> {
                LanguageCode::from_name(name)
                    .map(Language::Code)
                    .ok_or_else(|| E::custom(format!("unknown language {name:?}")))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Language, E> {
                u8::try_from(n)
                    .map(|v| Language::Code(LanguageCode(v)))
                    .map_err(|_| E::custom(format!("bad language {n}")))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Language, E> {
                u8::try_from(n)
                    .map(|v| Language::Code(LanguageCode(v)))
                    .map_err(|_| E::custom(format!("bad language {n}")))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Language, E> {
                Err(E::custom(format!("bad language {n}")))
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Language, E> {
                Err(E::custom(format!("bad language {b}")))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Language, E> {
                Ok(Language::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Language, E> {
                Ok(Language::Null)
            }
            // An array or an object is serde's "invalid type" error.
        }
        d.deserialize_any(V)
    }
}

/// An ext field's value. Java writes every one as a string; a number, boolean, array or object
/// is kept as its JSON text and null as absent ([`lenient::opt_text`]), read straight from the
/// input (no `serde_json::Value` per field).
#[derive(Deserialize)]
struct ExtValue(#[serde(deserialize_with = "lenient::opt_text")] Option<String>);

pub(crate) fn decode_json(bytes: &[u8]) -> Result<DecodedHeader, DecodeError> {
    match crate::plain_json::decode(bytes) {
        Some(h) => Ok(h),
        None => decode_json_serde(bytes),
    }
}

/// The lenient reading, for any header ([`decode_json`] tries the plain form first).
pub(crate) fn decode_json_serde(bytes: &[u8]) -> Result<DecodedHeader, DecodeError> {
    let h: JsonHeader =
        serde_json::from_slice(bytes).map_err(|e| DecodeError::BadJson(e.to_string()))?;
    let language = match h.language {
        None | Some(Language::Null) => LanguageCode::JAVA,
        Some(Language::Code(c)) => c,
    };
    // Java writes every ext value as a string; be lenient with numbers and booleans.
    let ext_fields = h.ext_fields.0;
    Ok(DecodedHeader {
        code: h.code,
        language,
        version: h.version.unwrap_or(0),
        opaque: h.opaque.unwrap_or(0),
        flag: h.flag.unwrap_or(0),
        remark: h.remark,
        ext_fields,
    })
}

/// The ROCKETMQ binary header (reference §1.4).
pub(crate) fn encode_rocketmq(h: &HeaderFields<'_>, dst: &mut BytesMut) {
    dst.put_i16(h.code as i16);
    dst.put_u8(h.language.0);
    dst.put_i16(h.version as i16);
    dst.put_i32(h.opaque);
    dst.put_i32(h.flag);
    match h.remark {
        Some(remark) if !remark.is_empty() => {
            dst.put_i32(remark.len() as i32);
            dst.put_slice(remark.as_bytes());
        }
        _ => dst.put_i32(0),
    }
    let ext_len: usize = h
        .ext_fields
        .iter()
        .map(|(k, v)| 2 + k.len() + 4 + v.len())
        .sum();
    dst.put_i32(ext_len as i32);
    for (k, v) in h.ext_fields {
        dst.put_i16(k.len() as i16);
        dst.put_slice(k.as_bytes());
        dst.put_i32(v.len() as i32);
        dst.put_slice(v.as_bytes());
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() - self.pos < n {
            return Err(DecodeError::Truncated(what));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn i16(&mut self, what: &'static str) -> Result<i16, DecodeError> {
        let b = self.take(2, what)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }
    fn i32(&mut self, what: &'static str) -> Result<i32, DecodeError> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// A length-prefixed string; the length is checked against the whole header first, as
    /// RocketMQ 5.x does, and then against what is left.
    fn string(&mut self, len: i64, field: &'static str) -> Result<&'a str, DecodeError> {
        if len < 0 || len as usize > self.buf.len() {
            return Err(DecodeError::LengthBeyondHeader {
                field,
                len,
                header_len: self.buf.len(),
            });
        }
        let bytes = self.take(len as usize, field)?;
        std::str::from_utf8(bytes).map_err(|_| DecodeError::InvalidUtf8(field))
    }
}

pub(crate) fn decode_rocketmq(bytes: &[u8]) -> Result<DecodedHeader, DecodeError> {
    let mut r = Reader { buf: bytes, pos: 0 };
    let code = r.i16("code")? as i32;
    let language = LanguageCode(r.u8("language")?);
    let version = r.i16("version")? as i32;
    let opaque = r.i32("opaque")?;
    let flag = r.i32("flag")?;
    let remark_len = r.i32("remark length")?;
    let remark = match remark_len {
        0 => None,
        n => Some(r.string(n as i64, "remark")?.to_owned()),
    };
    let ext_len = r.i32("extFields length")?;
    if ext_len < 0 || ext_len as usize > bytes.len() - r.pos {
        return Err(DecodeError::LengthBeyondHeader {
            field: "extFields",
            len: ext_len as i64,
            header_len: bytes.len(),
        });
    }
    let ext_end = r.pos + ext_len as usize;
    let mut ext_fields = BTreeMap::new();
    while r.pos < ext_end {
        let key_len = r.i16("ext key length")?;
        let key = r.string(key_len as i64, "ext key")?;
        let value_len = r.i32("ext value length")?;
        let value = r.string(value_len as i64, "ext value")?;
        ext_fields.insert(key.to_owned(), value.to_owned());
    }
    if r.pos != ext_end {
        return Err(DecodeError::LengthBeyondHeader {
            field: "ext entry",
            len: (r.pos - (ext_end - ext_len as usize)) as i64,
            header_len: ext_len as usize,
        });
    }
    Ok(DecodedHeader {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The plain-string shortcut writes what serde_json writes, for any string.
        #[test]
        fn a_json_string_is_written_as_serde_json_writes_it(s in any::<String>()) {
            let mut dst = BytesMut::new();
            put_json_string(&mut dst, &s);
            let want = serde_json::to_string(&s).unwrap();
            prop_assert_eq!(&dst[..], want.as_bytes());
        }
    }

    #[test]
    fn ext_values_are_read_leniently_and_null_is_absent() {
        let h = decode_json(
            br#"{"code":0,"extFields":{"s":"x","n":7,"neg":-2,"f":1.5,"b":true,"z":null,"o":{"a":[1]}}}"#,
        )
        .unwrap();
        let fields = h.ext_fields;
        let got: Vec<(&str, &str)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("b", "true"),
                ("f", "1.5"),
                ("n", "7"),
                ("neg", "-2"),
                ("o", r#"{"a":[1]}"#),
                ("s", "x")
            ]
        );
    }

    #[test]
    fn a_null_or_absent_ext_map_is_empty_and_a_repeated_key_keeps_the_last() {
        for json in [
            r#"{"code":0}"#,
            r#"{"code":0,"extFields":null}"#,
            r#"{"code":0,"extFields":{}}"#,
        ] {
            assert!(
                decode_json(json.as_bytes()).unwrap().ext_fields.is_empty(),
                "{json}"
            );
        }
        let h =
            decode_json(br#"{"code":0,"extFields":{"a":"1","a":"2","b":"x","b":null}}"#).unwrap();
        assert_eq!(
            h.ext_fields.into_iter().collect::<Vec<_>>(),
            [("a".into(), "2".into())]
        );
        assert!(decode_json(br#"{"code":0,"extFields":[1]}"#).is_err());
    }

    #[test]
    fn language_by_name_by_ordinal_or_absent() {
        let lang = |json: &str| decode_json(json.as_bytes()).map(|h| h.language);
        assert_eq!(lang(r#"{"code":0,"language":"CPP"}"#), Ok(LanguageCode(1)));
        assert_eq!(lang(r#"{"code":0,"language":1}"#), Ok(LanguageCode(1)));
        assert_eq!(
            lang(r#"{"code":0,"language":null}"#),
            Ok(LanguageCode::JAVA)
        );
        assert_eq!(lang(r#"{"code":0}"#), Ok(LanguageCode::JAVA));
        for bad in [
            r#""KLINGON""#,
            "300",
            "-1",
            "1.5",
            "true",
            "[1]",
            r#"{"a":1}"#,
        ] {
            let json = format!(r#"{{"code":0,"language":{bad}}}"#);
            assert!(lang(&json).is_err(), "{bad} is not a language");
        }
    }
}
