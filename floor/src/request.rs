//! The frames both sides exchange, and the few header fields the responder reads.

use bytes::BytesMut;
use remoting::headers::SendMessageRequestHeaderV2;
use remoting::message::encode_properties;
use remoting::{RemotingCommand, RequestCode, SerializeType};

/// A SEND_MESSAGE_V2 request shaped like the harness's: the Java client's one-letter header keys,
/// a `KEYS`/`WAIT` properties string and a body of `message_size` bytes.
pub fn send_frame(message_size: usize, serialize: SerializeType, opaque: i32) -> BytesMut {
    let properties = encode_properties([("KEYS", "floor-0000000000"), ("WAIT", "true")]);
    let cmd = RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, opaque)
        .with_serialize_type(serialize)
        .with_body(vec![b'x'; message_size])
        .with_header(&SendMessageRequestHeaderV2 {
            a: "floor_producer".into(),
            b: "BenchmarkTopic".into(),
            c: "TBW102".into(),
            d: 4,
            e: 0,
            f: 0,
            g: 1_700_000_000_000,
            h: 0,
            i: Some(properties),
            j: Some(0),
            k: Some(false),
            l: None,
            m: None,
            n: None,
        });
    let mut buf = BytesMut::new();
    cmd.encode(&mut buf);
    buf
}

/// `code`, `opaque` and whether the request is oneway, read from a header without decoding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peek {
    pub code: i32,
    pub opaque: i32,
    pub oneway: bool,
}

const FLAG_ONEWAY: i32 = remoting::FLAG_ONEWAY;

/// Reads the three fields from a header of either serialization; `None` when the header is not
/// in the expected shape (the caller then decodes it in full).
///
/// JSON: RocketMQ writes keys in alphabetical order, so the top-level `flag` and `opaque` come
/// after `extFields`; searching from the end finds them and never a key inside `extFields`. A
/// quote inside a string value is escaped, so `"opaque":` cannot occur inside one.
pub fn peek(serialize_type: u8, header: &[u8]) -> Option<Peek> {
    if serialize_type == SerializeType::RocketMq.as_byte() {
        // code i16, language u8, version i16, opaque i32, flag i32 (reference §1.4).
        if header.len() < 13 {
            return None;
        }
        let code = i16::from_be_bytes([header[0], header[1]]) as i32;
        let opaque = i32::from_be_bytes([header[5], header[6], header[7], header[8]]);
        let flag = i32::from_be_bytes([header[9], header[10], header[11], header[12]]);
        return Some(Peek {
            code,
            opaque,
            oneway: flag & FLAG_ONEWAY != 0,
        });
    }
    let code = int_after(header, b"{\"code\":", Find::First)?;
    let opaque = int_after(header, b"\"opaque\":", Find::Last)?;
    let flag = int_after(header, b"\"flag\":", Find::Last)?;
    Some(Peek {
        code,
        opaque,
        oneway: flag & FLAG_ONEWAY != 0,
    })
}

enum Find {
    First,
    Last,
}

fn int_after(hay: &[u8], key: &[u8], find: Find) -> Option<i32> {
    let mut windows = hay.windows(key.len());
    let pos = match find {
        Find::First => windows.position(|w| w == key)?,
        Find::Last => windows.rposition(|w| w == key)?,
    };
    let rest = &hay[pos + key.len()..];
    let (negative, digits) = match rest.first() {
        Some(b'-') => (true, &rest[1..]),
        _ => (false, rest),
    };
    let len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    if len == 0 || len > 10 {
        return None;
    }
    let value: i64 = std::str::from_utf8(&digits[..len]).ok()?.parse().ok()?;
    let value = if negative { -value } else { value };
    i32::try_from(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::decode_frame;

    fn header_of(frame: &BytesMut) -> (u8, Vec<u8>) {
        let mark = u32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
        let len = (mark & 0x00FF_FFFF) as usize;
        ((mark >> 24) as u8, frame[8..8 + len].to_vec())
    }

    #[test]
    fn peek_agrees_with_full_decode_for_both_serializations() {
        for serialize in [SerializeType::Json, SerializeType::RocketMq] {
            for opaque in [0, 7, 123_456, i32::MAX, -5] {
                let mut frame = send_frame(128, serialize, opaque);
                let (ty, header) = header_of(&frame);
                let peeked = peek(ty, &header).expect("well-formed header");
                let full = decode_frame(&mut frame, 1 << 20).unwrap().unwrap();
                assert_eq!(peeked.code, full.code);
                assert_eq!(peeked.opaque, full.opaque);
                assert_eq!(peeked.oneway, full.is_oneway());
            }
        }
    }

    #[test]
    fn peek_sees_oneway_and_ignores_ext_fields_named_like_top_level_keys() {
        let mut ext = std::collections::BTreeMap::new();
        ext.insert("opaque".to_string(), "99".to_string());
        let cmd = RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, 42)
            .with_ext_fields(ext)
            .with_oneway();
        let mut buf = BytesMut::new();
        cmd.encode(&mut buf);
        let (ty, header) = header_of(&buf);
        let p = peek(ty, &header).unwrap();
        assert_eq!((p.opaque, p.oneway), (42, true));
    }

    #[test]
    fn peek_refuses_garbage() {
        assert_eq!(peek(0, b"not json"), None);
        assert_eq!(peek(1, b"short"), None);
        assert_eq!(
            peek(0, b"{\"code\":99999999999,\"flag\":0,\"opaque\":1}"),
            None
        );
    }
}
