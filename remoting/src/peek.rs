//! The three header fields a client needs for every response, read without decoding the rest.
//!
//! A load generator matches each response to its request by `opaque`, tells a response from a
//! request by `flag`, and counts it by `code`. A full decode also builds the `extFields` map and
//! unescapes every string, which costs more than everything else the generator does per send. A
//! caller peeks first and decodes in full only when it needs more (a remark to classify, a
//! header to read); `None` from a peek means "decode in full", never "invalid".

use crate::command::SerializeType;

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
fn peek_rocketmq(h: &[u8]) -> Option<HeaderPeek> {
    if h.len() < 13 {
        return None;
    }
    Some(HeaderPeek {
        code: i16::from_be_bytes([h[0], h[1]]) as i32,
        opaque: i32::from_be_bytes([h[5], h[6], h[7], h[8]]),
        flag: i32::from_be_bytes([h[9], h[10], h[11], h[12]]),
    })
}

/// Walks the top-level object only: nested objects (`extFields`) and strings are skipped as
/// whole values, so an ext field named `code` is never mistaken for the command's. Missing
/// `opaque` and `flag` are 0, as in the full decoder; a missing `code` is `None`.
fn peek_json(h: &[u8]) -> Option<HeaderPeek> {
    let mut s = Scanner { b: h, i: 0 };
    s.expect(b'{')?;
    let (mut code, mut opaque, mut flag) = (None, 0, 0);
    if s.peek_byte()? == b'}' {
        return None;
    }
    loop {
        let key = s.key()?;
        s.expect(b':')?;
        match key {
            b"code" => code = Some(s.int()?),
            b"opaque" => opaque = s.int()?,
            b"flag" => flag = s.int()?,
            _ => s.skip_value()?,
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
        let len = self.b[start..]
            .iter()
            .position(|&c| c == b'"' || c == b'\\')?;
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
            // Strings are most of a header's bytes: memchr scans them a vector at a time.
            let k = memchr::memchr2(b'"', b'\\', rest)?;
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
