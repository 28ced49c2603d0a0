//! Property tests: every command survives encode → decode in both serializations, and no byte
//! sequence makes the decoder panic or allocate beyond the frame limit.

use std::collections::BTreeMap;

use bytes::BytesMut;
use proptest::prelude::*;
use remoting::{
    decode_frame,
    message::{decode_batch, encode_batch, BatchEntry},
    LanguageCode, RemotingCommand, SerializeType, MAX_FRAME_LEN,
};

fn arb_command() -> impl Strategy<Value = RemotingCommand> {
    (
        // The binary header carries code and version as int16 (reference §1.4).
        any::<i16>(),
        0u8..14,
        any::<i16>(),
        any::<i32>(),
        0i32..4,
        proptest::option::of("\\PC{1,40}"),
        proptest::collection::btree_map("[a-zA-Z_]{1,12}", "\\PC{0,30}", 0..8),
        prop_oneof![Just(SerializeType::Json), Just(SerializeType::RocketMq)],
        proptest::collection::vec(any::<u8>(), 0..256),
    )
        .prop_map(
            |(code, lang, version, opaque, flag, remark, ext, st, body)| RemotingCommand {
                code: code as i32,
                language: LanguageCode(lang),
                version: version as i32,
                opaque,
                flag,
                remark,
                ext_fields: ext.into_iter().collect::<BTreeMap<_, _>>(),
                serialize_type: st,
                body: body.into(),
            },
        )
}

proptest! {
    #[test]
    fn encode_then_decode_is_identity(cmd in arb_command()) {
        let mut buf = BytesMut::new();
        cmd.encode(&mut buf);
        let decoded = decode_frame(&mut buf, MAX_FRAME_LEN).unwrap().unwrap();
        prop_assert_eq!(decoded, cmd);
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn frames_split_anywhere_reassemble(cmds in proptest::collection::vec(arb_command(), 1..5), cut in any::<prop::sample::Index>()) {
        let mut wire = BytesMut::new();
        for c in &cmds { c.encode(&mut wire); }
        let cut = cut.index(wire.len() + 1);
        let mut buf = BytesMut::from(&wire[..cut]);
        let mut out = Vec::new();
        while let Some(c) = decode_frame(&mut buf, MAX_FRAME_LEN).unwrap() { out.push(c); }
        buf.extend_from_slice(&wire[cut..]);
        while let Some(c) = decode_frame(&mut buf, MAX_FRAME_LEN).unwrap() { out.push(c); }
        prop_assert_eq!(out, cmds);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut buf = BytesMut::from(&bytes[..]);
        // Either a command, "need more", or a typed error; loop until one of the latter two.
        for _ in 0..64 {
            match decode_frame(&mut buf, MAX_FRAME_LEN) {
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => break,
            }
        }
        prop_assert!(buf.capacity() <= MAX_FRAME_LEN + 4096);
    }

    #[test]
    fn batch_bodies_round_trip(entries in proptest::collection::vec(
        (any::<i32>(), proptest::collection::vec(any::<u8>(), 0..64), "[A-Z]{1,5}\u{1}[a-z0-9]{1,5}\u{2}"), 0..6)) {
        let entries: Vec<BatchEntry> = entries.into_iter()
            .map(|(flag, body, properties)| BatchEntry { flag, body, properties })
            .collect();
        prop_assert_eq!(decode_batch(&encode_batch(&entries)).unwrap(), entries);
    }
}

proptest! {
    /// The peek and the full decoder agree on every command either serialization can carry,
    /// including ext fields named like the top-level keys and remarks full of quotes and braces.
    #[test]
    fn peek_agrees_with_decode(cmd in arb_command(), shadow in proptest::option::of(("code|flag|opaque", "[0-9{}\\[\\]\",]{0,8}"))) {
        let mut cmd = cmd;
        if let Some((k, v)) = shadow { cmd.ext_fields.insert(k, v); }
        let mut buf = BytesMut::new();
        cmd.encode(&mut buf);
        let peeked = remoting::peek_frame(&buf[4..]).expect("our own encoding is always peekable");
        prop_assert_eq!((peeked.code, peeked.opaque, peeked.flag), (cmd.code, cmd.opaque, cmd.flag));
    }

    #[test]
    fn peek_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = remoting::peek_frame(&bytes);
        let _ = remoting::PeekCache::new().peek_frame(&bytes);
    }

    /// A connection's cache gives the plain peek's answer for every frame of a stream: answers of
    /// one layout that differ in their opaque (what it reads against the learnt layout), mixed
    /// with any other command (which it learns from, or peeks without it).
    #[test]
    fn the_peek_cache_agrees_with_the_plain_peek(
        base in arb_command(),
        stream in proptest::collection::vec((any::<i32>(), proptest::option::of(arb_command())), 1..12),
    ) {
        let mut cache = remoting::PeekCache::new();
        for (opaque, other) in stream {
            let mut cmd = other.unwrap_or_else(|| base.clone());
            cmd.opaque = opaque;
            let mut buf = BytesMut::new();
            cmd.encode(&mut buf);
            prop_assert_eq!(cache.peek_frame(&buf[4..]), remoting::peek_frame(&buf[4..]));
        }
    }

    #[test]
    fn the_peek_cache_never_panics(frames in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 1..6)) {
        let mut cache = remoting::PeekCache::new();
        for f in frames {
            let mut framed = (f.len() as u32).to_be_bytes().to_vec();
            framed.extend_from_slice(&f);
            let _ = cache.peek_frame(&framed);
            let _ = cache.peek_frame(&f);
        }
    }
}

proptest! {
    /// A template re-emits exactly what the full encoder writes, for any ext map, any choice of
    /// templated fields and any values (quotes, backslashes, control characters included).
    #[test]
    fn template_equals_full_encode(
        cmd in arb_command(),
        opaque in any::<i32>(),
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
        values in proptest::collection::vec("\\PC{0,20}|[\\x00-\\x1f\"\\\\]{0,5}", 4),
    ) {
        let mut cmd = cmd;
        cmd.serialize_type = SerializeType::Json;
        let keys: Vec<String> = cmd.ext_fields.keys().cloned().collect();
        let mut slots: Vec<&str> = Vec::new();
        if !keys.is_empty() {
            for p in &picks {
                let k = keys[p.index(keys.len())].as_str();
                if !slots.contains(&k) { slots.push(k); }
            }
        }
        let t = remoting::FrameTemplate::new(&cmd, &slots).unwrap();
        let vals: Vec<&str> = values.iter().take(slots.len()).map(String::as_str).collect();
        let mut got = BytesMut::new();
        t.encode(opaque, &vals, &mut got);
        let mut want_cmd = cmd.clone();
        want_cmd.opaque = opaque;
        for (k, v) in slots.iter().zip(&vals) { want_cmd.ext_fields.insert((*k).to_string(), (*v).to_string()); }
        let mut want = BytesMut::new();
        want_cmd.encode(&mut want);
        prop_assert_eq!(&got, &want);
        // The same values escaped by the caller (as serde_json escapes them, without the quotes)
        // and written into the slots give the same bytes.
        let escaped: Vec<String> = vals
            .iter()
            .map(|v| {
                let quoted = serde_json::to_string(v).unwrap();
                quoted[1..quoted.len() - 1].to_string()
            })
            .collect();
        let mut pre = BytesMut::new();
        let filled = t.encode_with(opaque, &mut pre, |i, d| d.extend_from_slice(escaped[i].as_bytes()));
        prop_assert_eq!(filled, Some(()));
        prop_assert_eq!(pre, want);
    }
}

proptest! {
    /// A mark placed inside a value (text around it, escaped characters included) is filled in
    /// place: the frame is what the full encoder writes for the value with the slot's text where
    /// the mark stood.
    #[test]
    fn marked_template_equals_full_encode(
        cmd in arb_command(),
        opaque in any::<i32>(),
        pick in any::<prop::sample::Index>(),
        before in "\\PC{0,12}|[\\x00-\\x1f\"\\\\]{0,4}",
        after in "\\PC{0,12}|[\\x00-\\x1f\"\\\\]{0,4}",
        value in "[0-9A-F]{0,12}",
    ) {
        let mut cmd = cmd;
        cmd.serialize_type = SerializeType::Json;
        prop_assume!(!cmd.ext_fields.is_empty());
        prop_assume!(![&before, &after].iter().any(|s| s.contains('\u{7f}')));
        let keys: Vec<String> = cmd.ext_fields.keys().cloned().collect();
        let key = keys[pick.index(keys.len())].clone();
        let mut marked = cmd.clone();
        marked.ext_fields.insert(key.clone(), format!("{before}{}{after}", remoting::template::mark(0)));
        // A value elsewhere that holds DEL could hold a mark too: then the template refuses.
        let t = match remoting::FrameTemplate::marked(&marked, 1) {
            Ok(t) => t,
            Err(e) => { prop_assert_eq!(e, remoting::TemplateError::Ambiguous); return Ok(()); }
        };
        let mut got = BytesMut::new();
        prop_assert_eq!(t.encode_with(opaque, &mut got, |_, dst| dst.extend_from_slice(value.as_bytes())), Some(()));
        let mut want_cmd = cmd.clone();
        want_cmd.opaque = opaque;
        want_cmd.ext_fields.insert(key, format!("{before}{value}{after}"));
        let mut want = BytesMut::new();
        want_cmd.encode(&mut want);
        prop_assert_eq!(got, want);
    }
}

/// The definition `message::property` is read against: pairs split by U+0002, name and value by
/// the first U+0001, the first pair of that name with a non-empty value.
fn property_by_split<'a>(s: &'a str, name: &str) -> Option<&'a str> {
    s.split('\u{2}')
        .filter_map(|pair| pair.split_once('\u{1}'))
        .find(|(n, v)| *n == name && !v.is_empty())
        .map(|(_, v)| v)
}

proptest! {
    /// Any string and name (separators in either, empty pairs and values, names that prefix or
    /// end others, non-ASCII)
    /// gives the same value as the split-based definition.
    #[test]
    fn property_lookup_agrees_with_splitting(
        s in "[A-Ka-c_\u{1}\u{2}é]{0,60}",
        name in "[A-Ka-c_\\u{1}\\u{2}é]{0,4}",
    ) {
        prop_assert_eq!(remoting::message::property(&s, &name), property_by_split(&s, &name));
    }

    /// Properties as producers write them: every name finds its value.
    #[test]
    fn property_lookup_finds_every_encoded_pair(
        pairs in proptest::collection::btree_map("[A-Z_]{1,10}", "[ -~é]{1,20}", 0..8),
    ) {
        let s = remoting::message::encode_properties(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        for (k, v) in &pairs {
            prop_assert_eq!(remoting::message::property(&s, k), Some(v.as_str()));
        }
        prop_assert_eq!(remoting::message::property(&s, "NOT_THERE"), None);
    }
}
