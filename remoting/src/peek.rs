//! The three header fields a client needs for every response, read without decoding the rest.
//!
//! A load generator matches each response to its request by `opaque`, tells a response from a
//! request by `flag`, and counts it by `code`. A full decode also builds the `extFields` map and
//! unescapes every string, which costs more than everything else the generator does per send. A
//! caller peeks first and decodes in full only when it needs more (a remark to classify, a
//! header to read); `None` from a peek means "decode in full", never "invalid".

use crate::frame_bits::SerializeType;

/// `code`, `opaque` and `flag` of a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderPeek {
    pub code: i32,
    pub opaque: i32,
    pub flag: i32,
}

/// Peeks at a frame whose 4-byte length field has been stripped (what [`crate::decode_frame`]
/// hands to [`crate::RemotingCommand::decode`]).
pub fn peek_frame(frame: &[u8]) -> Option<HeaderPeek> {
    let mark = u32::from_be_bytes(frame.get(..4)?.try_into().ok()?);
    let header_len = (mark & 0x00FF_FFFF) as usize;
    let header = frame.get(4..4 + header_len)?;
    match SerializeType::from_byte((mark >> 24) as u8).ok()? {
        SerializeType::Json => peek_json(header),
        SerializeType::RocketMq => peek_rocketmq(header),
    }
}

/// The binary header starts with code i16, language u8, version i16, opaque i32, flag i32.
pub(crate) fn peek_rocketmq(h: &[u8]) -> Option<HeaderPeek> {
    if h.len() < 13 {
        return None;
    }
    Some(HeaderPeek {
        code: i16::from_be_bytes([h[0], h[1]]) as i32,
        opaque: i32::from_be_bytes([h[5], h[6], h[7], h[8]]),
        flag: i32::from_be_bytes([h[9], h[10], h[11], h[12]]),
    })
}

/// The layout every Java broker writes (fastjson sorts the keys: `code`, `extFields`, `flag`,
/// `language`, `opaque`, ...), read from both ends instead of walked: `code` is the first key, and
/// the last `,"flag":` and `,"opaque":` are top-level keys when nothing after them nests, closes
/// or escapes but the header's final `}`. A key inside a nested object would be followed by that
/// object's own `}`; inside a string it cannot occur, since a string's quotes are escaped. Any
/// other layout is `None`, and [`peek_json`] walks the header. On a send's answer this is about
/// half the cost of the walk (a `peek_frame` loop over 20 M answers, CPU time).
fn peek_json_sorted(h: &[u8]) -> Option<HeaderPeek> {
    sorted_at(h).map(|s| s.peek)
}

/// `{"code":`, the start of every header [`peek_json_sorted`] reads.
pub(crate) const CODE: &[u8] = b"{\"code\":";

/// What [`peek_json_sorted`] found, and where: the colons after `"flag"` and `"opaque"`.
pub(crate) struct Sorted {
    pub peek: HeaderPeek,
    pub flag_colon: usize,
    pub opaque_colon: usize,
}

pub(crate) fn sorted_at(h: &[u8]) -> Option<Sorted> {
    if !h.starts_with(CODE) || h.last() != Some(&b'}') {
        return None;
    }
    // From the end, colon by colon (a reverse substring search cost more than the walk): the
    // first colon after `"opaque"` and the first after `"flag"`. A few keys follow them in
    // every broker's header; a header with more is walked instead.
    let (mut opaque_at, mut flag_at) = (None, None);
    let mut end = h.len() - 1;
    let first = loop {
        let colon = memchr::memrchr(b':', &h[..end])?;
        // A key right after a comma: `"a\"flag":` ends like `"flag":` but is another key.
        let is = |name: &[u8]| {
            let key = &h[..colon];
            key.ends_with(name) && key[..key.len() - name.len()].ends_with(b",")
        };
        if opaque_at.is_none() && is(b"\"opaque\"") {
            opaque_at = Some(colon);
        } else if flag_at.is_none() && is(b"\"flag\"") {
            flag_at = Some(colon);
        }
        if opaque_at.is_some() && flag_at.is_some() {
            break colon;
        }
        if h.len() - colon > 256 {
            return None;
        }
        end = colon;
    };
    let tail = &h[first..h.len() - 1];
    if memchr::memchr3(b'{', b'}', b'\\', tail).is_some()
        || memchr::memchr2(b'[', b']', tail).is_some()
    {
        return None;
    }
    let (flag_colon, opaque_colon) = (flag_at?, opaque_at?);
    Some(Sorted {
        peek: HeaderPeek {
            code: int_after(h, CODE.len() - 1)?,
            opaque: int_after(h, opaque_colon)?,
            flag: int_after(h, flag_colon)?,
        },
        flag_colon,
        opaque_colon,
    })
}

/// The integer value after the colon at `colon`, when a `,` or the object's `}` ends it.
pub(crate) fn int_after(h: &[u8], colon: usize) -> Option<i32> {
    let mut s = Scanner { b: h, i: colon + 1 };
    let v = s.int()?;
    matches!(s.peek_byte()?, b',' | b'}').then_some(v)
}

/// Walks the top-level object only: nested objects (`extFields`) and strings are skipped as
/// whole values, so an ext field named `code` is never mistaken for the command's. Missing
/// `opaque` and `flag` are 0, as in the full decoder; a missing `code` is `None`.
pub(crate) fn peek_json(h: &[u8]) -> Option<HeaderPeek> {
    if let Some(p) = peek_json_sorted(h) {
        return Some(p);
    }
    let mut s = Scanner { b: h, i: 0 };
    s.expect(b'{')?;
    let (mut code, mut opaque, mut flag) = (None, 0, 0);
    if s.peek_byte()? == b'}' {
        return None;
    }
    // Which of the three have been read: once all have, the rest of the header (language,
    // remark, serialize type, version) is not walked.
    let mut seen = 0u8;
    loop {
        let key = s.key()?;
        s.expect(b':')?;
        match key {
            b"code" => {
                code = Some(s.int()?);
                seen |= 1;
            }
            b"opaque" => {
                opaque = s.int()?;
                seen |= 2;
            }
            b"flag" => {
                flag = s.int()?;
                seen |= 4;
            }
            _ => s.skip_value()?,
        }
        if seen == 7 {
            break;
        }
        match s.next_byte()? {
            b',' => continue,
            b'}' => break,
            _ => return None,
        }
    }
    Some(HeaderPeek {
        code: code?,
        opaque,
        flag,
    })
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn skip_ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek_byte(&mut self) -> Option<u8> {
        self.skip_ws();
        self.b.get(self.i).copied()
    }

    fn next_byte(&mut self) -> Option<u8> {
        let c = self.peek_byte()?;
        self.i += 1;
        Some(c)
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        (self.next_byte()? == c).then_some(())
    }

    /// A key without escapes (an escaped key sends the caller to the full decoder).
    fn key(&mut self) -> Option<&'a [u8]> {
        self.expect(b'"')?;
        let start = self.i;
        let len = quote_or_backslash(&self.b[start..])?;
        if self.b[start + len] == b'\\' {
            return None;
        }
        self.i = start + len + 1;
        Some(&self.b[start..start + len])
    }

    fn int(&mut self) -> Option<i32> {
        self.skip_ws();
        let negative = self.b.get(self.i) == Some(&b'-');
        if negative {
            self.i += 1;
        }
        let mut value: i64 = 0;
        let start = self.i;
        while let Some(&c) = self.b.get(self.i) {
            if !c.is_ascii_digit() || self.i - start == 10 {
                break;
            }
            value = value * 10 + i64::from(c - b'0');
            self.i += 1;
        }
        let digits = self.i - start;
        if digits == 0 || self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        i32::try_from(if negative { -value } else { value }).ok()
    }

    /// Skips a string whose opening quote is at the cursor.
    fn skip_string(&mut self) -> Option<()> {
        self.expect(b'"')?;
        self.skip_string_body()
    }

    /// Skips to just past the closing quote of a string that has been opened.
    fn skip_string_body(&mut self) -> Option<()> {
        loop {
            let rest = self.b.get(self.i..)?;
            let k = quote_or_backslash(rest)?;
            self.i += k + 1;
            if rest[k] == b'"' {
                return Some(());
            }
            self.i += 1; // the escaped character
        }
    }

    /// Skips one value of any kind. Objects and arrays are walked byte by byte, strings skipped
    /// whole; nesting is bounded by the header's length.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek_byte()? {
            b'"' => self.skip_string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    let c = *self.b.get(self.i)?;
                    self.i += 1;
                    match c {
                        b'"' => self.skip_string_body()?,
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {
                let len = self.b[self.i..]
                    .iter()
                    .position(|&c| matches!(c, b',' | b'}' | b']'))?;
                self.i += len;
                Some(())
            }
        }
    }
}

/// The first `"` or `\\` in `s`. Header strings are mostly short names and numbers, and walking
/// them byte by byte was the larger part of a peek (a profile of the generator showed it): eight
/// bytes are tested at a time, and what is left after [`SWAR_SPAN`] bytes goes to memchr.
fn quote_or_backslash(s: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // A byte of `x` is zero: the lowest flagged byte is exact (higher flags may be false).
    let zero_bytes = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let mut at = 0;
    while at + 8 <= s.len().min(SWAR_SPAN) {
        let mut word = [0u8; 8];
        word.copy_from_slice(&s[at..at + 8]);
        let x = u64::from_le_bytes(word);
        let hits =
            zero_bytes(x ^ (ONES * u64::from(b'"'))) | zero_bytes(x ^ (ONES * u64::from(b'\\')));
        if hits != 0 {
            return Some(at + (hits.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    if at >= SWAR_SPAN {
        return memchr::memchr2(b'"', b'\\', &s[at..]).map(|k| at + k);
    }
    s[at..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\')
        .map(|k| at + k)
}

/// Bytes searched eight at a time before a string is handed to memchr.
const SWAR_SPAN: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_top_level_fields_and_skips_ext_fields_with_the_same_names() {
        let h = br#"{"code":2,"extFields":{"code":"7","opaque":"8","x":{"flag":[1,{"a":"}"}]}},"flag":1,"language":"JAVA","opaque":-42,"remark":"a \"quoted\" }","serializeTypeCurrentRPC":"JSON","version":479}"#;
        assert_eq!(
            peek_json(h),
            Some(HeaderPeek {
                code: 2,
                opaque: -42,
                flag: 1
            })
        );
    }

    #[test]
    fn finds_the_first_quote_or_backslash_at_every_offset() {
        for len in 0..150 {
            for at in 0..=len {
                for c in [b'"', b'\\'] {
                    let mut s = vec![b'a'; len];
                    // Bytes that differ from the targets by one bit or borrow must not match.
                    for (i, b) in s.iter_mut().enumerate() {
                        *b = [b'a', b'#', b'!', b'[', b']', 0x80 | b'"', 0x01][i % 7];
                    }
                    if at < len {
                        s[at] = c;
                        // A later target must not hide the first.
                        if at + 3 < len {
                            s[at + 3] = b'"';
                        }
                    }
                    let want = s.iter().position(|&b| b == b'"' || b == b'\\');
                    assert_eq!(quote_or_backslash(&s), want, "len {len} at {at}");
                }
            }
        }
    }

    #[test]
    fn the_sorted_layout_is_read_from_its_ends_and_anything_else_is_walked() {
        let send_ok = br#"{"code":0,"extFields":{"MSG_REGION":"DefaultRegion","msgId":"7F","queueOffset":"7"},"flag":1,"language":"JAVA","opaque":-42,"serializeTypeCurrentRPC":"JSON","version":479}"#;
        let want = Some(HeaderPeek {
            code: 0,
            opaque: -42,
            flag: 1,
        });
        assert_eq!(peek_json_sorted(send_ok), want);
        // Each of these is left to the walk, which still reads it right.
        for (h, want) in [
            // The ext field named opaque is the last one: no top-level opaque.
            (
                &br#"{"code":3,"extFields":{"opaque":"9"},"flag":1}"#[..],
                Some((3, 0, 1)),
            ),
            // A key that ends like flag.
            (
                br#"{"code":3,"flag":2,"opaque":5,"x\"flag":7}"#,
                Some((3, 5, 2)),
            ),
            // Something after the last keys nests, closes or escapes.
            (
                br#"{"code":3,"flag":2,"opaque":5,"remark":"a \"b\""}"#,
                Some((3, 5, 2)),
            ),
            (
                br#"{"code":3,"flag":2,"opaque":5,"x":[1]}"#,
                Some((3, 5, 2)),
            ),
            // Spaces, another order.
            (
                br#"{ "code" : 3, "flag" : 2, "opaque" : 5 }"#,
                Some((3, 5, 2)),
            ),
            (br#"{"opaque":5,"flag":2,"code":3}"#, Some((3, 5, 2))),
        ] {
            assert_eq!(peek_json_sorted(h), None, "{}", String::from_utf8_lossy(h));
            let got = peek_json(h).map(|p| (p.code, p.opaque, p.flag));
            assert_eq!(got, want, "{}", String::from_utf8_lossy(h));
        }
    }

    #[test]
    fn missing_opaque_and_flag_are_zero_missing_code_is_none() {
        assert_eq!(
            peek_json(br#"{ "code" : 17 }"#),
            Some(HeaderPeek {
                code: 17,
                opaque: 0,
                flag: 0
            })
        );
        assert_eq!(peek_json(br#"{"opaque":1}"#), None);
        assert_eq!(peek_json(br#"{}"#), None);
        assert_eq!(peek_json(br#"{"c\u006fde":1}"#), None);
        assert_eq!(peek_json(br#"{"code":99999999999}"#), None);
        assert_eq!(peek_json(br#"{"code":1"#), None);
    }
}
