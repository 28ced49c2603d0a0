//! The JSON header as every RocketMQ peer writes it, read without serde: one flat object of
//! the known keys, integers, plain strings and a flat `extFields` map of plain strings. A
//! "plain" string has no escape and no control character, and all of it is valid UTF-8.
//!
//! Anything else (whitespace, an escape, a number as a string, a decimal, a duplicate or
//! unknown key, a nested value, a null) is `None`, and the caller decodes with serde, which
//! is lenient where fastjson is. So this reads nothing serde would read differently: a property
//! test holds the two to the same result. serde's generic path (a visitor per field, a map
//! per header) was 7% of the consumers' CPU in `make floor`, for a 250-byte pull answer.

use std::collections::BTreeMap;

use crate::code::LanguageCode;
use crate::header_fields::DecodedHeader;

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    /// A plain string.
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.i;
        // Bytes of 0x80 and up are noted on the way: a header is ASCII, and then the general
        // UTF-8 check (its set-up is most of its cost for a 10-byte string; a pull answer has
        // 20 of them) is not needed.
        let mut high = 0u8;
        let len = self.b[start..].iter().position(|&c| {
            high |= c;
            c == b'"' || c == b'\\' || c < 0x20
        })?;
        self.i = start + len;
        self.eat(b'"')?;
        let s = &self.b[start..start + len];
        if high < 0x80 {
            // SAFETY: every byte of `s` is below 0x80 (`high` is their bitwise or): ASCII, so UTF-8.
            Some(unsafe { std::str::from_utf8_unchecked(s) })
        } else {
            std::str::from_utf8(s).ok()
        }
    }

    /// An integer as JSON writes one (no leading zero, no fraction or exponent) that fits `i32`.
    fn int(&mut self) -> Option<i32> {
        let neg = self.eat(b'-').is_some();
        let start = self.i;
        let digits = self.b[start..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits == 0 || digits > 10 || (digits > 1 && self.b[start] == b'0') {
            return None;
        }
        self.i += digits;
        if matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let v = self.b[start..self.i]
            .iter()
            .fold(0i64, |v, d| v * 10 + i64::from(d - b'0'));
        i32::try_from(if neg { -v } else { v }).ok()
    }

    /// `{"k":"v",...}`, plain strings only, each pair handed to `pair`.
    fn ext_fields(&mut self, pair: &mut impl FnMut(&'a str, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let k = self.string()?;
            self.eat(b':')?;
            let v = self.string()?;
            pair(k, v)?;
            if self.eat(b'}').is_some() {
                return Some(());
            }
            self.eat(b',')?;
        }
    }
}

/// A plain header's fields, its strings borrowed.
struct Fields<'a> {
    code: i32,
    language: LanguageCode,
    version: i32,
    opaque: i32,
    flag: i32,
    remark: Option<&'a str>,
}

/// The header, or `None` when it is not in the plain form (see the module doc).
pub(crate) fn decode(b: &[u8]) -> Option<DecodedHeader> {
    let mut ext_fields = BTreeMap::new();
    let f = walk(b, &mut |k, v| {
        ext_fields.insert(k.to_owned(), v.to_owned());
        Some(())
    })?;
    Some(DecodedHeader {
        code: f.code,
        language: f.language,
        version: f.version,
        opaque: f.opaque,
        flag: f.flag,
        remark: f.remark.map(str::to_owned),
        ext_fields,
    })
}

/// Reads a plain header; `pair` gets each `extFields` pair in order, and refuses with `None`.
fn walk<'a>(
    b: &'a [u8],
    pair: &mut impl FnMut(&'a str, &'a str) -> Option<()>,
) -> Option<Fields<'a>> {
    let mut c = Cursor { b, i: 0 };
    c.eat(b'{')?;
    let (mut code, mut language, mut version, mut opaque, mut flag) =
        (None, None, None, None, None);
    let (mut remark, mut ext, mut serialize_type) = (None, None, None);
    loop {
        let key = c.string()?;
        c.eat(b':')?;
        // A key seen twice is serde's error to report.
        let fresh = match key {
            "code" => code.replace(c.int()?).is_none(),
            "flag" => flag.replace(c.int()?).is_none(),
            "opaque" => opaque.replace(c.int()?).is_none(),
            "version" => version.replace(c.int()?).is_none(),
            "language" => language
                .replace(LanguageCode::from_name(c.string()?)?)
                .is_none(),
            "remark" => remark.replace(c.string()?).is_none(),
            "serializeTypeCurrentRPC" => serialize_type.replace(c.string()?).is_none(),
            "extFields" => ext.replace(c.ext_fields(pair)?).is_none(),
            _ => return None,
        };
        if !fresh {
            return None;
        }
        if c.eat(b'}').is_some() {
            break;
        }
        c.eat(b',')?;
    }
    if c.i != b.len() {
        return None;
    }
    Some(Fields {
        code: code?,
        language: language.unwrap_or(LanguageCode::JAVA),
        version: version.unwrap_or(0),
        opaque: opaque.unwrap_or(0),
        flag: flag.unwrap_or(0),
        remark,
    })
}

/// `extFields` pairs a [`PlainFrame`] holds; a header with more is read in full.
const PAIRS: usize = 8;

/// A frame whose header is plain, read in place: no map, no string copied. For a reader that
/// needs a few fields of many answers (a consumer's pull answers).
pub struct PlainFrame<'a> {
    pub code: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<&'a str>,
    ext: [(&'a str, &'a str); PAIRS],
    pairs: usize,
    /// Where the body starts in the frame.
    pub body_at: usize,
}

impl<'a> PlainFrame<'a> {
    /// The `extFields` pairs, in order ([`crate::headers::ExtFields`] reads them).
    pub fn ext(&self) -> &[(&'a str, &'a str)] {
        &self.ext[..self.pairs]
    }

    pub fn is_response(&self) -> bool {
        self.flag & crate::frame_bits::FLAG_RESPONSE != 0
    }
}

/// Reads a frame whose 4-byte length field has been stripped, if its header is JSON in the
/// plain form with at most 8 `extFields`; `None` means "decode it in full", never "invalid".
/// What it reads is what [`crate::RemotingCommand::decode`] reads (a property test holds the
/// two to the same fields).
pub fn read_frame(frame: &[u8]) -> Option<PlainFrame<'_>> {
    let mark = u32::from_be_bytes(frame.get(..4)?.try_into().ok()?);
    if (mark >> 24) as u8 != crate::frame_bits::SerializeType::Json.as_byte() {
        return None;
    }
    let header_len = (mark & 0x00FF_FFFF) as usize;
    let header = frame.get(4..4 + header_len)?;
    let (mut ext, mut pairs) = ([("", ""); PAIRS], 0);
    let f = walk(header, &mut |k, v| {
        *ext.get_mut(pairs)? = (k, v);
        pairs += 1;
        Some(())
    })?;
    Some(PlainFrame {
        code: f.code,
        opaque: f.opaque,
        flag: f.flag,
        remark: f.remark,
        ext,
        pairs,
        body_at: 4 + header_len,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::decode_json_serde;
    use proptest::prelude::*;

    fn both(
        json: &str,
    ) -> (
        Option<DecodedHeader>,
        Result<DecodedHeader, crate::DecodeError>,
    ) {
        (decode(json.as_bytes()), decode_json_serde(json.as_bytes()))
    }

    #[test]
    fn a_java_pull_answer_is_read_plainly_and_as_serde_reads_it() {
        let json = r#"{"code":0,"extFields":{"maxOffset":"4000","minOffset":"0","nextBeginOffset":"32","suggestWhichBrokerId":"0"},"flag":1,"language":"JAVA","opaque":77,"remark":"FOUND","serializeTypeCurrentRPC":"JSON","version":453}"#;
        let (fast, slow) = both(json);
        let fast = fast.expect("plain");
        assert_eq!(Ok(&fast), slow.as_ref());
        assert_eq!(
            (fast.code, fast.opaque, fast.flag, fast.version),
            (0, 77, 1, 453)
        );
        assert_eq!(fast.ext_fields["nextBeginOffset"], "32");
    }

    /// A string of ASCII is taken without the UTF-8 check; any other string is checked, and
    /// one that is not UTF-8 is not plain (serde refuses it too).
    #[test]
    fn strings_beyond_ascii_are_checked_as_utf8() {
        let wide = r#"{"code":0,"remark":"déjà vu","opaque":1}"#;
        let (fast, slow) = both(wide);
        assert_eq!(
            fast.as_ref().and_then(|h| h.remark.as_deref()),
            Some("déjà vu")
        );
        assert_eq!(fast.map(Ok), Some(slow));
        let mut broken = br#"{"code":0,"remark":"ab","opaque":1}"#.to_vec();
        let at = broken.iter().position(|&c| c == b'b').unwrap();
        broken[at] = 0xFF;
        assert_eq!(decode(&broken), None);
        assert!(decode_json_serde(&broken).is_err());
    }

    #[test]
    fn what_is_not_plain_is_left_to_serde() {
        for json in [
            r#"{"code":0 }"#,
            r#"{"code":"0"}"#,
            r#"{"code":1.0}"#,
            r#"{"code":01}"#,
            r#"{"code":0,"code":1}"#,
            r#"{"code":0,"remark":"a\"b"}"#,
            r#"{"code":0,"remark":null}"#,
            r#"{"code":0,"language":1}"#,
            r#"{"code":0,"extFields":{"a":1}}"#,
            r#"{"code":0,"extFields":{"a":{"b":"c"}}}"#,
            r#"{"code":0,"other":1}"#,
            r#"{"code":2147483648}"#,
            r#"{"opaque":1}"#,
            r#"{"code":0}x"#,
        ] {
            assert_eq!(decode(json.as_bytes()), None, "{json}");
        }
    }

    fn plain() -> impl Strategy<Value = String> {
        // Mostly plain text, now and then a quote, a backslash, a control or a wide character.
        prop_oneof![19 => "[a-zA-Z0-9_%.:\\- ]{0,12}", 1 => ".{0,6}"]
    }

    /// Any JSON value a header might hold.
    fn any_value() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<i64>().prop_map(|v| v.to_string()),
            plain().prop_map(|s| serde_json::to_string(&s).unwrap()),
            Just("null".to_owned()),
            Just("1.5".to_owned()),
            Just("\"7\"".to_owned()),
            prop::collection::btree_map(plain(), any::<i8>(), 0..3)
                .prop_map(|m| serde_json::to_string(&m).unwrap()),
        ]
    }

    /// A value of the key's own type most of the time, any value now and then.
    fn value_for(key: &'static str) -> BoxedStrategy<String> {
        let right: BoxedStrategy<String> = match key {
            "language" => prop_oneof![
                6 => Just("\"JAVA\"".to_owned()),
                6 => Just("\"CPP\"".to_owned()),
                6 => Just("\"RUST\"".to_owned()),
                1 => Just("\"KLINGON\"".to_owned()),
            ]
            .boxed(),
            "remark" | "serializeTypeCurrentRPC" => plain()
                .prop_map(|s| serde_json::to_string(&s).unwrap())
                .boxed(),
            "extFields" => prop::collection::btree_map(plain(), plain(), 0..4)
                .prop_map(|m| serde_json::to_string(&m).unwrap())
                .boxed(),
            _ => prop_oneof![
                9 => any::<i32>().prop_map(|v| v.to_string()),
                9 => (-3i64..3).prop_map(|v| v.to_string()),
                1 => any::<i64>().prop_map(|v| v.to_string()),
            ]
            .boxed(),
        };
        prop_oneof![30 => right, 1 => any_value()].boxed()
    }

    /// A header of the known keys in any order, some missing, now and then an unknown one.
    fn header_text() -> impl Strategy<Value = String> {
        const KEYS: [&str; 9] = [
            "code",
            "flag",
            "opaque",
            "version",
            "language",
            "remark",
            "serializeTypeCurrentRPC",
            "extFields",
            "x",
        ];
        let fields: Vec<BoxedStrategy<Option<(&'static str, String)>>> = KEYS
            .iter()
            .map(|&k| {
                let weight_absent = match k {
                    "x" => 200,
                    "code" => 1,
                    _ => 3,
                };
                prop_oneof![
                    weight_absent => Just(None),
                    10 => value_for(k).prop_map(move |v| Some((k, v))),
                ]
                .boxed()
            })
            .collect();
        fields
            .prop_flat_map(|pairs| {
                let pairs: Vec<(&str, String)> = pairs.into_iter().flatten().collect();
                Just(pairs).prop_shuffle()
            })
            .prop_map(|pairs| {
                let body: Vec<String> = pairs.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                format!("{{{}}}", body.join(","))
            })
    }

    proptest! {
        /// Whatever the plain reader reads, serde reads the same.
        #[test]
        fn the_plain_reader_agrees_with_serde(json in header_text()) {
            if let Some(fast) = decode(json.as_bytes()) {
                prop_assert_eq!(Ok(fast), decode_json_serde(json.as_bytes()), "{}", json);
            }
        }

        /// A frame read in place reads what the full decode reads; a plain header of at most
        /// 8 ext pairs is always read in place.
        #[test]
        fn a_frame_read_in_place_is_the_decoded_frame(
            json in header_text(),
            body in prop::collection::vec(any::<u8>(), 0..16),
        ) {
            let mut frame = (json.len() as u32).to_be_bytes().to_vec();
            frame.extend_from_slice(json.as_bytes());
            frame.extend_from_slice(&body);
            let full = crate::RemotingCommand::decode(bytes::Bytes::from(frame.clone()));
            let plain = decode(json.as_bytes());
            match read_frame(&frame) {
                Some(v) => {
                    let cmd = full.expect("what is read in place decodes");
                    prop_assert_eq!((v.code, v.opaque, v.flag), (cmd.code, cmd.opaque, cmd.flag));
                    prop_assert_eq!(v.remark, cmd.remark.as_deref());
                    let ext: BTreeMap<String, String> =
                        v.ext().iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                    prop_assert_eq!(&ext, &cmd.ext_fields);
                    for k in cmd.ext_fields.keys() {
                        use crate::headers::ExtFields;
                        prop_assert_eq!(v.ext().ext(k), cmd.ext_fields.ext(k));
                    }
                    prop_assert_eq!(&frame[v.body_at..], &cmd.body[..]);
                }
                None => prop_assert!(
                    plain.is_none_or(|h| h.ext_fields.len() > PAIRS),
                    "a plain header of few pairs is read in place: {}", json
                ),
            }
        }

        /// Every header our encoder writes with plain values is read plainly.
        #[test]
        fn what_we_write_plainly_is_read_plainly(
            code in any::<i16>(), opaque in any::<i32>(), flag in 0i32..4,
            remark in proptest::option::of("[a-zA-Z0-9 ]{0,20}"),
            ext in prop::collection::btree_map("[a-zA-Z]{1,12}", "[a-zA-Z0-9:.%]{0,20}", 0..6),
        ) {
            let mut cmd = crate::RemotingCommand::request(i32::from(code), 0);
            cmd.opaque = opaque;
            cmd.flag = flag;
            cmd.remark = remark;
            cmd.ext_fields = ext;
            let frame = cmd.to_bytes();
            let header = &frame[8..frame.len() - cmd.body.len()];
            let fast = decode(header);
            prop_assert!(fast.is_some(), "{}", String::from_utf8_lossy(header));
            prop_assert_eq!(fast.map(Ok), Some(decode_json_serde(header)));
        }
    }
}
