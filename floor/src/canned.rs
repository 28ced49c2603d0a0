//! The null responder's pull answers: a real encoded batch of messages, built once, and patched
//! per pull with the queue and offsets asked for, so that answering costs a copy and a few
//! stores, not an encode.
//!
//! Both peers of the consume floor read header fields with [`scan_field`], a byte search for
//! `"key":"digits"` in a JSON header: the Java client and every harness connection send JSON
//! headers, and a full decode per pull would make the responder, not the puller, the limit.

use std::net::SocketAddr;

use bytes::BytesMut;
use remoting::message::{encode_properties, MessageRecord};

/// Where the fields patched per pull sit in a stored record (reference §7.6).
const AT_QUEUE_ID: usize = 12;
const AT_QUEUE_OFFSET: usize = 20;
const AT_PHYSICAL_OFFSET: usize = 28;

/// PULL_NOT_FOUND (NO_NEW_MSG).
pub const PULL_NOT_FOUND: i32 = 19;

/// `n` stored messages of one size, encoded once.
pub struct CannedBatch {
    body: Vec<u8>,
    /// Start of each record in `body`; one more entry for the end.
    starts: Vec<usize>,
    record_len: usize,
}

impl CannedBatch {
    /// `n` records of `message_size` body bytes on `topic`, each with the properties a Java
    /// producer sets (UNIQ_KEY, KEYS, WAIT), stored at `stored_ms`.
    pub fn new(n: usize, message_size: usize, topic: &str, stored_ms: i64) -> CannedBatch {
        let host: SocketAddr = "127.0.0.1:10911".parse().expect("a literal address");
        let born: SocketAddr = "127.0.0.1:50000".parse().expect("a literal address");
        let mut buf = BytesMut::new();
        let mut starts = Vec::with_capacity(n + 1);
        for i in 0..n {
            starts.push(buf.len());
            let uniq = format!("7F00000100002A9F{:016X}", i);
            MessageRecord {
                queue_id: 0,
                flag: 0,
                queue_offset: i as i64,
                physical_offset: 0,
                sys_flag: 0,
                born_timestamp: stored_ms,
                born_host: born,
                store_timestamp: stored_ms,
                store_host: host,
                reconsume_times: 0,
                prepared_transaction_offset: 0,
                body: vec![b'x'; message_size],
                topic: topic.to_owned(),
                properties: encode_properties([
                    ("KEYS", "floor-0000000000"),
                    ("UNIQ_KEY", uniq.as_str()),
                    ("WAIT", "true"),
                ]),
            }
            .encode(&mut buf);
        }
        starts.push(buf.len());
        let record_len = if n > 0 { starts[1] } else { 0 };
        CannedBatch {
            body: buf.to_vec(),
            starts,
            record_len,
        }
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the first `n` records (at most [`CannedBatch::len`]) as queue `queue_id`'s
    /// offsets `first..first + n`; returns how many were written.
    pub fn fill(&self, out: &mut Vec<u8>, queue_id: i32, first: i64, n: usize) -> usize {
        let n = n.min(self.len());
        let base = out.len();
        out.extend_from_slice(&self.body[..self.starts[n]]);
        for (i, &start) in self.starts[..n].iter().enumerate() {
            let r = base + start;
            let offset = first + i as i64;
            out[r + AT_QUEUE_ID..r + AT_QUEUE_ID + 4].copy_from_slice(&queue_id.to_be_bytes());
            out[r + AT_QUEUE_OFFSET..r + AT_QUEUE_OFFSET + 8]
                .copy_from_slice(&offset.to_be_bytes());
            let physical = offset * self.record_len as i64;
            out[r + AT_PHYSICAL_OFFSET..r + AT_PHYSICAL_OFFSET + 8]
                .copy_from_slice(&physical.to_be_bytes());
        }
        n
    }
}

/// Appends a whole pull answer frame: FOUND (0) with `n` records of `batch` when `n > 0`, else
/// PULL_NOT_FOUND; the header a 5.3 broker writes (JSON, keys in order).
pub fn write_pull_answer(
    out: &mut Vec<u8>,
    opaque: i32,
    batch: &CannedBatch,
    queue_id: i32,
    offset: i64,
    n: usize,
    max_offset: i64,
) {
    use std::io::Write as _;
    let start = out.len();
    out.extend_from_slice(&[0u8; 8]);
    let header_start = out.len();
    let n = n.min(batch.len());
    let (code, next) = if n > 0 {
        (0, offset + n as i64)
    } else {
        (PULL_NOT_FOUND, offset)
    };
    // Writing into a Vec cannot fail.
    let _ = write!(
        out,
        "{{\"code\":{code},\"extFields\":{{\"maxOffset\":\"{max_offset}\",\"minOffset\":\"0\",\
         \"nextBeginOffset\":\"{next}\",\"suggestWhichBrokerId\":\"0\"}},\"flag\":1,\
         \"language\":\"JAVA\",\"opaque\":{opaque},\"serializeTypeCurrentRPC\":\"JSON\",\
         \"version\":479}}"
    );
    let header_len = (out.len() - header_start) as u32;
    if n > 0 {
        batch.fill(out, queue_id, offset, n);
    }
    let total = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&total.to_be_bytes());
    out[start + 4..start + 8].copy_from_slice(&header_len.to_be_bytes());
}

/// The integer value of `"key":"…"` (or `"key":…`) in a JSON header; None if absent or not a
/// number.
pub fn scan_field(header: &[u8], key: &str) -> Option<i64> {
    let k = key.as_bytes();
    let mut from = 0;
    while let Some(p) = find(&header[from..], k) {
        let at = from + p;
        from = at + k.len();
        // The key must be a whole JSON key: `"key"` followed by `:`.
        let quoted = at > 0 && header[at - 1] == b'"' && header.get(at + k.len()) == Some(&b'"');
        if !quoted || header.get(at + k.len() + 1) != Some(&b':') {
            continue;
        }
        let mut i = at + k.len() + 2;
        if header.get(i) == Some(&b'"') {
            i += 1;
        }
        let neg = header.get(i) == Some(&b'-');
        if neg {
            i += 1;
        }
        let digits = header[i..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 || digits > 18 {
            return None;
        }
        let v = header[i..i + digits]
            .iter()
            .fold(0i64, |a, b| a * 10 + i64::from(b - b'0'));
        return Some(if neg { -v } else { v });
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use remoting::headers::PullMessageResponseHeader;
    use remoting::message::decode_records;
    use remoting::RemotingCommand;

    #[test]
    fn a_canned_answer_decodes_to_n_messages_at_the_offsets_asked_for() {
        let batch = CannedBatch::new(64, 128, "BenchmarkTopic", 1_700_000_000_000);
        assert_eq!(batch.len(), 64);
        let mut out = Vec::new();
        write_pull_answer(&mut out, 77, &batch, 3, 1000, 32, 5000);
        let len = u32::from_be_bytes(out[..4].try_into().unwrap()) as usize;
        assert_eq!(len + 4, out.len());
        let cmd = RemotingCommand::decode(Bytes::copy_from_slice(&out[4..])).unwrap();
        assert_eq!((cmd.code, cmd.opaque), (0, 77));
        assert!(cmd.is_response());
        let h: PullMessageResponseHeader = cmd.header().unwrap();
        assert_eq!((h.next_begin_offset, h.max_offset), (1032, 5000));
        let msgs = decode_records(&cmd.body).unwrap();
        assert_eq!(msgs.len(), 32);
        for (i, m) in msgs.iter().enumerate() {
            assert_eq!(m.queue_id, 3);
            assert_eq!(m.queue_offset, 1000 + i as i64);
            assert_eq!(m.body.len(), 128);
            assert_eq!(m.topic, "BenchmarkTopic");
            assert!(m.properties.contains("UNIQ_KEY"));
        }
        assert!(msgs[1].physical_offset > msgs[0].physical_offset);

        // The next pull continues where this one ended; more than held is capped.
        out.clear();
        write_pull_answer(&mut out, 78, &batch, 3, 1032, 500, 5000);
        let cmd = RemotingCommand::decode(Bytes::copy_from_slice(&out[4..])).unwrap();
        let msgs = decode_records(&cmd.body).unwrap();
        assert_eq!(msgs.len(), 64);
        assert_eq!(msgs[0].queue_offset, 1032);
        let h: PullMessageResponseHeader = cmd.header().unwrap();
        assert_eq!(h.next_begin_offset, 1096);
    }

    #[test]
    fn nothing_left_is_pull_not_found_at_the_same_offset() {
        let batch = CannedBatch::new(4, 16, "T", 0);
        let mut out = Vec::new();
        write_pull_answer(&mut out, 5, &batch, 0, 40, 0, 40);
        let cmd = RemotingCommand::decode(Bytes::copy_from_slice(&out[4..])).unwrap();
        assert_eq!(cmd.code, PULL_NOT_FOUND);
        assert!(cmd.body.is_empty());
        let h: PullMessageResponseHeader = cmd.header().unwrap();
        assert_eq!(h.next_begin_offset, 40);
    }

    #[test]
    fn fields_are_found_by_whole_key_only() {
        let h = br#"{"code":11,"extFields":{"commitOffset":"9","maxQueueOffset":"1","queueId":"3","queueOffset":"-12345"},"opaque":7}"#;
        assert_eq!(scan_field(h, "queueOffset"), Some(-12345));
        assert_eq!(scan_field(h, "queueId"), Some(3));
        assert_eq!(scan_field(h, "opaque"), Some(7));
        assert_eq!(scan_field(h, "code"), Some(11));
        assert_eq!(scan_field(h, "Offset"), None, "a key's tail is not the key");
        assert_eq!(scan_field(h, "missing"), None);
        assert_eq!(scan_field(br#"{"a":"x"}"#, "a"), None, "not a number");
        assert_eq!(scan_field(br#"{"a":""#, "a"), None, "truncated");
    }
}
