//! A JSON-header frame encoded once and re-emitted with new values in a few fields.
//!
//! A load generator sends the same request millions of times with only the opaque and a few
//! ext fields changed (queue id, born timestamp, properties with UNIQ_KEY). Encoding the JSON
//! header from the map each time walks a `BTreeMap` and escapes every string; the template
//! does that once, and afterwards copies the constant bytes and writes only the changed values.
//! The result is byte-identical to [`RemotingCommand::encode`] (pinned by a property test).
//! ROCKETMQ binary headers need no template: they have no escaping and encode cheaply.

use bytes::{BufMut, Bytes, BytesMut};
use thiserror::Error;

use crate::command::{RemotingCommand, SerializeType};
use crate::header;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TemplateError {
    #[error("templates are for JSON headers only")]
    NotJson,
    #[error("the command has no ext field {0:?} to template")]
    MissingSlot(String),
    #[error("another header value looks like the template's own marker")]
    Ambiguous,
}

#[derive(Debug, Clone)]
enum Part {
    Literal(usize, usize),
    Opaque,
    Slot(usize),
}

/// A JSON-header frame with an opaque and `slots` ext values to fill per frame.
#[derive(Debug, Clone)]
pub struct FrameTemplate {
    bytes: Vec<u8>,
    parts: Vec<Part>,
    slots: usize,
    body: Bytes,
}

/// Marks a slot in the sentinel encoding: DEL is never escaped by JSON, and never written by a
/// RocketMQ client, so `"\x7fN\x7f"` can only be the sentinel.
fn sentinel(i: usize) -> String {
    format!("\u{7f}{i}\u{7f}")
}

impl FrameTemplate {
    /// `cmd` with its ext fields named in `slots` (which must exist) and its opaque left open.
    pub fn new(cmd: &RemotingCommand, slots: &[&str]) -> Result<FrameTemplate, TemplateError> {
        if cmd.serialize_type != SerializeType::Json {
            return Err(TemplateError::NotJson);
        }
        let mut probe = cmd.clone();
        probe.opaque = 0;
        for (i, name) in slots.iter().enumerate() {
            let v = probe
                .ext_fields
                .get_mut(*name)
                .ok_or_else(|| TemplateError::MissingSlot((*name).to_owned()))?;
            *v = sentinel(i);
        }
        let mut header_bytes = BytesMut::new();
        header::encode_json(&probe.header_fields(), &mut header_bytes);
        let text = &header_bytes[..];

        // (position, length, part) of every hole, in order of position.
        let mut holes: Vec<(usize, usize, Part)> = Vec::new();
        for i in 0..slots.len() {
            let quoted = format!("\"{}\"", sentinel(i));
            let at = find(text, quoted.as_bytes()).expect("the sentinel was just encoded");
            if find(&text[at + 1..], quoted.as_bytes()).is_some() {
                return Err(TemplateError::Ambiguous);
            }
            holes.push((at, quoted.len(), Part::Slot(i)));
        }
        // `"opaque":0` is unique: ext values are quoted strings, remarks cannot hold a bare quote.
        let key = b"\"opaque\":0";
        let at = find(text, key).expect("encode_json always writes the opaque");
        holes.push((at + key.len() - 1, 1, Part::Opaque));
        holes.sort_by_key(|h| h.0);

        let mut parts = Vec::new();
        let mut pos = 0;
        for (at, len, part) in holes {
            if at > pos {
                parts.push(Part::Literal(pos, at));
            }
            parts.push(part);
            pos = at + len;
        }
        if pos < text.len() {
            parts.push(Part::Literal(pos, text.len()));
        }
        Ok(FrameTemplate {
            bytes: text.to_vec(),
            parts,
            slots: slots.len(),
            body: cmd.body.clone(),
        })
    }

    /// Appends the frame with `opaque` and `values` (one per slot, in slot order) to `dst`.
    ///
    /// # Panics
    /// If `values` does not hold exactly one value per slot: a programming error.
    pub fn encode(&self, opaque: i32, values: &[&str], dst: &mut BytesMut) {
        assert_eq!(values.len(), self.slots, "one value per slot");
        let start = dst.len();
        dst.put_u32(0);
        dst.put_u32(0);
        let header_start = dst.len();
        for part in &self.parts {
            match *part {
                Part::Literal(a, b) => dst.put_slice(&self.bytes[a..b]),
                Part::Opaque => dst.put_slice(itoa(opaque, &mut [0u8; 11])),
                Part::Slot(i) => {
                    // Writing into a BytesMut cannot fail; the escaping is serde_json's, as in
                    // the full encoder.
                    let _ = serde_json::to_writer((&mut *dst).writer(), values[i]);
                }
            }
        }
        let header_len = dst.len() - header_start;
        dst.put_slice(&self.body);
        let length = (dst.len() - start - 4) as u32;
        dst[start..start + 4].copy_from_slice(&length.to_be_bytes());
        let mark =
            ((SerializeType::Json.as_byte() as u32) << 24) | (header_len as u32 & 0x00FF_FFFF);
        dst[start + 4..start + 8].copy_from_slice(&mark.to_be_bytes());
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Decimal digits of `v` in `buf`, without allocating.
fn itoa(v: i32, buf: &mut [u8; 11]) -> &[u8] {
    let mut n = (v as i64).unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn itoa_matches_display() {
        for v in [0, 7, -7, 10, 123_456, i32::MAX, i32::MIN] {
            assert_eq!(itoa(v, &mut [0u8; 11]), v.to_string().as_bytes());
        }
    }

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
