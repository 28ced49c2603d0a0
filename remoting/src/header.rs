//! The two header serializations (reference §1.3, §1.4).

use std::collections::BTreeMap;

use bytes::{BufMut, BytesMut};
use serde::Deserialize;

use crate::{code::LanguageCode, error::DecodeError, fastjson::lenient};

/// The header fields of a command, borrowed for encoding.
pub(crate) struct HeaderFields<'a> {
    pub code: i32,
    pub language: LanguageCode,
    pub version: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<&'a str>,
    pub ext_fields: &'a BTreeMap<String, String>,
}

/// The header fields of a command, owned after decoding.
pub(crate) struct DecodedHeader {
    pub code: i32,
    pub language: LanguageCode,
    pub version: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<String>,
    pub ext_fields: BTreeMap<String, String>,
}

fn put_json_string(dst: &mut BytesMut, s: &str) {
    // serde_json escapes exactly as a JSON string must be escaped; writing into a Vec cannot fail.
    let escaped = serde_json::to_string(s).expect("string serialization is infallible");
    dst.put_slice(escaped.as_bytes());
}

/// fastjson's layout: keys in alphabetical order, null fields omitted, enums by name.
pub(crate) fn encode_json(h: &HeaderFields<'_>, dst: &mut BytesMut) {
    dst.put_slice(b"{\"code\":");
    dst.put_slice(h.code.to_string().as_bytes());
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
    dst.put_slice(h.flag.to_string().as_bytes());
    dst.put_slice(b",\"language\":");
    match h.language.name() {
        Some(name) => put_json_string(dst, name),
        None => dst.put_slice(h.language.0.to_string().as_bytes()),
    }
    dst.put_slice(b",\"opaque\":");
    dst.put_slice(h.opaque.to_string().as_bytes());
    if let Some(remark) = h.remark {
        dst.put_slice(b",\"remark\":");
        put_json_string(dst, remark);
    }
    dst.put_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    dst.put_slice(h.version.to_string().as_bytes());
    dst.put_u8(b'}');
}

/// Read as fastjson reads it: numbers may come as strings, unknown fields are ignored.
#[derive(Deserialize)]
struct JsonHeader {
    #[serde(deserialize_with = "lenient::int")]
    code: i32,
    #[serde(default)]
    language: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "lenient::opt_int")]
    version: Option<i32>,
    #[serde(default, deserialize_with = "lenient::opt_int")]
    opaque: Option<i32>,
    #[serde(default, deserialize_with = "lenient::opt_int")]
    flag: Option<i32>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    remark: Option<String>,
    #[serde(default, rename = "extFields")]
    ext_fields: Option<BTreeMap<String, serde_json::Value>>,
}

pub(crate) fn decode_json(bytes: &[u8]) -> Result<DecodedHeader, DecodeError> {
    let h: JsonHeader =
        serde_json::from_slice(bytes).map_err(|e| DecodeError::BadJson(e.to_string()))?;
    let language = match h.language {
        None | Some(serde_json::Value::Null) => LanguageCode::JAVA,
        Some(serde_json::Value::String(name)) => LanguageCode::from_name(&name)
            .ok_or_else(|| DecodeError::BadJson(format!("unknown language {name:?}")))?,
        Some(serde_json::Value::Number(n)) => n
            .as_u64()
            .and_then(|v| u8::try_from(v).ok())
            .map(LanguageCode)
            .ok_or_else(|| DecodeError::BadJson(format!("bad language {n}")))?,
        Some(other) => return Err(DecodeError::BadJson(format!("bad language {other}"))),
    };
    // Java writes every ext value as a string; be lenient with numbers and booleans.
    let ext_fields = h
        .ext_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(k, v)| match v {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) => Some((k, s)),
            other => Some((k, other.to_string())),
        })
        .collect();
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
