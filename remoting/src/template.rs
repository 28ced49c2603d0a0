//! A JSON-header frame encoded once and re-emitted with new values in a few fields.
//!
//! A load generator sends the same request millions of times with only the opaque and a few
//! ext fields changed (queue id, born timestamp, properties with UNIQ_KEY). Encoding the JSON
//! header from the map each time walks a `BTreeMap` and escapes every string; the template
//! does that once, and afterwards copies the constant bytes and writes only the changed values.
//! The result is byte-identical to [`RemotingCommand::encode`] (pinned by a property test).
//! ROCKETMQ binary headers need no template: they have no escaping and encode cheaply.
//!
//! A slot is cut out of the header by its mark ([`mark`]); the quotes around a value stay in the
//! constant bytes, so a slot may also be a part of a value ([`FrameTemplate::marked`]): a sender
//! writes a UNIQ_KEY's 12 digits into `properties`, not the whole escaped string.
//!
//! A sender whose values keep their lengths from one frame to the next can also keep the last
//! frame and patch it ([`crate::FrameCache`]).
//!
//! With credentials installed ([`crate::acl`]) the template carries `AccessKey` (and
//! `SecurityToken`) as constants and `Signature` as one more slot, computed per frame from the
//! constant and per-frame values in key order, so a templated send is signed exactly as the
//! full encoder signs it.

use bytes::{BufMut, BytesMut};
use thiserror::Error;

use crate::acl::{self, Signer};
use crate::command::{RemotingCommand, SerializeType};
use crate::header;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TemplateError {
    #[error("templates are for JSON headers only")]
    NotJson,
    #[error("the command has no ext field {0:?} to template")]
    MissingSlot(String),
    #[error("no header value holds the mark of slot {0}")]
    MissingMark(usize),
    #[error("another header value looks like the template's own marker")]
    Ambiguous,
    #[error("a signed frame's signature covers whole values: mark whole values only")]
    MarkedSigned,
}

#[derive(Debug, Clone)]
enum Part {
    Literal(usize, usize),
    Opaque,
    Slot(usize),
}

/// One signed ext value, in key order: written once, or a per-frame slot.
#[derive(Debug, Clone)]
enum Signed {
    Const(String),
    Slot(usize),
}

/// How a template signs: the credentials and the signed values in key order. The signature
/// fills the slot after the caller's slots.
#[derive(Clone)]
struct Signing {
    /// Keyed with the secret once; cloned per frame.
    signer: Signer,
    signed: Vec<Signed>,
}

impl std::fmt::Debug for Signing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signing")
            .field("signed", &self.signed.len())
            .finish_non_exhaustive()
    }
}

/// A JSON-header frame with an opaque and `slots` ext values to fill per frame.
#[derive(Debug, Clone)]
pub struct FrameTemplate {
    /// The header with its holes cut out, then the body: the last literal runs through the
    /// body, so a frame is one copy fewer.
    bytes: Vec<u8>,
    parts: Vec<Part>,
    slots: usize,
    body_len: usize,
    signing: Option<Signing>,
}

/// The mark of slot `i` inside a header value ([`FrameTemplate::marked`]). DEL is never
/// escaped by JSON, and never written by a RocketMQ client, so `\x7fN\x7f` can only be a
/// mark; the slot's bytes go where it stands, between the quotes or inside a longer value.
pub fn mark(i: usize) -> String {
    format!("\u{7f}{i}\u{7f}")
}

impl FrameTemplate {
    /// `cmd` with its ext fields named in `slots` (which must exist) and its opaque left open.
    pub fn new(cmd: &RemotingCommand, slots: &[&str]) -> Result<FrameTemplate, TemplateError> {
        if cmd.serialize_type != SerializeType::Json {
            return Err(TemplateError::NotJson);
        }
        let mut probe = cmd.clone();
        for (i, name) in slots.iter().enumerate() {
            let v = probe
                .ext_fields
                .get_mut(*name)
                .ok_or_else(|| TemplateError::MissingSlot((*name).to_owned()))?;
            *v = mark(i);
        }
        let signing = cmd.signing().map(|credentials| {
            let fields = &mut probe.ext_fields;
            fields.insert(acl::ACCESS_KEY.to_owned(), credentials.access_key.clone());
            if let Some(token) = &credentials.security_token {
                fields.insert(acl::SECURITY_TOKEN.to_owned(), token.expose().to_owned());
            }
            let signed = fields
                .iter()
                .filter(|(k, _)| acl::is_signed_field(k))
                .map(|(k, v)| match slots.iter().position(|s| s == k) {
                    Some(i) => Signed::Slot(i),
                    None => Signed::Const(v.clone()),
                })
                .collect();
            fields.insert(acl::SIGNATURE.to_owned(), mark(slots.len()));
            Signing {
                signer: Signer::new(credentials.secret_key.expose()),
                signed,
            }
        });
        let holes = slots.len() + usize::from(signing.is_some());
        FrameTemplate::build(probe, holes, signing)
    }

    /// `cmd` with [`mark`]`(0)` to `mark(count - 1)` placed by the caller inside its ext
    /// values, each once: a slot may be a part of a value, so that a value of which only a few
    /// bytes change per frame (a UNIQ_KEY's digits inside `properties`) has the rest copied as
    /// constant bytes. Slots take escaped bytes ([`FrameTemplate::encode_with`]). A frame that
    /// would be signed is refused: its signature needs whole raw values ([`FrameTemplate::new`]).
    pub fn marked(cmd: &RemotingCommand, count: usize) -> Result<FrameTemplate, TemplateError> {
        if cmd.serialize_type != SerializeType::Json {
            return Err(TemplateError::NotJson);
        }
        if cmd.signing().is_some() {
            return Err(TemplateError::MarkedSigned);
        }
        FrameTemplate::build(cmd.clone(), count, None)
    }

    /// The template of `probe`, whose values hold the marks of `holes` slots.
    fn build(
        mut probe: RemotingCommand,
        holes: usize,
        signing: Option<Signing>,
    ) -> Result<FrameTemplate, TemplateError> {
        let slots = holes - usize::from(signing.is_some());
        probe.opaque = 0;
        let mut header_bytes = BytesMut::new();
        header::encode_json(&probe.header_fields(), &mut header_bytes);
        let text = &header_bytes[..];

        // (position, length, part) of every hole, in order of position.
        let mut cuts: Vec<(usize, usize, Part)> = Vec::new();
        for i in 0..holes {
            let m = mark(i);
            let at = find(text, m.as_bytes()).ok_or(TemplateError::MissingMark(i))?;
            if find(&text[at + 1..], m.as_bytes()).is_some() {
                return Err(TemplateError::Ambiguous);
            }
            cuts.push((at, m.len(), Part::Slot(i)));
        }
        // `"opaque":0` is unique: ext values are quoted strings, remarks cannot hold a bare quote.
        let key = b"\"opaque\":0";
        let at = find(text, key).expect("encode_json always writes the opaque");
        cuts.push((at + key.len() - 1, 1, Part::Opaque));
        cuts.sort_by_key(|h| h.0);

        let mut parts = Vec::new();
        let mut pos = 0;
        for (at, len, part) in cuts {
            if at > pos {
                parts.push(Part::Literal(pos, at));
            }
            parts.push(part);
            pos = at + len;
        }
        let mut bytes = text.to_vec();
        bytes.extend_from_slice(&probe.body);
        if pos < bytes.len() {
            parts.push(Part::Literal(pos, bytes.len()));
        }
        Ok(FrameTemplate {
            bytes,
            parts,
            slots,
            body_len: probe.body.len(),
            signing,
        })
    }

    /// How many values a frame takes.
    pub(crate) fn slot_count(&self) -> usize {
        self.slots
    }

    /// Whether the frame carries a signature, computed from the raw values: such a template
    /// takes raw values only ([`FrameTemplate::encode`]).
    pub fn signs(&self) -> bool {
        self.signing.is_some()
    }

    /// The frame with `slot(i, dst)` appending slot `i`'s bytes as they stand in the header
    /// (JSON-escaped, without quotes: the template keeps those), straight into `dst`: a sender
    /// writes digits where they go, with no string in between. `None` from a signing template,
    /// which needs the raw values ([`FrameTemplate::encode`]).
    pub fn encode_with(
        &self,
        opaque: i32,
        dst: &mut BytesMut,
        slot: impl FnMut(usize, &mut BytesMut),
    ) -> Option<()> {
        if self.signing.is_some() {
            return None;
        }
        self.emit(opaque, dst, slot);
        Some(())
    }

    /// Appends the frame with `opaque` and `values` (one per slot, in slot order) to `dst`.
    ///
    /// # Panics
    /// If `values` does not hold exactly one value per slot: a programming error.
    pub fn encode(&self, opaque: i32, values: &[&str], dst: &mut BytesMut) {
        assert_eq!(values.len(), self.slots, "one value per slot");
        let signature = self.signing.as_ref().map(|s| {
            let mut signer = s.signer.clone();
            for piece in &s.signed {
                match piece {
                    Signed::Const(v) => signer.update(v.as_bytes()),
                    Signed::Slot(i) => signer.update(values[*i].as_bytes()),
                }
            }
            signer.update(&self.bytes[self.bytes.len() - self.body_len..]);
            signer.finish()
        });
        self.emit(opaque, dst, |i, dst| {
            // The slot after the caller's is the signature's.
            let value = values
                .get(i)
                .copied()
                .unwrap_or_else(|| signature.as_deref().unwrap_or_default());
            put_escaped(value, dst);
        });
    }

    /// The frame, with `slot(i, dst)` writing slot `i`.
    fn emit(&self, opaque: i32, dst: &mut BytesMut, slot: impl FnMut(usize, &mut BytesMut)) {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(opaque).as_bytes();
        self.emit_parts(dst, |dst| dst.put_slice(digits), slot);
    }

    /// The frame, with `opaque(dst)` writing the opaque's digits and `slot(i, dst)` slot `i`.
    pub(crate) fn emit_parts(
        &self,
        dst: &mut BytesMut,
        mut opaque: impl FnMut(&mut BytesMut),
        mut slot: impl FnMut(usize, &mut BytesMut),
    ) {
        // Room for the constant bytes and typical values at once, so that the copies below
        // do not grow the buffer piece by piece.
        dst.reserve(8 + 11 + self.bytes.len() + 32 * self.slots);
        let start = dst.len();
        dst.put_u64(0);
        for part in &self.parts {
            match *part {
                Part::Literal(a, b) => dst.put_slice(&self.bytes[a..b]),
                Part::Opaque => opaque(dst),
                Part::Slot(i) => slot(i, dst),
            }
        }
        let header_len = dst.len() - start - 8 - self.body_len;
        let length = (dst.len() - start - 4) as u32;
        dst[start..start + 4].copy_from_slice(&length.to_be_bytes());
        let mark =
            ((SerializeType::Json.as_byte() as u32) << 24) | (header_len as u32 & 0x00FF_FFFF);
        dst[start + 4..start + 8].copy_from_slice(&mark.to_be_bytes());
    }
}

/// `raw` JSON-escaped into `dst`, without the quotes (the template's literals hold them). The
/// escaping is serde_json's, as in the full encoder; this is the signing path, which pays an
/// HMAC per frame anyway, so the quotes are written and taken out again.
fn put_escaped(raw: &str, dst: &mut BytesMut) {
    let at = dst.len();
    // Writing into a BytesMut cannot fail.
    let _ = serde_json::to_writer((&mut *dst).writer(), raw);
    let end = dst.len();
    dst.copy_within(at + 1..end - 1, at);
    dst.truncate(end - 2);
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn refuses_binary_headers_and_missing_slots() {
        let cmd = RemotingCommand::request(310, 1).with_serialize_type(SerializeType::RocketMq);
        assert_eq!(
            FrameTemplate::new(&cmd, &[]).unwrap_err(),
            TemplateError::NotJson
        );
        let cmd = RemotingCommand::request(310, 1);
        assert_eq!(
            FrameTemplate::new(&cmd, &["e"]).unwrap_err(),
            TemplateError::MissingSlot("e".into())
        );
    }

    #[test]
    fn marks_must_be_there_once() {
        let mut ext = BTreeMap::new();
        ext.insert("i".to_string(), format!("a{}b", mark(0)));
        let cmd = RemotingCommand::request(310, 0).with_ext_fields(ext.clone());
        assert_eq!(
            FrameTemplate::marked(&cmd, 2).unwrap_err(),
            TemplateError::MissingMark(1)
        );
        ext.insert("j".to_string(), mark(0));
        let cmd = RemotingCommand::request(310, 0).with_ext_fields(ext);
        assert_eq!(
            FrameTemplate::marked(&cmd, 1).unwrap_err(),
            TemplateError::Ambiguous
        );
    }

    #[test]
    fn a_mark_inside_a_value_is_filled_in_place() {
        let mut ext = BTreeMap::new();
        let props = |key: &str| format!("WAIT\u{1}true\u{2}UNIQ_KEY\u{1}{key}\u{2}");
        ext.insert("e".to_string(), mark(0));
        ext.insert("i".to_string(), props(&mark(1)));
        let cmd = RemotingCommand::request(310, 0)
            .with_ext_fields(ext)
            .with_body(&b"hello"[..]);
        let t = FrameTemplate::marked(&cmd, 2).unwrap();
        let mut got = BytesMut::new();
        let filled = t.encode_with(9, &mut got, |i, dst| {
            dst.put_slice([&b"3"[..], b"00000000002A"][i]);
        });
        assert_eq!(filled, Some(()));
        let mut want_cmd = cmd.clone();
        want_cmd.opaque = 9;
        want_cmd.ext_fields.insert("e".into(), "3".into());
        want_cmd
            .ext_fields
            .insert("i".into(), props("00000000002A"));
        let mut want = BytesMut::new();
        want_cmd.encode(&mut want);
        assert_eq!(got, want);
    }

    #[test]
    fn equals_the_full_encoder() {
        let mut ext = BTreeMap::new();
        for (k, v) in [("a", "group"), ("e", "0"), ("g", "0"), ("i", "-")] {
            ext.insert(k.to_string(), v.to_string());
        }
        let cmd = RemotingCommand::request(310, 0)
            .with_ext_fields(ext)
            .with_body(&b"hello"[..]);
        let t = FrameTemplate::new(&cmd, &["e", "g", "i"]).unwrap();
        let props = "WAIT\u{1}true\u{2}UNIQ_KEY\u{1}ABC\u{2}";
        let mut got = BytesMut::new();
        t.encode(-17, &["3", "1700000000000", props], &mut got);
        let mut want_cmd = cmd.clone();
        want_cmd.opaque = -17;
        want_cmd.ext_fields.insert("e".into(), "3".into());
        want_cmd
            .ext_fields
            .insert("g".into(), "1700000000000".into());
        want_cmd.ext_fields.insert("i".into(), props.into());
        let mut want = BytesMut::new();
        want_cmd.encode(&mut want);
        assert_eq!(got, want);
    }
}
