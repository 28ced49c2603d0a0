//! CommitLog record bytes: the encoding the put path fills in (queue offset, physical offset and
//! store timestamp are patched under the put lock) and the header fields the dispatcher reads
//! back without copying the body.

use bytes::BytesMut;
use remoting::message::{
    MessageRecord, MAGIC_BLANK, MAGIC_V1, MAGIC_V2, SYSFLAG_BORNHOST_V6, SYSFLAG_STOREHOST_V6,
    SYSFLAG_TRANSACTION_MASK, SYSFLAG_TRANSACTION_PREPARED, SYSFLAG_TRANSACTION_ROLLBACK,
};

use super::config::StoreConfig;
use super::types::PutMessage;

/// One encoded message waiting to be appended.
pub(crate) struct EncodedMessage {
    pub(crate) bytes: Vec<u8>,
    pub(crate) topic: String,
    pub(crate) queue_id: i32,
    pub(crate) sys_flag: i32,
    /// Offset of STORETIMESTAMP inside the record (depends on the born host's family).
    pub(crate) store_ts_pos: usize,
}

/// Encodes with queue offset and physical offset 0: the append patches them and the store
/// timestamp under the put lock.
pub(super) fn encode(config: &StoreConfig, m: &PutMessage, store_timestamp: i64) -> EncodedMessage {
    let record = MessageRecord {
        queue_id: m.queue_id,
        flag: m.flag,
        queue_offset: 0,
        physical_offset: 0,
        sys_flag: m.sys_flag,
        born_timestamp: m.born_timestamp,
        born_host: m.born_host,
        store_timestamp,
        store_host: config.store_host,
        reconsume_times: m.reconsume_times,
        prepared_transaction_offset: 0,
        body: m.body.to_vec(),
        topic: m.topic.clone(),
        properties: m.properties.clone(),
    };
    let mut buf = BytesMut::with_capacity(record.encoded_len());
    record.encode(&mut buf);
    EncodedMessage {
        bytes: buf.into(),
        topic: m.topic.clone(),
        queue_id: m.queue_id,
        sys_flag: record.effective_sys_flag(),
        store_ts_pos: 48 + if m.born_host.is_ipv6() { 20 } else { 8 },
    }
}

/// Java's `String.hashCode`, which RocketMQ stores as the tag hash.
pub(crate) fn java_string_hash(s: &str) -> i64 {
    let mut h: i32 = 0;
    for unit in s.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(unit as i32);
    }
    h as i64
}

/// What the dispatcher needs from a record header, read without copying the body.
pub(super) struct DispatchInfo {
    pub(super) size: usize,
    pub(super) topic: String,
    pub(super) queue_id: i32,
    pub(super) queue_offset: i64,
    pub(super) sys_flag: i32,
    pub(super) tags_hash: i64,
}

pub(super) enum Parsed {
    Message(DispatchInfo),
    Blank,
    End,
}

fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn be_i64(b: &[u8], at: usize) -> Option<i64> {
    Some(i64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

pub(super) fn parse_for_dispatch(b: &[u8]) -> Parsed {
    let (Some(total), Some(magic)) = (be_i32(b, 0), be_i32(b, 4)) else {
        return Parsed::End;
    };
    let magic = magic as u32;
    if magic == MAGIC_BLANK {
        return Parsed::Blank;
    }
    if (magic != MAGIC_V1 && magic != MAGIC_V2) || total <= 0 || total as usize > b.len() {
        return Parsed::End;
    }
    let rec = &b[..total as usize];
    let parse = || -> Option<DispatchInfo> {
        let queue_id = be_i32(rec, 12)?;
        let queue_offset = be_i64(rec, 20)?;
        let sys_flag = be_i32(rec, 36)?;
        let born = if sys_flag & SYSFLAG_BORNHOST_V6 != 0 {
            20
        } else {
            8
        };
        let store = if sys_flag & SYSFLAG_STOREHOST_V6 != 0 {
            20
        } else {
            8
        };
        let body_len_at = 48 + born + 8 + store + 4 + 8;
        let body_len = usize::try_from(be_i32(rec, body_len_at)?).ok()?;
        let mut p = body_len_at + 4 + body_len;
        let topic_len = if magic == MAGIC_V2 {
            let v = i16::from_be_bytes(rec.get(p..p + 2)?.try_into().ok()?);
            p += 2;
            usize::try_from(v).ok()?
        } else {
            let v = *rec.get(p)? as usize;
            p += 1;
            v
        };
        let topic = std::str::from_utf8(rec.get(p..p + topic_len)?)
            .ok()?
            .to_owned();
        p += topic_len;
        let props_len =
            usize::try_from(i16::from_be_bytes(rec.get(p..p + 2)?.try_into().ok()?)).ok()?;
        p += 2;
        let props = std::str::from_utf8(rec.get(p..p + props_len)?).ok()?;
        let tags_hash = remoting::message::property(props, remoting::message::PROPERTY_TAGS)
            .map(java_string_hash)
            .unwrap_or(0);
        Some(DispatchInfo {
            size: total as usize,
            topic,
            queue_id,
            queue_offset,
            sys_flag,
            tags_hash,
        })
    };
    match parse() {
        Some(info) => Parsed::Message(info),
        None => Parsed::End,
    }
}

pub(super) fn is_prepared_or_rollback(sys_flag: i32) -> bool {
    let t = sys_flag & SYSFLAG_TRANSACTION_MASK;
    t == SYSFLAG_TRANSACTION_PREPARED || t == SYSFLAG_TRANSACTION_ROLLBACK
}
