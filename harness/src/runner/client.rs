//! The wire side of the client: building send requests like the Java producer does. The
//! synchronous helper for admin calls lives in [`crate::runner::admin`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use remoting::headers::{SendMessageRequestHeader, SendMessageRequestHeaderV2};
use remoting::message::{encode_batch, encode_properties, BatchEntry};
use remoting::template::mark;
use remoting::{
    FrameCache, FrameTemplate, RemotingCommand, RequestCode, SerializeType, TemplateError,
};

use crate::runner::hex::{hex12, push_hex12, read_hex12};
use crate::runner::sink::SendSink;
use harness_model::profile::{HeaderKind, SendCode, Workload};
use harness_model::shard::Shard;

pub use crate::runner::admin::{parse_runtime_info, AdminConn, ClientError};

/// Builds send requests. Shared by the pacer (first attempts and retries).
#[derive(Debug, Clone)]
pub struct SendBuilder {
    code: SendCode,
    serialize: SerializeType,
    oneway: bool,
    batch: u32,
    body: Bytes,
    topic: String,
    queues: u32,
    producer_group: String,
    /// Maps UNIQ_KEY to and from the send number.
    keys: KeySpace,
    /// The request with every constant field filled in, built on first use.
    template: Option<RemotingCommand>,
    /// For JSON single-message sends: the template encoded once, with holes for the opaque
    /// and the values that change per send ([`SendFrame`]).
    frame: Option<SendFrame>,
    /// The last born timestamp and its digits: it changes once a millisecond.
    born_text: (i64, String),
    born: BornClock,
    /// The properties string of a signed send, reused so that the path allocates nothing.
    props: String,
}

/// How a JSON single-message send is written from its template.
#[derive(Debug, Clone)]
enum SendFrame {
    /// Queue id, born timestamp and the UNIQ_KEY's 12 digits written where they stand: the
    /// rest of `properties` is constant bytes of the template, escaped once. The last frame is
    /// kept and patched while the values keep their lengths.
    Marked(FrameTemplate, FrameCache),
    /// With credentials installed: whole raw values, which the signature covers.
    Signed(FrameTemplate),
}

impl SendFrame {
    /// The frame of `cmd` (a send's request, its three changing fields placeholders), or None
    /// to encode every send in full.
    fn new(cmd: &RemotingCommand, code: SendCode, key_prefix: &str) -> Option<SendFrame> {
        let keys = match code {
            SendCode::V1 => ["queueId", "bornTimestamp", "properties"],
            SendCode::V2 => ["e", "g", "i"],
        };
        let mut marked = cmd.clone();
        let values = [
            mark(0),
            mark(1),
            format!("{PROPS_HEAD}{key_prefix}{}{PROPS_TAIL}", mark(2)),
        ];
        for (key, value) in keys.iter().zip(values) {
            if let Some(v) = marked.ext_fields.get_mut(*key) {
                *v = value;
            }
        }
        match FrameTemplate::marked(&marked, 3) {
            Ok(t) => Some(SendFrame::Marked(t, FrameCache::default())),
            Err(TemplateError::MarkedSigned) => {
                FrameTemplate::new(cmd, &keys).ok().map(SendFrame::Signed)
            }
            Err(_) => None,
        }
    }
}

/// The properties string of §3.4 (name 0x01 value 0x02, for every pair) up to the UNIQ_KEY.
const PROPS_HEAD: &str = "WAIT\u{1}true\u{2}UNIQ_KEY\u{1}";
/// What follows the UNIQ_KEY.
const PROPS_TAIL: &str = "\u{2}";

/// The UNIQ_KEYs of one load: `prefix` (IP, pid, a per-load "classloader hash", 20 hex
/// digits, §3.4), then 12 hex digits. Java puts the time since the start of the month and a
/// 16-bit counter there; we put the send's sequence number (48 bits). Every key of a load is
/// still unique and 32 hex digits, which is all the broker and a Java consumer rely on; a retry
/// carries the same key, as the Java client's does; and a key read back from the store or a
/// pull maps to its send number ([`KeySpace::seq_of`], [`uniq_seq`]) with no table of strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpace {
    prefix: String,
}

impl KeySpace {
    fn write(&self, seq: u64, out: &mut String) {
        out.push_str(&self.prefix);
        push_hex12(seq, out);
    }

    /// The 20-hex-digit prefix of every key of the load.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The send number of `key`, or None for a key of another load.
    pub fn seq_of(&self, key: &str) -> Option<u64> {
        match uniq_seq(key) {
            Some((prefix, seq)) if prefix == self.prefix => Some(seq),
            _ => None,
        }
    }
}

impl SendBuilder {
    pub fn new(w: &Workload) -> SendBuilder {
        SendBuilder::for_shard(w, Shard::WHOLE)
    }

    /// The builder of one shard: its own producer group, and a UNIQ_KEY client part that
    /// differs from every other shard's even when all run as pid 1 in containers started in
    /// the same nanosecond (the high byte of the "classloader hash" is the shard index).
    pub fn for_shard(w: &Workload, shard: Shard) -> SendBuilder {
        let pid = std::process::id();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let mut hash = (nanos.as_nanos() as u32) ^ pid.rotate_left(16);
        if !shard.is_whole() {
            hash = (hash & 0x00ff_ffff) | ((shard.index & 0xff) << 24);
        }
        let prefix = format!("7F000001{:04X}{:08X}", pid as u16, hash);
        // A recognisable, compressible-but-not-trivial body.
        let body: Vec<u8> = (0..w.message_size).map(|i| b'a' + (i % 26) as u8).collect();
        SendBuilder {
            code: w.code,
            serialize: match w.header {
                HeaderKind::Json => SerializeType::Json,
                HeaderKind::Rocketmq => SerializeType::RocketMq,
            },
            oneway: w.oneway,
            batch: w.batch,
            body: Bytes::from(body),
            topic: w.topic.clone(),
            queues: w.queues,
            producer_group: shard.producer_group(&w.producer_group),
            keys: KeySpace { prefix },
            template: None,
            frame: None,
            born_text: (i64::MIN, String::new()),
            born: BornClock::default(),
            props: String::new(),
        }
    }

    pub fn oneway(&self) -> bool {
        self.oneway
    }

    /// UNIQ_KEY for message `seq` (32 hex digits like MessageClientIDSetter).
    pub fn uniq_key(&self, seq: u64) -> String {
        let mut out = String::with_capacity(32);
        self.keys.write(seq, &mut out);
        out
    }

    /// The first 20 hex digits of every UNIQ_KEY this builder writes.
    pub fn uniq_prefix(&self) -> &str {
        &self.keys.prefix
    }

    /// Replaces the 20-hex-digit prefix, so a consumer can tell this run's messages (and this
    /// builder's) from any other on the topic.
    pub fn set_uniq_prefix(&mut self, prefix: &str) {
        if prefix.len() == 20 && prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            self.keys.prefix = prefix.to_owned();
            self.template = None;
            self.frame = None;
        }
    }

    /// How this builder's keys map back to send numbers.
    pub fn key_space(&self) -> KeySpace {
        self.keys.clone()
    }

    /// Encodes send number `seq` with `opaque` into `dst` (cleared first).
    pub fn encode(&mut self, seq: u64, opaque: i32, dst: &mut BytesMut) {
        dst.clear();
        self.encode_into(seq, opaque, dst);
    }

    /// Appends send number `seq` with `opaque` to `dst`; returns the bytes appended.
    ///
    /// The request is built once and only the per-send fields (opaque, queue id, born
    /// timestamp, properties with UNIQ_KEY) change: at 100 k sends/s the generator's own cost
    /// per send is what limits pacing precision. JSON single-message sends go through a
    /// [`FrameTemplate`], which copies the constant bytes and writes only those four values.
    pub fn encode_into(&mut self, seq: u64, opaque: i32, dst: &mut BytesMut) -> usize {
        self.encode_into_queue(seq, None, opaque, Instant::now(), dst)
    }

    /// [`SendBuilder::encode_into`] to queue `queue` (a cluster router's choice) instead of
    /// `seq % queues`, born at `now` (the caller's clock reading, one per batch of sends).
    pub fn encode_into_queue<D: SendSink>(
        &mut self,
        seq: u64,
        queue: Option<i32>,
        opaque: i32,
        now: Instant,
        dst: &mut D,
    ) -> usize {
        let start = dst.filled();
        let queue_id = queue.unwrap_or((seq % u64::from(self.queues)) as i32);
        let born = self.born.epoch_ms(now);
        let batch = self.batch > 1;
        if self.template.is_none() {
            let template = self.build_template();
            if self.serialize == SerializeType::Json && !batch {
                self.frame = SendFrame::new(&template, self.code, &self.keys.prefix);
            }
            self.template = Some(template);
        }
        if let Some(frame) = &mut self.frame {
            let mut queue_digits = itoa::Buffer::new();
            let queue = queue_digits.format(queue_id);
            if self.born_text.0 != born {
                self.born_text.0 = born;
                self.born_text.1.clear();
                self.born_text.1.push_str(itoa::Buffer::new().format(born));
            }
            let born = self.born_text.1.as_str();
            match frame {
                SendFrame::Marked(t, cache) => {
                    let key = hex12(seq);
                    let values = [queue.as_bytes(), born.as_bytes(), &key[..]];
                    dst.put_marked(t, cache, opaque, &values);
                }
                SendFrame::Signed(t) => {
                    let props = &mut self.props;
                    props.clear();
                    props.push_str(PROPS_HEAD);
                    self.keys.write(seq, props);
                    props.push_str(PROPS_TAIL);
                    dst.put_with(|d| t.encode(opaque, &[queue, born, props], d));
                }
            }
            return dst.filled() - start;
        }
        let (kq, kg, ki) = match (self.code, batch) {
            (SendCode::V1, false) => ("queueId", "bornTimestamp", "properties"),
            _ => ("e", "g", "i"),
        };
        let body = if batch {
            let entries: Vec<BatchEntry> = (0..u64::from(self.batch))
                .map(|k| BatchEntry {
                    flag: 0,
                    body: self.body.to_vec(),
                    properties: encode_properties([
                        ("WAIT", "true"),
                        ("UNIQ_KEY", self.uniq_key(seq * 1024 + k).as_str()),
                    ]),
                })
                .collect();
            Some(encode_batch(&entries).freeze())
        } else {
            None
        };
        let uniq = (!batch).then(|| self.uniq_key(seq));
        let Some(cmd) = self.template.as_mut() else {
            return 0;
        };
        cmd.opaque = opaque;
        let set =
            |fields: &mut BTreeMap<String, String>, key: &str, value: std::fmt::Arguments<'_>| {
                if let Some(v) = fields.get_mut(key) {
                    v.clear();
                    let _ = v.write_fmt(value);
                }
            };
        set(&mut cmd.ext_fields, kq, format_args!("{queue_id}"));
        set(&mut cmd.ext_fields, kg, format_args!("{born}"));
        if let Some(u) = uniq {
            set(
                &mut cmd.ext_fields,
                ki,
                format_args!("{PROPS_HEAD}{u}{PROPS_TAIL}"),
            );
        }
        if let Some(b) = body {
            cmd.body = b;
        }
        dst.put_with(|d| cmd.encode(d));
        dst.filled() - start
    }

    fn build_template(&self) -> RemotingCommand {
        let batch = self.batch > 1;
        let code = if batch {
            RequestCode::SEND_BATCH_MESSAGE.as_i32()
        } else {
            match self.code {
                SendCode::V2 => RequestCode::SEND_MESSAGE_V2.as_i32(),
                SendCode::V1 => RequestCode::SEND_MESSAGE.as_i32(),
            }
        };
        // Placeholders, rewritten per send; a batch carries properties per entry only.
        let properties = (!batch).then(|| String::from("-"));
        let batch_flag = batch.then_some(true);
        let mut cmd = RemotingCommand::request(code, 0)
            .with_serialize_type(self.serialize)
            .with_body(self.body.clone());
        if code == RequestCode::SEND_MESSAGE.as_i32() {
            cmd = cmd.with_header(&SendMessageRequestHeader {
                producer_group: self.producer_group.clone(),
                topic: self.topic.clone(),
                default_topic: "TBW102".into(),
                default_topic_queue_nums: 4,
                queue_id: 0,
                sys_flag: 0,
                born_timestamp: 0,
                flag: 0,
                properties,
                reconsume_times: Some(0),
                unit_mode: Some(false),
                max_reconsume_times: None,
                batch: batch_flag,
                broker_name: None,
            });
        } else {
            cmd = cmd.with_header(&SendMessageRequestHeaderV2 {
                a: self.producer_group.clone(),
                b: self.topic.clone(),
                c: "TBW102".into(),
                d: 4,
                e: 0,
                f: 0,
                g: 0,
                h: 0,
                i: properties,
                j: Some(0),
                k: Some(false),
                l: None,
                m: batch_flag,
                n: None,
            });
        }
        if self.oneway {
            cmd = cmd.with_oneway();
        }
        cmd
    }
}

/// Hex digits before a UNIQ_KEY's sequence number: IP, pid and the per-load hash
/// ([`KeySpace`]).
pub const KEY_PREFIX_LEN: usize = 20;

/// The prefix of a load's UNIQ_KEYs, as bytes: compared as a fixed-size array, it needs no
/// call to `memcmp`, which was 2% of a consumer's instructions per message.
pub type KeyPrefix = [u8; KEY_PREFIX_LEN];

/// A UNIQ_KEY written by [`SendBuilder`], read: its prefix and the send's sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySeq<'a> {
    pub prefix: &'a KeyPrefix,
    pub seq: u64,
}

/// `key` read as [`SendBuilder`] writes it: 32 bytes, the last 12 hex digits the sequence.
/// The prefix is not checked here: a key of another load is told apart by it.
#[inline]
pub fn key_seq(key: &[u8]) -> Option<KeySeq<'_>> {
    let key: &[u8; KEY_PREFIX_LEN + 12] = key.try_into().ok()?;
    let (prefix, digits) = key.split_at(KEY_PREFIX_LEN);
    Some(KeySeq {
        prefix: prefix.try_into().ok()?,
        seq: read_hex12(digits.try_into().ok()?)?,
    })
}

/// A UNIQ_KEY written by [`SendBuilder`]: its 20-digit prefix and the send's sequence number.
pub fn uniq_seq(key: &str) -> Option<(&str, u64)> {
    // The prefix must be text to split there (a key is not always ASCII).
    let k = key_seq(key.as_bytes())?;
    Some((key.get(..KEY_PREFIX_LEN)?, k.seq))
}

/// How often [`BornClock`] reads the wall clock again: NTP may slew it against the monotonic
/// clock by up to 0.5 ms a second, so a born timestamp is at most that far from the wall clock.
const BORN_REANCHOR: Duration = Duration::from_secs(1);

/// Wall-clock epoch milliseconds, as the Java client stamps `bornTimestamp`, from the caller's
/// monotonic clock reading: the wall clock is read once a second and advanced by the monotonic
/// clock in between. A `SystemTime::now()` per send, and its arithmetic, were 6% of the
/// generator's CPU per send; the caller's reading is shared by a whole batch of sends.
#[derive(Debug, Default, Clone, Copy)]
struct BornClock {
    /// A monotonic instant and the wall clock's time since the epoch at that instant.
    anchor: Option<(Instant, Duration)>,
    /// The last reading and its answer: the sends of a batch share their reading.
    last: Option<(Instant, i64)>,
}

impl BornClock {
    fn epoch_ms(&mut self, now: Instant) -> i64 {
        if let Some((at, ms)) = self.last {
            if at == now {
                return ms;
            }
        }
        let ms = match self.anchor {
            Some((at, wall)) if now >= at && now - at < BORN_REANCHOR => {
                (wall + (now - at)).as_millis() as i64
            }
            _ => {
                let wall = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                self.anchor = Some((now, wall));
                wall.as_millis() as i64
            }
        };
        self.last = Some((now, ms));
        ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The hand-written hex parse reads what `from_str_radix` reads, and refuses the rest.
        #[test]
        fn a_key_sequence_reads_as_hex(seq in "[0-9a-fA-F]{12}|[0-9a-fA-FxX +-]{12}") {
            let key = format!("{}{seq}", "7F000001000100000000");
            let want = match seq.as_bytes()[0] {
                b'+' | b'-' => None,
                _ => u64::from_str_radix(&seq, 16).ok(),
            };
            proptest::prop_assert_eq!(uniq_seq(&key).map(|(_, s)| s), want);
        }
    }

    #[test]
    fn keys_map_back_to_their_send_number_and_keep_the_java_shape() {
        let b = SendBuilder::new(&Workload::default());
        let keys = b.key_space();
        for seq in [0u64, 1, 65_535, 65_536, 1_000_003, 40_000_000] {
            let k = b.uniq_key(seq);
            assert_eq!(k.len(), 32, "{k}");
            assert!(k.bytes().all(|c| c.is_ascii_hexdigit()), "{k}");
            assert_eq!(keys.seq_of(&k), Some(seq), "{k}");
        }
        let other = SendBuilder::new(&Workload::default());
        // Another load's keys differ in the prefix (its hash has the time in nanoseconds).
        if other.key_space() != keys {
            assert_eq!(keys.seq_of(&other.uniq_key(5)), None);
        }
        assert_eq!(keys.seq_of("short"), None);
    }

    #[test]
    fn digit_writers_match_the_formatter() {
        for v in [
            0u64,
            9,
            0xA,
            0xFFFF_FFFF_FFFF,
            0x1_0000_0000_0001,
            u64::MAX,
            40_000_000,
        ] {
            let mut got = String::from("x");
            push_hex12(v, &mut got);
            assert_eq!(got, format!("x{:012X}", v & 0xFFFF_FFFF_FFFF));
        }
    }

    /// The templated send, digits written where their marks stood, is byte for byte what the
    /// full encoder writes for the same fields.
    #[test]
    fn a_templated_send_is_what_the_full_encoder_writes() {
        for code in [SendCode::V1, SendCode::V2] {
            let w = Workload {
                code,
                message_size: 40,
                ..Workload::default()
            };
            let mut b = SendBuilder::new(&w);
            let now = Instant::now();
            for (seq, queue, opaque) in [
                (0u64, None, 1),
                (7, Some(3), -5),
                // Same lengths as the last: the kept frame, patched.
                (8, Some(4), -6),
                (0xFFFF_FFFF_FFFF, Some(12), i32::MAX),
                (40_000_000, None, i32::MIN),
            ] {
                let mut got = BytesMut::from(&b"before"[..]);
                let n = b.encode_into_queue(seq, queue, opaque, now, &mut got);
                assert!(matches!(b.frame, Some(SendFrame::Marked(..))));
                let mut want_cmd = b.build_template();
                want_cmd.opaque = opaque;
                let [kq, kg, ki] = match code {
                    SendCode::V1 => ["queueId", "bornTimestamp", "properties"],
                    SendCode::V2 => ["e", "g", "i"],
                };
                let q = queue.unwrap_or((seq % u64::from(w.queues)) as i32);
                let fields = &mut want_cmd.ext_fields;
                fields.insert(kq.into(), q.to_string());
                fields.insert(kg.into(), b.born.epoch_ms(now).to_string());
                let props = format!("{PROPS_HEAD}{}{PROPS_TAIL}", b.uniq_key(seq));
                fields.insert(ki.into(), props);
                let mut want = BytesMut::from(&b"before"[..]);
                want_cmd.encode(&mut want);
                assert_eq!(got, want, "{code:?} seq {seq}");
                assert_eq!(n, want.len() - 6);
            }
        }
    }

    #[test]
    fn born_timestamps_follow_the_monotonic_clock_and_reread_the_wall_clock_each_second() {
        let at = Instant::now();
        let wall = Duration::from_millis(1_700_000_000_000);
        let mut c = BornClock {
            anchor: Some((at, wall)),
            last: None,
        };
        assert_eq!(c.epoch_ms(at), 1_700_000_000_000);
        assert_eq!(
            c.epoch_ms(at + Duration::from_micros(2_500)),
            1_700_000_000_002
        );
        assert_eq!(
            c.epoch_ms(at + Duration::from_millis(999)),
            1_700_000_000_999
        );
        // A second after the anchor (or before it) the wall clock is read again.
        let later = at + BORN_REANCHOR;
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let got = c.epoch_ms(later);
        let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        assert!(
            (before.as_millis() as i64..=after.as_millis() as i64).contains(&got),
            "{got}"
        );
        assert_eq!(c.anchor.map(|(t, _)| t), Some(later));
    }
}
