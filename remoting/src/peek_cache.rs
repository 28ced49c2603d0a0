//! [`crate::peek_frame`] for a stream of answers from one broker, which differ in little but
//! their numbers.
//!
//! A broker writes every send's answer with the same keys after `flag`: in a 5.3 broker's
//! `,"flag":1,"language":"JAVA","opaque":12345,"serializeTypeCurrentRPC":"JSON","version":479}`
//! only the opaque changes from one answer to the next. So once one header has been read from
//! its ends, the next is compared with it instead: its end must be the same bytes after the
//! opaque's digits, and the same bytes from `,"flag"` up to them. Those bytes were found to hold
//! the top-level `flag` and `opaque` keys with nothing nesting, closing or escaping after them,
//! and equal bytes hold them again; `code` is read from the start as before. Anything else is
//! peeked as [`crate::peek_frame`] peeks it, and becomes the new layout to compare with.

use crate::frame_bits::SerializeType;
use crate::peek::{int_after, peek_json, peek_rocketmq, sorted_at, HeaderPeek, CODE};

/// The layout of the last JSON header read from its ends (see the module).
#[derive(Debug, Default, Clone)]
pub struct PeekCache {
    /// From the comma before `"flag"` to the colon after `"opaque"`.
    middle: Vec<u8>,
    /// After the opaque's digits to the header's end.
    suffix: Vec<u8>,
    flag: i32,
    known: bool,
}

impl PeekCache {
    pub fn new() -> PeekCache {
        PeekCache::default()
    }

    /// The same answer as [`crate::peek_frame`], for a frame whose length field was stripped.
    pub fn peek_frame(&mut self, frame: &[u8]) -> Option<HeaderPeek> {
        let mark = u32::from_be_bytes(frame.get(..4)?.try_into().ok()?);
        let header_len = (mark & 0x00FF_FFFF) as usize;
        let header = frame.get(4..4 + header_len)?;
        match SerializeType::from_byte((mark >> 24) as u8).ok()? {
            SerializeType::Json => self.peek_json(header),
            SerializeType::RocketMq => peek_rocketmq(header),
        }
    }

    fn peek_json(&mut self, h: &[u8]) -> Option<HeaderPeek> {
        if let Some(p) = self.known_layout(h) {
            return Some(p);
        }
        match sorted_at(h) {
            Some(s) => {
                self.learn(h, s.flag_colon, s.opaque_colon, s.peek.flag);
                Some(s.peek)
            }
            None => peek_json(h),
        }
    }

    /// `h` read as the learnt layout, or `None` when it is not that layout.
    fn known_layout(&self, h: &[u8]) -> Option<HeaderPeek> {
        if !self.known || !h.starts_with(CODE) || !h.ends_with(&self.suffix) {
            return None;
        }
        // The opaque's digits, read from their end while they are found: the learnt middle
        // ends with the colon before them and the learnt suffix starts with what ended them
        // in a header the sorted peek read, so the value between is the opaque exactly when it
        // is 1 to 10 digits, after a minus or not, and fits an i32 (as `int_after` reads it).
        let end = h.len() - self.suffix.len();
        let (digits, mut value) = digits_before(h, end);
        let mut start = end - digits;
        if start > 0 && h[start - 1] == b'-' {
            start -= 1;
            value = -value;
        }
        let head = h[..start].strip_suffix(self.middle.as_slice())?;
        // `code`'s value and the middle must not overlap.
        if digits == 0 || head.len() <= CODE.len() {
            return None;
        }
        Some(HeaderPeek {
            code: code_of(h)?,
            opaque: i32::try_from(value).ok()?,
            flag: self.flag,
        })
    }

    /// Keeps the layout of `h`, whose sorted peek found `flag` and `opaque` at these colons.
    fn learn(&mut self, h: &[u8], flag_colon: usize, opaque_colon: usize, flag: i32) {
        const FLAG_KEY: &[u8] = b",\"flag\"";
        let digits_end = h[opaque_colon + 1..]
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'-'))
            .map(|n| opaque_colon + 1 + n);
        self.known = false;
        let Some(digits_end) = digits_end else {
            return;
        };
        // Only `flag` before `opaque`, and the opaque's digits right after its colon (no
        // space), as every broker writes them; anything else is peeked without the cache.
        if flag_colon > opaque_colon
            || flag_colon < FLAG_KEY.len()
            || digits_end == opaque_colon + 1
            || !h[..flag_colon].ends_with(FLAG_KEY)
        {
            return;
        }
        let middle_start = flag_colon - FLAG_KEY.len();
        self.middle.clear();
        self.middle
            .extend_from_slice(&h[middle_start..=opaque_colon]);
        self.suffix.clear();
        self.suffix.extend_from_slice(&h[digits_end..]);
        self.flag = flag;
        self.known = true;
    }
}

/// The decimal digits that end at `end` in `h`, at most 10 of them: how many, and their value.
/// Eight bytes at a time: a digit at a time, with a running power of ten, was about 75
/// instructions an answer, a third of the peek.
#[inline]
fn digits_before(h: &[u8], end: usize) -> (usize, i64) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    if end < 8 {
        return digits_bytewise(h, end, 0, 0, 1);
    }
    let word: [u8; 8] = h[end - 8..end].try_into().expect("8 bytes");
    // Each byte's digit value in the low nibble when it is a digit: '0'..='9' are 0x30..=0x39.
    let t = u64::from_le_bytes(word) ^ (0x30 * ONES);
    // A byte is no digit when its high nibble is set or its low nibble is 10 or more; the low
    // nibbles are masked first so that the addition carries into no other byte.
    let not_digit = (t & (0xF0 * ONES)) | (((t & (0x0F * ONES)) + 6 * ONES) & (0x10 * ONES));
    // The last bytes in memory are the word's highest: the digits that end at `end`.
    let k = (not_digit.leading_zeros() / 8) as usize;
    match k {
        0 => (0, 0),
        1..=7 => {
            // The bytes before the digits read as leading zeros.
            let drop = 64 - 8 * k as u32;
            (k, eight_digits(t >> drop << drop))
        }
        _ => digits_bytewise(h, end - 8, 8, eight_digits(t), 100_000_000),
    }
}

/// The value of eight digit values (0 to 9) in the bytes of `t`, the first digit in the lowest
/// byte (as eight bytes of memory load little-endian).
fn eight_digits(t: u64) -> i64 {
    // The products carry past the top byte on purpose: wrapping, and the masks keep what counts.
    let pairs = t.wrapping_mul(10).wrapping_add(t >> 8);
    let fours = ((pairs & 0x0000_00FF_0000_00FF)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((pairs >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32))))
        >> 32;
    fours as i64
}

/// [`digits_before`] a byte at a time from `end`, with `count` digits of `value` already read
/// after it and `scale` the next digit's place.
fn digits_bytewise(
    h: &[u8],
    end: usize,
    mut count: usize,
    mut value: i64,
    mut scale: i64,
) -> (usize, i64) {
    let mut at = end;
    while at > 0 && count < 10 {
        let d = h[at - 1].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        value += i64::from(d) * scale;
        scale *= 10;
        count += 1;
        at -= 1;
    }
    (count, value)
}

/// `code`'s value in a header that starts with [`CODE`]: one digit and a comma, as in every
/// success, or else read as `int_after` reads it.
fn code_of(h: &[u8]) -> Option<i32> {
    match h.get(CODE.len()..CODE.len() + 2) {
        Some(&[d, b',']) if d.is_ascii_digit() => Some(i32::from(d - b'0')),
        _ => int_after(h, CODE.len() - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peek_frame;

    fn frame(header: &str) -> Vec<u8> {
        let mut f = (header.len() as u32).to_be_bytes().to_vec();
        f.extend_from_slice(header.as_bytes());
        f
    }

    fn send_ok(opaque: i64, offset: u64) -> Vec<u8> {
        frame(&format!(
            "{{\"code\":0,\"extFields\":{{\"msgId\":\"7F00000100002A9F{offset:016X}\",\
             \"queueId\":\"0\",\"queueOffset\":\"{offset}\"}},\"flag\":1,\"language\":\"JAVA\",\
             \"opaque\":{opaque},\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}}"
        ))
    }

    #[test]
    fn answers_of_one_layout_are_read_against_the_first() {
        let mut c = PeekCache::new();
        for (i, opaque) in [7i64, 8, 1_000_000_000, -5, 0, 2_147_483_647, 42]
            .iter()
            .enumerate()
        {
            let f = send_ok(*opaque, i as u64 * 977);
            assert_eq!(c.peek_frame(&f), peek_frame(&f), "opaque {opaque}");
            assert!(c.known);
            if i > 0 {
                // Read from the learnt layout, not learnt again.
                let h = &f[4..];
                assert_eq!(c.known_layout(h), peek_frame(&f));
            }
        }
    }

    #[test]
    fn opaques_at_the_ends_of_an_int_read_as_the_plain_peek_reads_them() {
        let mut c = PeekCache::new();
        let _ = c.peek_frame(&send_ok(1, 1));
        for opaque in [
            i64::from(i32::MAX),
            i64::from(i32::MAX) + 1,
            i64::from(i32::MIN),
            i64::from(i32::MIN) - 1,
            9_999_999_999,
            -9_999_999_999,
            10_000_000_000,
            0,
            -0,
        ] {
            let f = send_ok(opaque, 3);
            assert_eq!(c.peek_frame(&f), peek_frame(&f), "opaque {opaque}");
            let _ = c.peek_frame(&send_ok(5, 5));
        }
        // A code of two digits, or of one digit before a space, is read by the walk's rules.
        for code in ["17", "1 ", "-1", "0"] {
            let header = format!(
                "{{\"code\":{code},\"flag\":1,\"language\":\"JAVA\",\"opaque\":9,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}}"
            );
            let f = frame(&header);
            let _ = c.peek_frame(&f);
            assert_eq!(c.peek_frame(&f), peek_frame(&f), "{header}");
        }
    }

    #[test]
    fn anything_else_gets_the_plain_peeks_answer() {
        let mut c = PeekCache::new();
        let _ = c.peek_frame(&send_ok(1, 1));
        for header in [
            // Another code, a remark (another suffix), another flag.
            "{\"code\":2,\"flag\":1,\"language\":\"JAVA\",\"opaque\":9,\"remark\":\"[REJECTREQUEST]system busy\",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
            "{\"code\":0,\"flag\":0,\"language\":\"JAVA\",\"opaque\":9,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
            // An opaque too long for an int, a space before it, a key order the walk must read.
            "{\"code\":0,\"flag\":1,\"language\":\"JAVA\",\"opaque\":99999999999,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
            "{\"code\":0,\"flag\":1,\"language\":\"JAVA\",\"opaque\":00000000001,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
            "{\"code\":0,\"flag\":1,\"language\":\"JAVA\",\"opaque\": 9,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
            "{\"opaque\":3,\"code\":0,\"flag\":1,\"language\":\"JAVA\",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
            // The learnt tail inside a nested object, with the real keys before it.
            "{\"code\":0,\"flag\":0,\"opaque\":1,\"x\":{\"a\":0,\"flag\":1,\"language\":\"JAVA\",\"opaque\":9,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}}",
            // Nothing before the learnt middle but `code` without a value.
            "{\"code\":,\"flag\":1,\"language\":\"JAVA\",\"opaque\":9,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
            "{\"code\":0}",
            "",
        ] {
            let f = frame(header);
            assert_eq!(c.peek_frame(&f), peek_frame(&f), "{header}");
            // The same after relearning from a plain send answer.
            let _ = c.peek_frame(&send_ok(5, 5));
            assert_eq!(c.peek_frame(&f), peek_frame(&f), "{header}");
        }
        assert_eq!(c.peek_frame(&[0, 0]), None);
    }

    proptest::proptest! {
        /// Bytes of any kind before any end: the word-at-a-time count and value are the
        /// byte-at-a-time ones.
        #[test]
        fn digits_before_reads_as_a_digit_at_a_time(
            h in proptest::collection::vec(
                proptest::prop_oneof![
                    6 => proptest::sample::select(b"0123456789".to_vec()),
                    1 => proptest::sample::select(b"/:-,\"\x00\x7f\x80\xb0\xc9\xfa\xff".to_vec()),
                    1 => proptest::num::u8::ANY,
                ],
                0..24,
            ),
            cut in proptest::num::usize::ANY,
        ) {
            let end = if h.is_empty() { 0 } else { cut % (h.len() + 1) };
            proptest::prop_assert_eq!(digits_before(&h, end), digits_bytewise(&h, end, 0, 0, 1));
        }
    }

    #[test]
    fn eight_digits_reads_every_place() {
        for s in [
            "00000000", "12345678", "99999999", "00000001", "10000000", "90807060",
        ] {
            let t = u64::from_le_bytes(s.as_bytes().try_into().unwrap()) ^ 0x3030_3030_3030_3030;
            assert_eq!(eight_digits(t), s.parse::<i64>().unwrap(), "{s}");
        }
    }
}
