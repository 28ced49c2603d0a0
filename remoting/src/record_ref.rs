//! A CommitLog record borrowed from its buffer (reference §7.6): the one parser of stored
//! records. [`crate::message::decode_record`] copies its result out; a reader that keeps a few
//! fields of each record (a consumer decoding a pull body) reads them here without copying the
//! body, the topic or the properties.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::record::{
    body_crc, Cursor, MessageDecodeError, MessageRecord, MAGIC_BLANK, MAGIC_V1, MAGIC_V2,
    SYSFLAG_BORNHOST_V6, SYSFLAG_STOREHOST_V6,
};

/// One stored message, its variable parts borrowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRef<'a> {
    pub queue_id: i32,
    pub flag: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: HostRef<'a>,
    pub store_timestamp: i64,
    pub store_host: HostRef<'a>,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: &'a [u8],
    /// As stored: Java reads the topic and the properties with a lossy `new String(bytes,
    /// UTF_8)` (`MessageDecoder.decode`, `CommitLog.checkMessageAndReturnSize`), so bytes that
    /// are not UTF-8 do not make a record invalid. A consumer compares and searches them as
    /// bytes, and converts only what it keeps.
    pub topic: &'a [u8],
    pub properties: &'a [u8],
}

/// A stored host address as its bytes: 4 (IPv4) or 16 (IPv6) address bytes and the port.
/// Built into a `SocketAddr` only when asked: a consumer reads neither host, and building
/// both for every record (an enum written field by field, then moved whole) was a
/// store-forwarding stall per consumed message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostRef<'a> {
    ip: &'a [u8],
    port: i32,
}

impl HostRef<'_> {
    /// The address, as Java's `MessageDecoder` reads it (the port's low 16 bits).
    pub fn addr(&self) -> SocketAddr {
        let ip: IpAddr = match <[u8; 16]>::try_from(self.ip) {
            Ok(b) => Ipv6Addr::from(b).into(),
            Err(_) => {
                let b: [u8; 4] = self.ip.try_into().unwrap_or_default();
                Ipv4Addr::from(b).into()
            }
        };
        SocketAddr::new(ip, self.port as u16)
    }
}

impl RecordRef<'_> {
    /// The owned record.
    pub fn to_record(&self) -> MessageRecord {
        MessageRecord {
            queue_id: self.queue_id,
            flag: self.flag,
            queue_offset: self.queue_offset,
            physical_offset: self.physical_offset,
            sys_flag: self.sys_flag,
            born_timestamp: self.born_timestamp,
            born_host: self.born_host.addr(),
            store_timestamp: self.store_timestamp,
            store_host: self.store_host.addr(),
            reconsume_times: self.reconsume_times,
            prepared_transaction_offset: self.prepared_transaction_offset,
            body: self.body.to_vec(),
            topic: String::from_utf8_lossy(self.topic).into_owned(),
            properties: String::from_utf8_lossy(self.properties).into_owned(),
        }
    }
}

/// What sits at a position of a CommitLog file or a pull body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordRefAt<'a> {
    /// A whole, valid message of `len` bytes.
    Message { record: RecordRef<'a>, len: usize },
    /// The end-of-file blank marker: the rest of the file (`len` bytes) is unused.
    EndOfFile { len: usize },
    /// Zeroes: nothing was ever written here.
    Empty,
}

/// Decodes the record at the start of `buf`, verifying the body CRC when `check_crc`.
/// An `Err` means a torn or corrupt record. Inlined across crates: returned through memory, its
/// 150-byte result was read back with loads wider than the stores that wrote it, a
/// store-forwarding stall per consumed message.
#[inline]
pub fn decode_record_ref(
    buf: &[u8],
    check_crc: bool,
) -> Result<RecordRefAt<'_>, MessageDecodeError> {
    let mut c = Cursor { buf, pos: 0 };
    let total = c.i32("TOTALSIZE")?;
    let magic = c.i32("MAGICCODE")? as u32;
    if total == 0 && magic == 0 {
        return Ok(RecordRefAt::Empty);
    }
    if magic == MAGIC_BLANK {
        return Ok(RecordRefAt::EndOfFile {
            len: total.max(0) as usize,
        });
    }
    if magic != MAGIC_V1 && magic != MAGIC_V2 {
        return Err(MessageDecodeError::BadMagic(magic));
    }
    if total < 8 || total as usize > buf.len() {
        return Err(MessageDecodeError::BadLength {
            field: "TOTALSIZE",
            len: total as i64,
        });
    }
    let stored_crc = c.i32("BODYCRC")? as u32;
    let queue_id = c.i32("QUEUEID")?;
    let flag = c.i32("FLAG")?;
    let queue_offset = c.i64("QUEUEOFFSET")?;
    let physical_offset = c.i64("PHYSICALOFFSET")?;
    let sys_flag = c.i32("SYSFLAG")?;
    let born_timestamp = c.i64("BORNTIMESTAMP")?;
    let born_host = host(&mut c, sys_flag & SYSFLAG_BORNHOST_V6 != 0, "BORNHOST")?;
    let store_timestamp = c.i64("STORETIMESTAMP")?;
    let store_host = host(
        &mut c,
        sys_flag & SYSFLAG_STOREHOST_V6 != 0,
        "STOREHOSTADDRESS",
    )?;
    let reconsume_times = c.i32("RECONSUMETIMES")?;
    let prepared_transaction_offset = c.i64("PREPARED TRANSACTION OFFSET")?;
    let body_len = c.i32("BODY length")? as i64;
    let body_len = c.len(body_len, "BODY")?;
    let body = c.take(body_len, "BODY")?;
    let topic_len = if magic == MAGIC_V2 {
        c.i16("TOPIC length")? as i64
    } else {
        c.take(1, "TOPIC length")?[0] as i64
    };
    let topic_len = c.len(topic_len, "TOPIC")?;
    let topic = c.take(topic_len, "TOPIC")?;
    let props_len = c.i16("PROPERTIES length")? as i64;
    let props_len = c.len(props_len, "PROPERTIES")?;
    let properties = c.take(props_len, "PROPERTIES")?;
    if c.pos != total as usize {
        return Err(MessageDecodeError::BadLength {
            field: "TOTALSIZE",
            len: total as i64,
        });
    }
    if check_crc {
        let computed = body_crc(body);
        if computed != stored_crc {
            return Err(MessageDecodeError::CrcMismatch {
                stored: stored_crc,
                computed,
            });
        }
    }
    Ok(RecordRefAt::Message {
        record: RecordRef {
            queue_id,
            flag,
            queue_offset,
            physical_offset,
            sys_flag,
            born_timestamp,
            born_host,
            store_timestamp,
            store_host,
            reconsume_times,
            prepared_transaction_offset,
            body,
            topic,
            properties,
        },
        len: total as usize,
    })
}

/// A host's address bytes and port at the cursor.
#[inline(always)]
fn host<'a>(
    c: &mut Cursor<'a>,
    v6: bool,
    what: &'static str,
) -> Result<HostRef<'a>, MessageDecodeError> {
    let ip = c.take(if v6 { 16 } else { 4 }, what)?;
    let port = c.i32(what)?;
    Ok(HostRef { ip, port })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{decode_record, encode_properties, RecordAt};
    use bytes::BytesMut;

    fn sample() -> MessageRecord {
        MessageRecord {
            queue_id: 3,
            flag: 1,
            queue_offset: 42,
            physical_offset: 4096,
            // The IPv6 store host's bit, as encode() sets it.
            sys_flag: SYSFLAG_STOREHOST_V6,
            born_timestamp: 1_700_000_000_000,
            born_host: "127.0.0.1:50000".parse().unwrap(),
            store_timestamp: 1_700_000_000_001,
            store_host: "[::1]:10911".parse().unwrap(),
            reconsume_times: 2,
            prepared_transaction_offset: 0,
            body: b"hello".to_vec(),
            topic: "T".into(),
            properties: encode_properties([("UNIQ_KEY", "K")]),
        }
    }

    #[test]
    fn the_borrowed_record_is_the_owned_one() {
        let rec = sample();
        let mut buf = BytesMut::new();
        rec.encode(&mut buf);
        let RecordRefAt::Message { record, len } = decode_record_ref(&buf, true).unwrap() else {
            panic!("a message")
        };
        assert_eq!(len, buf.len());
        assert_eq!((record.body, record.topic), (&b"hello"[..], &b"T"[..]));
        assert_eq!(record.to_record(), rec);
        assert_eq!(
            decode_record(&buf, true).unwrap(),
            RecordAt::Message {
                record: Box::new(rec),
                len
            }
        );
        let mut bad = buf.to_vec();
        let at = bad.len() - 20;
        bad[at] ^= 0xFF;
        assert!(decode_record_ref(&bad, true).is_err());
    }

    /// A topic or properties that are not UTF-8 do not make a record invalid: Java reads them
    /// lossily, and so does the owned record.
    #[test]
    fn bytes_that_are_not_utf8_are_read_as_java_reads_them() {
        let rec = MessageRecord {
            topic: "TX".into(),
            properties: encode_properties([("K", "vX")]),
            ..sample()
        };
        let mut buf = BytesMut::new();
        rec.encode(&mut buf);
        let mut raw = buf.to_vec();
        // The topic's and the property value's 'X' become a byte no UTF-8 text holds.
        let len = raw.len();
        let props_at = len - rec.properties.len();
        raw[props_at - 2 - 1] = 0xFF;
        raw[len - 2] = 0xFE;
        let RecordRefAt::Message { record, .. } = decode_record_ref(&raw, true).unwrap() else {
            panic!("still a message")
        };
        assert_eq!(record.topic, &[b'T', 0xFF][..]);
        let owned = record.to_record();
        assert_eq!(owned.topic, "T\u{FFFD}");
        assert_eq!(
            crate::message::property(&owned.properties, "K"),
            Some("v\u{FFFD}")
        );
    }
}
