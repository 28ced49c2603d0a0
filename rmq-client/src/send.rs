//! Building send requests like the Java producer does, from a [`SendSpec`]: the request
//! template built once, then per send only the opaque, queue id, born timestamp and UNIQ_KEY
//! written where they stand.

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

use crate::sink::SendSink;
use crate::uniq_key::{hex12, KeySpace};

/// Which send request carries a single message: SEND_MESSAGE (10, long header names) or
/// SEND_MESSAGE_V2 (310, one-letter names, what the Java client sends).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestVersion {
    V1,
    #[default]
    V2,
}

/// What a load's sends are: everything [`SendBuilder`] needs, with no profile type (the
/// harness fills it from a workload and a shard).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendSpec {
    pub version: RequestVersion,
    pub serialize: SerializeType,
    pub oneway: bool,
    /// Messages per SEND_BATCH_MESSAGE; 1 sends single messages.
    pub batch: u32,
    pub message_size: usize,
    pub topic: String,
    pub queues: u32,
    pub producer_group: String,
    /// The shard index when the schedule is split over several generators: it goes into the
    /// UNIQ_KEY's "classloader hash" so that shards' keys never collide.
    pub shard: Option<u32>,
}

impl Default for SendSpec {
    fn default() -> Self {
        SendSpec {
            version: RequestVersion::V2,
            serialize: SerializeType::Json,
            oneway: false,
            batch: 1,
            message_size: 128,
            topic: "BenchTopic".into(),
            queues: 8,
            producer_group: "bench_producer".into(),
            shard: None,
        }
    }
}

/// Builds send requests. Shared by the pacer (first attempts and retries).
#[derive(Debug, Clone)]
pub struct SendBuilder {
    code: RequestVersion,
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
    fn new(cmd: &RemotingCommand, code: RequestVersion, key_prefix: &str) -> Option<SendFrame> {
        let keys = match code {
            RequestVersion::V1 => ["queueId", "bornTimestamp", "properties"],
            RequestVersion::V2 => ["e", "g", "i"],
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

impl SendBuilder {
    /// The builder of a load's sends. With `spec.shard` set, the UNIQ_KEY's client part
    /// differs from every other shard's even when all run as pid 1 in containers started in
    /// the same nanosecond (the high byte of the "classloader hash" is the shard index).
    pub fn new(spec: &SendSpec) -> SendBuilder {
        let pid = std::process::id();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let mut hash = (nanos.as_nanos() as u32) ^ pid.rotate_left(16);
        if let Some(index) = spec.shard {
            hash = (hash & 0x00ff_ffff) | ((index & 0xff) << 24);
        }
        let prefix = format!("7F000001{:04X}{:08X}", pid as u16, hash);
        // A recognisable, compressible-but-not-trivial body.
        let body: Vec<u8> = (0..spec.message_size)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        SendBuilder {
            code: spec.version,
            serialize: spec.serialize,
            oneway: spec.oneway,
            batch: spec.batch,
            body: Bytes::from(body),
            topic: spec.topic.clone(),
            queues: spec.queues,
            producer_group: spec.producer_group.clone(),
            keys: KeySpace::new(prefix),
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
        self.keys.prefix()
    }

    /// Replaces the 20-hex-digit prefix, so a consumer can tell this run's messages (and this
    /// builder's) from any other on the topic.
    pub fn set_uniq_prefix(&mut self, prefix: &str) {
        if prefix.len() == 20 && prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            self.keys = KeySpace::new(prefix.to_owned());
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
                self.frame = SendFrame::new(&template, self.code, self.keys.prefix());
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
            (RequestVersion::V1, false) => ("queueId", "bornTimestamp", "properties"),
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
                RequestVersion::V2 => RequestCode::SEND_MESSAGE_V2.as_i32(),
                RequestVersion::V1 => RequestCode::SEND_MESSAGE.as_i32(),
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

    #[test]
    fn keys_map_back_to_their_send_number_and_keep_the_java_shape() {
        let b = SendBuilder::new(&SendSpec::default());
        let keys = b.key_space();
        for seq in [0u64, 1, 65_535, 65_536, 1_000_003, 40_000_000] {
            let k = b.uniq_key(seq);
            assert_eq!(k.len(), 32, "{k}");
            assert!(k.bytes().all(|c| c.is_ascii_hexdigit()), "{k}");
            assert_eq!(keys.seq_of(&k), Some(seq), "{k}");
        }
        let other = SendBuilder::new(&SendSpec::default());
        // Another load's keys differ in the prefix (its hash has the time in nanoseconds).
        if other.key_space() != keys {
            assert_eq!(keys.seq_of(&other.uniq_key(5)), None);
        }
        assert_eq!(keys.seq_of("short"), None);
    }

    /// The templated send, digits written where their marks stood, is byte for byte what the
    /// full encoder writes for the same fields.
    #[test]
    fn a_templated_send_is_what_the_full_encoder_writes() {
        for code in [RequestVersion::V1, RequestVersion::V2] {
            let w = SendSpec {
                version: code,
                message_size: 40,
                ..SendSpec::default()
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
                    RequestVersion::V1 => ["queueId", "bornTimestamp", "properties"],
                    RequestVersion::V2 => ["e", "g", "i"],
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
