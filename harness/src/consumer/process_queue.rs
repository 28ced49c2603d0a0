//! `ProcessQueue` (consumer §8.4): the messages of one queue pulled and not yet consumed,
//! ordered by queue offset. Its count, size and span drive the flow-control gates, and its
//! smallest unconsumed offset is the offset the consumer commits.

use std::collections::BTreeMap;
use std::fmt;

use crate::consumer::offset_map::OffsetMap;
use rmq_client::uniq_key::{key_seq, KeySeq};

/// A message's UNIQ_KEY without an allocation when it is as long as the Java client makes it
/// (32 hex digits): a `String` per message was a tenth of the consumers' malloc calls. Not a
/// slice of the pull body: that would pin the connection's whole read buffer until the last
/// message of it is consumed, and the reader would allocate a new one for every read.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum UniqKey {
    Inline {
        len: u8,
        bytes: [u8; INLINE_KEY],
        /// The sequence number of a key of the send builder's form (`rmq_client::uniq_key::key_seq`),
        /// read once here: the duplicate, order and failure accounting each read it, and each
        /// parse was 4% of a consumer's instructions per message. `NO_SEQ` for other keys.
        seq: u64,
    },
    Heap(Box<str>),
}

/// Bytes a key holds without an allocation: `MessageClientIDSetter`'s keys are 32.
const INLINE_KEY: usize = 32;

/// `UniqKey::Inline::seq` of a key that has none (sequence numbers are 48 bits).
const NO_SEQ: u64 = u64::MAX;

impl UniqKey {
    pub fn as_str(&self) -> &str {
        match self {
            // SAFETY: `inline` copied these bytes from a `str` or checked them ASCII, whole,
            // and nothing changes them. Validating them again on every read was 2% of the
            // consumers' CPU.
            UniqKey::Inline { len, bytes, .. } => unsafe {
                std::str::from_utf8_unchecked(&bytes[..*len as usize])
            },
            UniqKey::Heap(s) => s,
        }
    }

    /// The prefix and sequence number of a key the send builder wrote (any load's).
    pub fn key_seq(&self) -> Option<KeySeq<'_>> {
        match self {
            UniqKey::Inline { bytes, seq, .. } if *seq != NO_SEQ => Some(KeySeq {
                prefix: bytes.first_chunk()?,
                seq: *seq,
            }),
            _ => None,
        }
    }

    /// `b`, which is UTF-8 and at most `INLINE_KEY` bytes long, held inline.
    // Always: as a call, its 48-byte result goes through memory and the caller's first reads
    // of it stall (perf: 11.4 ns a consumed message out of line, where the generator's changes
    // of 3 December left it; about 5 ns inlined).
    #[inline(always)]
    fn inline(b: &[u8]) -> UniqKey {
        let mut bytes = [0; INLINE_KEY];
        bytes[..b.len()].copy_from_slice(b);
        UniqKey::Inline {
            len: b.len() as u8,
            bytes,
            seq: key_seq(b).map_or(NO_SEQ, |k| k.seq),
        }
    }
}

impl std::ops::Deref for UniqKey {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for UniqKey {
    fn from(s: &str) -> UniqKey {
        if s.len() > INLINE_KEY {
            return UniqKey::Heap(s.into());
        }
        UniqKey::inline(s.as_bytes())
    }
}

impl UniqKey {
    /// A key as a record stores it: its text, read lossily as Java reads properties. Inlined
    /// into the pull body's decode: returned through memory, the key was read back with loads
    /// wider than the stores that wrote it, a store-forwarding stall per consumed message.
    #[inline]
    pub fn from_bytes(b: &[u8]) -> UniqKey {
        // Keys are hex digits: an ASCII check (a few word compares) proves them UTF-8 without
        // the general validation, which was 2% of the consumers' CPU for 32 bytes a message.
        if b.len() <= INLINE_KEY && b.is_ascii() {
            return UniqKey::inline(b);
        }
        match std::str::from_utf8(b) {
            Ok(s) => UniqKey::from(s),
            Err(_) => UniqKey::from(&*String::from_utf8_lossy(b)),
        }
    }
}

impl fmt::Debug for UniqKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// One pulled message as the consumer keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Msg {
    pub queue_offset: i64,
    /// Body bytes: what `msgSize` (and so the size threshold) counts.
    pub body_len: u64,
    pub born_ms: i64,
    pub stored_ms: i64,
    /// The UNIQ_KEY, if the message has one.
    pub uniq_key: Option<UniqKey>,
    /// The record's CommitLog offset: what CONSUMER_SEND_MSG_BACK names.
    pub commit_log_offset: i64,
    /// `reconsumeTimes`: the stored count, raised in memory by a local re-consume.
    pub reconsume_times: i32,
    /// The count the stored record carries, never raised here: what the broker reads when it
    /// decides a send-back's destination (audit #20).
    pub stored_reconsume_times: i32,
    /// The topic the listener sees: RETRY_TOPIC for a message pulled from `%RETRY%<group>`.
    /// Shared by a pull's messages of one topic (one allocation per pull, not per message).
    pub topic: std::sync::Arc<str>,
}

impl Msg {
    /// The prefix and sequence number of its UNIQ_KEY, if a send builder wrote it.
    pub fn key_seq(&self) -> Option<KeySeq<'_>> {
        self.uniq_key.as_ref().and_then(UniqKey::key_seq)
    }
}

/// What the cache keeps of a message.
#[derive(Debug)]
enum Cached {
    /// Concurrently: its body size, all the gates and the commit offset read. The consume
    /// requests own the messages; nothing takes them back out of the cache in this mode.
    /// A whole `Msg` per entry (112 bytes, a shared topic to count) made the cache's inserts,
    /// removals and trims 14% of a consumer's instructions per message in `make floor`.
    Size(u64),
    /// Orderly: the message, which `take` hands out.
    Whole(Box<Msg>),
}

impl Cached {
    fn body_len(&self) -> u64 {
        match self {
            Cached::Size(n) => *n,
            Cached::Whole(m) => m.body_len,
        }
    }
}

/// A queue's cache of pulled messages.
#[derive(Debug, Default)]
pub struct ProcessQueue {
    /// Not yet consumed (orderly: not yet taken), by offset.
    msgs: OffsetMap<Cached>,
    /// Orderly mode: taken for consumption, not yet committed (`consumingMsgOrderlyTreeMap`).
    consuming: BTreeMap<i64, Msg>,
    /// Body bytes of both maps.
    size: u64,
    /// Offset of the last message put (`queueOffsetMax`).
    queue_offset_max: i64,
    /// Orderly mode: a consume task is running for this queue.
    pub orderly_running: bool,
}

impl ProcessQueue {
    /// Inserts the messages not cached yet (`putMessage`).
    pub fn put(&mut self, msgs: Vec<Msg>) -> Vec<Msg> {
        let mut added = Vec::with_capacity(msgs.len());
        for m in msgs {
            if self.msgs.contains_key(m.queue_offset)
                || self.consuming.contains_key(&m.queue_offset)
            {
                continue;
            }
            self.size += m.body_len;
            self.queue_offset_max = self.queue_offset_max.max(m.queue_offset);
            self.msgs
                .insert(m.queue_offset, Cached::Whole(Box::new(m.clone())));
            added.push(m);
        }
        added
    }

    /// Concurrently: [`ProcessQueue::put`] keeping in the cache only what the gates and the
    /// commit offset read (offset, body size), and `msgs` without those cached already.
    pub fn put_keys(&mut self, mut msgs: Vec<Msg>) -> Vec<Msg> {
        let (cache, size, max) = (&mut self.msgs, &mut self.size, &mut self.queue_offset_max);
        msgs.retain(|m| {
            let new = cache.insert(m.queue_offset, Cached::Size(m.body_len));
            if new {
                *size += m.body_len;
                *max = (*max).max(m.queue_offset);
            }
            new
        });
        msgs
    }

    /// Cached messages (`msgCount`; orderly: taken but uncommitted ones included).
    pub fn count(&self) -> u64 {
        (self.msgs.len() + self.consuming.len()) as u64
    }

    /// Cached body bytes (`msgSize`).
    pub fn size_bytes(&self) -> u64 {
        self.size
    }

    /// Last key − first key of the cache (`getMaxSpan`), 0 when empty.
    pub fn max_span(&self) -> i64 {
        match (self.msgs.first_key(), self.msgs.last_key()) {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        }
    }

    pub fn min_offset(&self) -> Option<i64> {
        self.msgs.first_key()
    }

    pub fn max_offset(&self) -> Option<i64> {
        self.msgs.last_key()
    }

    /// Removes consumed messages and returns the offset to commit (`removeMessage`): −1 if the
    /// cache was already empty; else the smallest offset still cached, or `queueOffsetMax + 1`
    /// when nothing is left. A consumed message above one still in flight does not advance it.
    pub fn remove(&mut self, offsets: &[i64]) -> i64 {
        if self.msgs.is_empty() {
            return -1;
        }
        for o in offsets {
            if let Some(m) = self.msgs.remove(*o) {
                self.size -= m.body_len();
            }
        }
        match self.msgs.first_key() {
            Some(k) => k,
            None => self.queue_offset_max + 1,
        }
    }

    /// Orderly: moves up to `n` messages from the head into the consuming set (`takeMessages`).
    pub fn take(&mut self, n: usize) -> Vec<Msg> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let Some((k, cached)) = self.msgs.pop_first() else {
                break;
            };
            let m = match cached {
                Cached::Whole(m) => *m,
                // Only `put_keys` caches sizes, and only a concurrent consumer calls it: a
                // queue is consumed in one mode for the whole run.
                Cached::Size(body_len) => Msg {
                    queue_offset: k,
                    body_len,
                    ..Msg::default()
                },
            };
            self.consuming.insert(k, m.clone());
            out.push(m);
        }
        out
    }

    /// Orderly: the taken messages were consumed (`commit`); returns the offset to commit, −1
    /// if nothing was taken.
    pub fn commit(&mut self) -> i64 {
        let next = self.consuming.last_key_value().map(|(k, _)| k + 1);
        for (_, m) in std::mem::take(&mut self.consuming) {
            self.size -= m.body_len;
        }
        next.unwrap_or(-1)
    }

    /// Orderly: the taken messages go back to the cache to be consumed again.
    pub fn rollback(&mut self) {
        for (k, m) in std::mem::take(&mut self.consuming) {
            self.msgs.insert(k, Cached::Whole(Box::new(m)));
        }
    }

    /// Orderly: `makeMessageToConsumeAgain` with the messages as the listener leaves them (their
    /// in-memory reconsumeTimes raised).
    pub fn consume_again(&mut self, again: Vec<Msg>) {
        for m in again {
            if self.consuming.remove(&m.queue_offset).is_some() {
                self.msgs.insert(m.queue_offset, Cached::Whole(Box::new(m)));
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.msgs.is_empty() && self.consuming.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(o: i64, len: u64) -> Msg {
        Msg {
            queue_offset: o,
            body_len: len,
            born_ms: 0,
            stored_ms: 0,
            ..Msg::default()
        }
    }

    #[test]
    fn committed_offset_is_the_smallest_unconsumed() {
        let mut pq = ProcessQueue::default();
        assert_eq!(pq.remove(&[1]), -1, "empty cache: nothing to commit");
        let added = pq.put((10..15).map(|o| msg(o, 100)).collect());
        assert_eq!(added.len(), 5);
        assert!(
            pq.put(vec![msg(12, 100)]).is_empty(),
            "an offset is cached once"
        );
        assert_eq!((pq.count(), pq.size_bytes(), pq.max_span()), (5, 500, 4));
        // 11..14 done while 10 is still in flight: the commit offset stays at 10.
        assert_eq!(pq.remove(&[11, 12, 13]), 10);
        assert_eq!(pq.remove(&[10]), 14);
        assert_eq!(pq.remove(&[14]), 15, "empty: queueOffsetMax + 1");
        assert_eq!((pq.count(), pq.size_bytes()), (0, 0));
    }

    #[test]
    fn keys_only_caching_counts_and_commits_as_the_full_cache() {
        let (mut full, mut keys) = (ProcessQueue::default(), ProcessQueue::default());
        let batch = |r: std::ops::Range<i64>| -> Vec<Msg> {
            r.map(|o| Msg {
                uniq_key: Some(format!("K{o}").as_str().into()),
                topic: "T".into(),
                ..msg(o, 100)
            })
            .collect()
        };
        let a = full.put(batch(10..15));
        let b = keys.put_keys(batch(10..15));
        assert_eq!(a, b, "the consume requests get whole messages");
        assert!(
            keys.put_keys(batch(12..13)).is_empty(),
            "an offset is cached once"
        );
        for pq in [&full, &keys] {
            assert_eq!((pq.count(), pq.size_bytes(), pq.max_span()), (5, 500, 4));
        }
        assert_eq!(full.remove(&[11, 12]), keys.remove(&[11, 12]));
        assert_eq!(full.remove(&[10, 13, 14]), keys.remove(&[10, 13, 14]));
        assert_eq!((keys.count(), keys.size_bytes()), (0, 0));
    }

    #[test]
    fn orderly_take_commit_and_rollback() {
        let mut pq = ProcessQueue::default();
        pq.put((0..5).map(|o| msg(o, 10)).collect());
        let t = pq.take(2);
        assert_eq!(t.iter().map(|m| m.queue_offset).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(pq.count(), 5, "taken messages still count for flow control");
        pq.rollback();
        assert_eq!(pq.take(3).len(), 3);
        assert_eq!(pq.commit(), 3);
        assert_eq!((pq.count(), pq.size_bytes()), (2, 20));
        assert_eq!(pq.commit(), -1);
    }
}

#[cfg(test)]
mod key_tests {
    use super::UniqKey;
    use rmq_client::uniq_key::key_seq;

    #[test]
    fn keys_of_any_length_read_back_whole() {
        for k in [
            "",
            "K",
            "7F0000010001AABBCCDD000000000007",
            "é-long-foreign-key-of-more-than-32-bytes",
        ] {
            let key = UniqKey::from(k);
            assert_eq!(key.as_str(), k);
            assert_eq!(matches!(key, UniqKey::Inline { .. }), k.len() <= 32, "{k}");
        }
        assert_eq!(format!("{:?}", Some(UniqKey::from("K"))), "Some(\"K\")");
    }

    proptest::proptest! {
        /// The sequence kept at decode is the one `key_seq` reads from the key's bytes, with
        /// the same prefix; a key of another form has none.
        #[test]
        fn a_key_keeps_the_sequence_its_bytes_hold(
            key in "7F000001[0-9A-F]{12}[0-9a-fA-F]{12}|[0-9A-Fg-]{30,34}|.{0,40}",
        ) {
            let held = UniqKey::from_bytes(key.as_bytes());
            let want = key_seq(key.as_bytes());
            proptest::prop_assert_eq!(held.key_seq(), want);
            proptest::prop_assert_eq!(held.as_str(), key.as_str());
        }
    }
}
