//! Message-level encodings shared by producer and broker: the properties string, the batch body
//! (reference §3.4) and the CommitLog record that PULL_MESSAGE returns (reference §7.6).

use std::net::{IpAddr, SocketAddr};

use bytes::{BufMut, BytesMut};

use crate::record::Cursor;
// Re-exported: `remoting::message::{MessageRecord, MAGIC_*, ..}` are the paths the crates use.
pub use crate::record::{
    body_crc, MessageDecodeError, MessageRecord, BLANK_MARKER_LEN, MAGIC_BLANK, MAGIC_V1, MAGIC_V2,
    SYSFLAG_BORNHOST_V6, SYSFLAG_STOREHOST_V6,
};

/// Separates a property's name from its value.
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Ends every property pair, the last one included.
pub const PROPERTY_SEPARATOR: char = '\u{2}';

/// sysFlag transaction bits (2–3).
pub const SYSFLAG_TRANSACTION_MASK: i32 = 0xC;
pub const SYSFLAG_TRANSACTION_PREPARED: i32 = 0x4;
pub const SYSFLAG_TRANSACTION_ROLLBACK: i32 = 0xC;

/// Properties a producer sets (reference §3.4).
pub const PROPERTY_WAIT_STORE_MSG_OK: &str = "WAIT";
pub const PROPERTY_UNIQ_CLIENT_MESSAGE_ID: &str = "UNIQ_KEY";
pub const PROPERTY_CLUSTER: &str = "CLUSTER";
pub const PROPERTY_TAGS: &str = "TAGS";
pub const PROPERTY_KEYS: &str = "KEYS";
/// The retry and delay properties (MessageConst), by their wire names.
pub const PROPERTY_RETRY_TOPIC: &str = "RETRY_TOPIC";
pub const PROPERTY_ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
pub const PROPERTY_DELAY_TIME_LEVEL: &str = "DELAY";
pub const PROPERTY_REAL_TOPIC: &str = "REAL_TOPIC";
pub const PROPERTY_REAL_QUEUE_ID: &str = "REAL_QID";
pub const PROPERTY_RECONSUME_TIME: &str = "RECONSUME_TIME";
pub const PROPERTY_MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";

/// Encodes `name\x01value\x02` for each pair.
pub fn encode_properties<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = String::new();
    for (name, value) in pairs {
        out.push_str(name);
        out.push(NAME_VALUE_SEPARATOR);
        out.push_str(value);
        out.push(PROPERTY_SEPARATOR);
    }
    out
}

/// Parses a properties string the way RocketMQ 4.9.8/5.3.3 do: split on 0x02, then on the
/// first 0x01; pairs with an empty name or value are dropped.
pub fn decode_properties(s: &str) -> Vec<(String, String)> {
    s.split(PROPERTY_SEPARATOR)
        .filter_map(|pair| pair.split_once(NAME_VALUE_SEPARATOR))
        .filter(|(name, value)| !name.is_empty() && !value.is_empty())
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect()
}

/// One property's value: the first pair named `name` with a non-empty value.
///
/// Each pair's start is compared with the name, the pairs found by `memchr` (SIMD, nothing to
/// build per call), instead of `str::split`: a consumer looks up UNIQ_KEY once per message,
/// and the generic char searcher was 4% of the consumers' CPU in `make floor` (a byte loop
/// 5%, a `memmem` finder built per call 7.6%; eight bytes a step by word arithmetic was no
/// cheaper than `memchr` for a Java producer's three pairs). Both separators are ASCII: every
/// cut falls on a char boundary. `tests/codec_properties.rs` holds it to the split-based
/// definition.
pub fn property<'a>(s: &'a str, name: &str) -> Option<&'a str> {
    property_at(s.as_bytes(), name).map(|r| &s[r])
}

/// [`property`] over raw property bytes, as a record carries them (not necessarily UTF-8:
/// Java reads them with a lossy `new String(bytes, UTF_8)`).
#[inline]
pub fn property_bytes<'a>(b: &'a [u8], name: &str) -> Option<&'a [u8]> {
    property_at(b, name).map(|r| &b[r])
}

/// Where `name`'s value lies in `b`.
fn property_at(b: &[u8], name: &str) -> Option<std::ops::Range<usize>> {
    let (pair_end, name_end) = (PROPERTY_SEPARATOR as u8, NAME_VALUE_SEPARATOR as u8);
    let n = name.as_bytes();
    let mut at = 0;
    while at <= b.len() {
        let end = memchr::memchr(pair_end, &b[at..]).map_or(b.len(), |p| at + p);
        let pair = &b[at..end];
        if pair.len() > n.len() + 1 && pair[n.len()] == name_end && pair.starts_with(n) {
            // A pair's name ends at its first U+0001: a name that holds one names no pair.
            // Checked here, once a pair matched, not before every lookup (a `memchr` call of
            // its own: 2% of a consumer's instructions per message).
            return (!n.contains(&name_end)).then_some(at + n.len() + 1..end);
        }
        at = end + 1;
    }
    None
}

/// One message inside a SEND_BATCH_MESSAGE body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchEntry {
    pub flag: i32,
    pub body: Vec<u8>,
    pub properties: String,
}

/// Appends one batch entry (MessageDecoder `encodeMessage`).
pub fn encode_batch_entry(entry: &BatchEntry, dst: &mut BytesMut) {
    let total = 4 + 4 + 4 + 4 + 4 + entry.body.len() + 2 + entry.properties.len();
    dst.put_i32(total as i32);
    dst.put_i32(0); // magic: unused in batches
    dst.put_i32(0); // body CRC: computed by the broker
    dst.put_i32(entry.flag);
    dst.put_i32(entry.body.len() as i32);
    dst.put_slice(&entry.body);
    dst.put_i16(entry.properties.len() as i16);
    dst.put_slice(entry.properties.as_bytes());
}

/// Encodes a whole batch body.
pub fn encode_batch(entries: &[BatchEntry]) -> BytesMut {
    let mut buf = BytesMut::new();
    for e in entries {
        encode_batch_entry(e, &mut buf);
    }
    buf
}

/// Decodes a SEND_BATCH_MESSAGE body into its entries.
pub fn decode_batch(body: &[u8]) -> Result<Vec<BatchEntry>, MessageDecodeError> {
    let mut c = Cursor { buf: body, pos: 0 };
    let mut out = Vec::new();
    while c.pos < body.len() {
        let start = c.pos;
        let total = c.i32("batch totalSize")?;
        let _magic = c.i32("batch magic")?;
        let _crc = c.i32("batch bodyCRC")?;
        let flag = c.i32("batch flag")?;
        let body_len = c.i32("batch body length")? as i64;
        let body_len = c.len(body_len, "batch body")?;
        let msg_body = c.take(body_len, "batch body")?.to_vec();
        let props_len = c.i16("batch properties length")? as i64;
        let props_len = c.len(props_len, "batch properties")?;
        let props = std::str::from_utf8(c.take(props_len, "batch properties")?)
            .map_err(|_| MessageDecodeError::InvalidUtf8("batch properties"))?
            .to_owned();
        if total as i64 != (c.pos - start) as i64 {
            return Err(MessageDecodeError::BadLength {
                field: "batch totalSize",
                len: total as i64,
            });
        }
        out.push(BatchEntry {
            flag,
            body: msg_body,
            properties: props,
        });
    }
    Ok(out)
}

/// What sits at a position of a CommitLog file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordAt {
    /// A whole, valid message of `len` bytes.
    Message {
        record: Box<MessageRecord>,
        len: usize,
    },
    /// The end-of-file blank marker: the rest of the file (`len` bytes) is unused.
    EndOfFile { len: usize },
    /// Zeroes: nothing was ever written here.
    Empty,
}

/// Decodes the record at the start of `buf`, verifying the body CRC when `check_crc`.
/// An `Err` means a torn or corrupt record: recovery stops there. The parsing is
/// [`crate::record_ref::decode_record_ref`]'s; this copies the result out of `buf`.
pub fn decode_record(buf: &[u8], check_crc: bool) -> Result<RecordAt, MessageDecodeError> {
    Ok(
        match crate::record_ref::decode_record_ref(buf, check_crc)? {
            crate::record_ref::RecordRefAt::Message { record, len } => RecordAt::Message {
                record: Box::new(record.to_record()),
                len,
            },
            crate::record_ref::RecordRefAt::EndOfFile { len } => RecordAt::EndOfFile { len },
            crate::record_ref::RecordRefAt::Empty => RecordAt::Empty,
        },
    )
}

/// Decodes a PULL_MESSAGE body: concatenated records, each CRC-checked.
pub fn decode_records(mut buf: &[u8]) -> Result<Vec<MessageRecord>, MessageDecodeError> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        match decode_record(buf, true)? {
            RecordAt::Message { record, len } => {
                out.push(*record);
                buf = &buf[len..];
            }
            RecordAt::EndOfFile { .. } | RecordAt::Empty => break,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> MessageRecord {
        MessageRecord {
            queue_id: 3,
            flag: 0,
            queue_offset: 42,
            physical_offset: 4096,
            sys_flag: 0,
            born_timestamp: 1_700_000_000_000,
            born_host: "127.0.0.1:50000".parse().unwrap(),
            store_timestamp: 1_700_000_000_001,
            store_host: "127.0.0.1:10911".parse().unwrap(),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: b"hello".to_vec(),
            topic: "TopicTest".into(),
            properties: encode_properties([("WAIT", "true"), ("UNIQ_KEY", "ABC")]),
        }
    }

    #[test]
    fn record_length_matches_the_reference_formula() {
        let r = record();
        assert_eq!(r.encoded_len(), 91 + 5 + 9 + r.properties.len());
        let mut buf = BytesMut::new();
        r.encode(&mut buf);
        assert_eq!(buf.len(), r.encoded_len());
        assert_eq!(&buf[4..8], &MAGIC_V1.to_be_bytes());
        // BODY length sits at offset 84 for IPv4 hosts.
        assert_eq!(&buf[84..88], &5i32.to_be_bytes());
        match decode_record(&buf, true).unwrap() {
            RecordAt::Message { record, len } => {
                assert_eq!(len, buf.len());
                assert_eq!(*record, r);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn corrupt_body_fails_the_crc() {
        let mut buf = BytesMut::new();
        record().encode(&mut buf);
        buf[88] ^= 0xff;
        assert!(matches!(
            decode_record(&buf, true),
            Err(MessageDecodeError::CrcMismatch { .. })
        ));
        assert!(decode_record(&buf, false).is_ok());
    }

    #[test]
    fn ipv6_hosts_set_sysflag_bits() {
        let mut r = record();
        r.born_host = "[::1]:5000".parse().unwrap();
        let mut buf = BytesMut::new();
        r.encode(&mut buf);
        assert_eq!(buf.len(), 91 + 12 + 5 + 9 + r.properties.len());
        let RecordAt::Message { record, .. } = decode_record(&buf, true).unwrap() else {
            panic!()
        };
        assert_eq!(record.born_host, r.born_host);
        assert_eq!(record.sys_flag & SYSFLAG_BORNHOST_V6, SYSFLAG_BORNHOST_V6);
    }

    #[test]
    fn properties_round_trip_and_drop_empty_pairs() {
        let s = encode_properties([("WAIT", "true"), ("UNIQ_KEY", "01")]);
        assert_eq!(s, "WAIT\u{1}true\u{2}UNIQ_KEY\u{1}01\u{2}");
        assert_eq!(
            decode_properties(&s),
            vec![
                ("WAIT".into(), "true".into()),
                ("UNIQ_KEY".into(), "01".into())
            ]
        );
        assert_eq!(
            decode_properties("\u{1}x\u{2}A\u{1}\u{2}B\u{1}1\u{2}"),
            vec![("B".into(), "1".into())]
        );
        assert_eq!(property(&s, "UNIQ_KEY"), Some("01"));
    }

    #[test]
    fn batch_round_trip() {
        let entries = vec![
            BatchEntry {
                flag: 0,
                body: b"a".to_vec(),
                properties: "K\u{1}1\u{2}".into(),
            },
            BatchEntry {
                flag: 7,
                body: vec![0; 100],
                properties: String::new(),
            },
        ];
        let buf = encode_batch(&entries);
        assert_eq!(&buf[0..4], &(22 + 1 + 4i32).to_be_bytes());
        assert_eq!(decode_batch(&buf).unwrap(), entries);
        assert!(decode_batch(&buf[..buf.len() - 1]).is_err());
    }
}

/// The "offset message id" of a stored message (reference §3.3): upper-case hex of the store
/// host's IP bytes, its port as int32 and the CommitLog physical offset as int64: 32 hex
/// characters for IPv4, 56 for IPv6.
pub fn offset_msg_id(store_host: SocketAddr, physical_offset: i64) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(56);
    let ip: Vec<u8> = match store_host.ip() {
        IpAddr::V4(ip) => ip.octets().to_vec(),
        IpAddr::V6(ip) => ip.octets().to_vec(),
    };
    for b in ip
        .iter()
        .chain((store_host.port() as i32).to_be_bytes().iter())
        .chain(physical_offset.to_be_bytes().iter())
    {
        let _ = write!(out, "{b:02X}");
    }
    out
}

#[cfg(test)]
mod msg_id_tests {
    use super::*;

    #[test]
    fn offset_msg_id_is_32_upper_hex_for_ipv4() {
        let id = offset_msg_id("127.0.0.1:10911".parse().unwrap(), 0x1234);
        assert_eq!(id, "7F00000100002A9F0000000000001234");
        assert_eq!(offset_msg_id("[::1]:1".parse().unwrap(), 0).len(), 56);
    }
}
