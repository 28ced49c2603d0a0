//! `RemotingCommand`: one request or response, header fields plus body (reference §1.2).

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};

use crate::{
    acl,
    code::LanguageCode,
    error::{DecodeError, HeaderError},
    header::{self, HeaderFields},
    headers::CustomHeader,
};

// Re-exported: `remoting::command::{SerializeType, FLAG_*}` are the paths the crates use.
pub use crate::frame_bits::{SerializeType, FLAG_ONEWAY, FLAG_RESPONSE};

/// The remoting `version` our tools send: V4_9_4 (401), the oldest value for which name servers
/// answer standard JSON (reference §3.6).
pub const DEFAULT_VERSION: i32 = 401;

/// A decoded frame. `ext_fields` is the "custom header"; an empty map is written as absent,
/// exactly like Java's `null` map.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemotingCommand {
    pub code: i32,
    pub language: LanguageCode,
    pub version: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<String>,
    pub ext_fields: BTreeMap<String, String>,
    pub serialize_type: SerializeType,
    pub body: Bytes,
}

impl RemotingCommand {
    /// A new request with the given code and opaque; JSON header, language JAVA.
    pub fn request(code: impl Into<i32>, opaque: i32) -> Self {
        RemotingCommand {
            code: code.into(),
            version: DEFAULT_VERSION,
            opaque,
            ..Default::default()
        }
    }

    /// The response to `request`: same opaque, RESPONSE bit set, JSON header (5.x servers
    /// always answer JSON, reference §1.5).
    pub fn response_to(
        request: &RemotingCommand,
        code: impl Into<i32>,
        remark: Option<String>,
    ) -> Self {
        RemotingCommand {
            code: code.into(),
            language: LanguageCode::JAVA,
            version: request.version,
            opaque: request.opaque,
            flag: FLAG_RESPONSE,
            remark,
            ..Default::default()
        }
    }

    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    pub fn with_oneway(mut self) -> Self {
        self.flag |= FLAG_ONEWAY;
        self
    }

    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    pub fn with_serialize_type(mut self, serialize_type: SerializeType) -> Self {
        self.serialize_type = serialize_type;
        self
    }

    pub fn with_ext_fields(mut self, ext_fields: BTreeMap<String, String>) -> Self {
        self.ext_fields = ext_fields;
        self
    }

    pub fn with_remark(mut self, remark: impl Into<String>) -> Self {
        self.remark = Some(remark.into());
        self
    }

    /// Replaces `extFields` with a typed header.
    pub fn with_header(mut self, header: &impl CustomHeader) -> Self {
        self.ext_fields = header.to_ext_fields();
        self
    }

    /// Reads `extFields` as a typed header.
    pub fn header<H: CustomHeader>(&self) -> Result<H, HeaderError> {
        H::from_ext_fields(&self.ext_fields)
    }

    /// One `extFields` value.
    pub fn ext(&self, key: &str) -> Option<&str> {
        self.ext_fields.get(key).map(String::as_str)
    }

    pub(crate) fn header_fields(&self) -> HeaderFields<'_> {
        self.header_fields_with(&self.ext_fields)
    }

    fn header_fields_with<'a>(
        &'a self,
        ext_fields: &'a BTreeMap<String, String>,
    ) -> HeaderFields<'a> {
        HeaderFields {
            code: self.code,
            language: self.language,
            version: self.version,
            opaque: self.opaque,
            flag: self.flag,
            remark: self.remark.as_deref(),
            ext_fields,
        }
    }

    /// The credentials this request is to be signed with on the wire: the process-wide ones
    /// ([`acl::install`]) for a request that does not carry a `Signature` of its own.
    pub(crate) fn signing(&self) -> Option<std::sync::Arc<acl::Credentials>> {
        if self.is_response() || self.ext_fields.contains_key(acl::SIGNATURE) {
            return None;
        }
        acl::installed()
    }

    /// Appends the whole frame, length field included, to `dst`. A request is signed on the way
    /// out when credentials are installed ([`acl`]): this is the one place every request frame
    /// is written, so nothing can go out unsigned.
    pub fn encode(&self, dst: &mut BytesMut) {
        match self.signing() {
            Some(credentials) => {
                let mut fields = self.ext_fields.clone();
                credentials.sign(&mut fields, &self.body);
                self.encode_with(&fields, dst);
            }
            None => self.encode_with(&self.ext_fields, dst),
        }
    }

    fn encode_with(&self, ext_fields: &BTreeMap<String, String>, dst: &mut BytesMut) {
        let start = dst.len();
        dst.put_u32(0); // total length, patched below
        dst.put_u32(0); // serialize type + header length, patched below
        let header_start = dst.len();
        let fields = self.header_fields_with(ext_fields);
        match self.serialize_type {
            SerializeType::Json => header::encode_json(&fields, dst),
            SerializeType::RocketMq => header::encode_rocketmq(&fields, dst),
        }
        let header_len = dst.len() - header_start;
        dst.put_slice(&self.body);
        let length = (dst.len() - start - 4) as u32;
        dst[start..start + 4].copy_from_slice(&length.to_be_bytes());
        let mark =
            ((self.serialize_type.as_byte() as u32) << 24) | (header_len as u32 & 0x00FF_FFFF);
        dst[start + 4..start + 8].copy_from_slice(&mark.to_be_bytes());
    }

    /// The whole frame as bytes.
    pub fn to_bytes(&self) -> Bytes {
        let mut buf = BytesMut::with_capacity(128 + self.body.len());
        self.encode(&mut buf);
        buf.freeze()
    }

    /// Decodes a frame whose 4-byte length field has already been stripped.
    pub fn decode(frame: Bytes) -> Result<Self, DecodeError> {
        if frame.len() < 4 {
            return Err(DecodeError::FrameTooSmall(frame.len()));
        }
        let mark = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
        let serialize_type = SerializeType::from_byte((mark >> 24) as u8)?;
        let header_len = (mark & 0x00FF_FFFF) as usize;
        let available = frame.len() - 4;
        if header_len > available {
            return Err(DecodeError::HeaderBeyondFrame {
                header_len,
                available,
            });
        }
        let header_bytes = &frame[4..4 + header_len];
        let decoded = match serialize_type {
            SerializeType::Json => header::decode_json(header_bytes)?,
            SerializeType::RocketMq => header::decode_rocketmq(header_bytes)?,
        };
        Ok(RemotingCommand {
            code: decoded.code,
            language: decoded.language,
            version: decoded.version,
            opaque: decoded.opaque,
            flag: decoded.flag,
            remark: decoded.remark,
            ext_fields: decoded.ext_fields,
            serialize_type,
            body: frame.slice(4 + header_len..),
        })
    }
}
