//! The CommitLog record (reference §7.6), a leaf below [`crate::message`] and
//! [`crate::record_ref`]: its magic codes and host flags, the body CRC, the owned
//! [`MessageRecord`] with its encoder, the decode error and the cursor both decoders read with.

use std::net::{IpAddr, SocketAddr};

use bytes::{BufMut, BytesMut};
use thiserror::Error;

/// CommitLog record magic, message format V1 (1-byte topic length).
pub const MAGIC_V1: u32 = 0xDAA3_20A7;
/// CommitLog record magic, message format V2 (2-byte topic length, 5.x).
pub const MAGIC_V2: u32 = 0xDAA3_20AB;
/// The end-of-file blank marker's magic.
pub const MAGIC_BLANK: u32 = 0xCBD4_3194;
/// Size of the end-of-file blank marker.
pub const BLANK_MARKER_LEN: usize = 8;

/// sysFlag bit: born host stored as 16 + 4 bytes.
pub const SYSFLAG_BORNHOST_V6: i32 = 0x10;
/// sysFlag bit: store host stored as 16 + 4 bytes.
pub const SYSFLAG_STOREHOST_V6: i32 = 0x20;
/// Why a batch body or a CommitLog record could not be decoded.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MessageDecodeError {
    #[error("truncated while reading {0}")]
    Truncated(&'static str),
    #[error("{field} length {len} is invalid")]
    BadLength { field: &'static str, len: i64 },
    #[error("bad magic code {0:#010x}")]
    BadMagic(u32),
    #[error("body CRC {stored} does not match the computed {computed}")]
    CrcMismatch { stored: u32, computed: u32 },
    #[error("{0} is not valid UTF-8")]
    InvalidUtf8(&'static str),
}

pub(crate) struct Cursor<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
}

// Inlined always: the release build has no LTO, and LLVM left these as calls (a record's dozen
// fields, each a call returning a `Result`): 13% of a consumer's instructions per message
// (callgrind, 3563 -> 3108).
impl<'a> Cursor<'a> {
    #[inline(always)]
    pub(crate) fn take(
        &mut self,
        n: usize,
        what: &'static str,
    ) -> Result<&'a [u8], MessageDecodeError> {
        if self.buf.len() - self.pos < n {
            return Err(MessageDecodeError::Truncated(what));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    #[inline(always)]
    pub(crate) fn i16(&mut self, what: &'static str) -> Result<i16, MessageDecodeError> {
        let b = self.take(2, what)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    #[inline(always)]
    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, MessageDecodeError> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes(b.try_into().unwrap()))
    }
    #[inline(always)]
    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, MessageDecodeError> {
        let b = self.take(8, what)?;
        Ok(i64::from_be_bytes(b.try_into().unwrap()))
    }
    #[inline(always)]
    pub(crate) fn len(
        &mut self,
        value: i64,
        field: &'static str,
    ) -> Result<usize, MessageDecodeError> {
        if value < 0 || value as usize > self.buf.len() - self.pos {
            return Err(MessageDecodeError::BadLength { field, len: value });
        }
        Ok(value as usize)
    }
}

/// RocketMQ's body CRC: CRC32 with the sign bit cleared (`UtilAll.crc32`).
#[inline]
pub fn body_crc(body: &[u8]) -> u32 {
    crc32fast::hash(body) & 0x7FFF_FFFF
}

/// One stored message, as laid out in the CommitLog and in a PULL_MESSAGE body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRecord {
    pub queue_id: i32,
    pub flag: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_timestamp: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: Vec<u8>,
    pub topic: String,
    pub properties: String,
}

impl MessageRecord {
    fn uses_v2_format(&self) -> bool {
        self.topic.len() > 127
    }

    /// The encoded length: 91 + body + topic + properties for V1 with IPv4 hosts (reference §7.6).
    pub fn encoded_len(&self) -> usize {
        let born = if self.born_host.is_ipv6() { 20 } else { 8 };
        let store = if self.store_host.is_ipv6() { 20 } else { 8 };
        let topic_len_size = if self.uses_v2_format() { 2 } else { 1 };
        4 + 4
            + 4
            + 4
            + 4
            + 8
            + 8
            + 4
            + 8
            + born
            + 8
            + store
            + 4
            + 8
            + 4
            + self.body.len()
            + topic_len_size
            + self.topic.len()
            + 2
            + self.properties.len()
    }

    /// The sysFlag with the host-format bits made consistent with the addresses.
    pub fn effective_sys_flag(&self) -> i32 {
        let mut f = self.sys_flag & !(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6);
        if self.born_host.is_ipv6() {
            f |= SYSFLAG_BORNHOST_V6;
        }
        if self.store_host.is_ipv6() {
            f |= SYSFLAG_STOREHOST_V6;
        }
        f
    }

    /// Appends the record; the body CRC is computed here.
    pub fn encode(&self, dst: &mut BytesMut) {
        fn put_host(dst: &mut BytesMut, addr: &SocketAddr) {
            match addr.ip() {
                IpAddr::V4(ip) => dst.put_slice(&ip.octets()),
                IpAddr::V6(ip) => dst.put_slice(&ip.octets()),
            }
            dst.put_i32(addr.port() as i32);
        }
        dst.put_i32(self.encoded_len() as i32);
        dst.put_u32(if self.uses_v2_format() {
            MAGIC_V2
        } else {
            MAGIC_V1
        });
        dst.put_u32(body_crc(&self.body));
        dst.put_i32(self.queue_id);
        dst.put_i32(self.flag);
        dst.put_i64(self.queue_offset);
        dst.put_i64(self.physical_offset);
        dst.put_i32(self.effective_sys_flag());
        dst.put_i64(self.born_timestamp);
        put_host(dst, &self.born_host);
        dst.put_i64(self.store_timestamp);
        put_host(dst, &self.store_host);
        dst.put_i32(self.reconsume_times);
        dst.put_i64(self.prepared_transaction_offset);
        dst.put_i32(self.body.len() as i32);
        dst.put_slice(&self.body);
        if self.uses_v2_format() {
            dst.put_i16(self.topic.len() as i16);
        } else {
            dst.put_u8(self.topic.len() as u8);
        }
        dst.put_slice(self.topic.as_bytes());
        dst.put_i16(self.properties.len() as i16);
        dst.put_slice(self.properties.as_bytes());
    }
}
