//! A PULL_MESSAGE body into messages. A record that is truncated or malformed is an error the
//! consumer counts; the records before it are kept, the rest of the body is dropped. The body
//! CRC is not checked, as the Java client does not check it on the pull path
//! (`MessageDecoder.decode` of 4.3 and 4.9 reads BODYCRC and never compares it; 5.3's
//! `decodesBatch`, which `PullAPIWrapper.processPullResult` calls, passes `checkCRC` false):
//! a message whose body is corrupt is consumed, by Java and here. The CRC was also 5% of a
//! consumer's instructions per message. Records are read in place (`RecordRef`): only the
//! fields a `Msg` keeps are copied out.

use std::sync::Arc;

use remoting::message::{property_bytes, PROPERTY_RETRY_TOPIC, PROPERTY_UNIQ_CLIENT_MESSAGE_ID};
use remoting::record_ref::{decode_record_ref, RecordRefAt};

use crate::consumer::process_queue::{Msg, UniqKey};

/// The messages of `body`, and the decode error that ended it early, if one did.
pub fn decode_pull_body(body: &[u8]) -> (Vec<Msg>, Option<String>) {
    let mut out = Vec::new();
    let mut rest = body;
    // The last topic seen, as stored and as shown: a pull's records are of one topic (two for
    // a retry queue's), compared as bytes and converted once.
    let mut topic: Option<(&[u8], Arc<str>)> = None;
    while !rest.is_empty() {
        match decode_record_ref(rest, false) {
            Ok(RecordRefAt::Message { record, len }) => {
                if out.is_empty() {
                    // Records of a pull are about one size: room for all at once, not six
                    // reallocations for 32 messages.
                    out.reserve(body.len() / len.max(1));
                }
                // resetRetryAndNamespace: a retried message shows its original topic.
                let shown = if record.topic.starts_with(b"%RETRY%") {
                    property_bytes(record.properties, PROPERTY_RETRY_TOPIC).unwrap_or(record.topic)
                } else {
                    record.topic
                };
                let topic = match &topic {
                    Some((stored, t)) if *stored == shown => t.clone(),
                    _ => {
                        let t: Arc<str> = Arc::from(String::from_utf8_lossy(shown));
                        topic.insert((shown, t)).1.clone()
                    }
                };
                out.push(Msg {
                    queue_offset: record.queue_offset,
                    body_len: record.body.len() as u64,
                    born_ms: record.born_timestamp,
                    stored_ms: record.store_timestamp,
                    uniq_key: property_bytes(record.properties, PROPERTY_UNIQ_CLIENT_MESSAGE_ID)
                        .map(UniqKey::from_bytes),
                    commit_log_offset: record.physical_offset,
                    reconsume_times: record.reconsume_times,
                    stored_reconsume_times: record.reconsume_times,
                    topic,
                });
                rest = &rest[len.min(rest.len())..];
            }
            Ok(RecordRefAt::EndOfFile { .. } | RecordRefAt::Empty) => break,
            Err(e) => {
                let at = body.len() - rest.len();
                return (out, Some(format!("record at byte {at}: {e}")));
            }
        }
    }
    (out, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use remoting::message::{encode_properties, MessageRecord};

    fn record(offset: i64) -> MessageRecord {
        MessageRecord {
            queue_id: 0,
            flag: 0,
            queue_offset: offset,
            physical_offset: offset * 200,
            sys_flag: 0,
            born_timestamp: 1_700_000_000_000,
            born_host: "127.0.0.1:1".parse().unwrap(),
            store_timestamp: 1_700_000_000_005,
            store_host: "127.0.0.1:2".parse().unwrap(),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: vec![b'x'; 64],
            topic: "T".into(),
            properties: encode_properties([("UNIQ_KEY", "7F0000010001AABBCCDD000000000007")]),
        }
    }

    #[test]
    fn a_retried_message_shows_its_original_topic_and_count() {
        let mut retried = record(4);
        retried.topic = "%RETRY%G".into();
        retried.reconsume_times = 2;
        retried.properties = encode_properties([("UNIQ_KEY", "K"), ("RETRY_TOPIC", "T")]);
        let mut plain = record(5);
        plain.properties = encode_properties([("RETRY_TOPIC", "ignored")]);
        let mut body = BytesMut::new();
        retried.encode(&mut body);
        plain.encode(&mut body);
        let (msgs, err) = decode_pull_body(&body);
        assert_eq!(err, None);
        assert_eq!((&*msgs[0].topic, msgs[0].reconsume_times), ("T", 2));
        assert_eq!(msgs[0].commit_log_offset, 4 * 200);
        assert_eq!(&*msgs[1].topic, "T", "only a %RETRY% topic is restored");
    }

    /// Properties that are not UTF-8 are no decode error (Java reads them lossily): the key
    /// is kept as Java would show it.
    #[test]
    fn a_key_that_is_not_utf8_is_read_lossily() {
        let mut r = record(9);
        r.properties = encode_properties([("UNIQ_KEY", "AB")]);
        let mut body = BytesMut::new();
        r.encode(&mut body);
        let last = body.len() - 2;
        body[last] = 0xFF;
        let (msgs, err) = decode_pull_body(&body);
        assert_eq!(err, None);
        assert_eq!(msgs[0].uniq_key.as_deref(), Some("A\u{FFFD}"));
    }

    #[test]
    fn truncated_and_malformed_bodies_are_errors_not_crashes() {
        let mut body = BytesMut::new();
        for o in 0..3 {
            record(o).encode(&mut body);
        }
        let (msgs, err) = decode_pull_body(&body);
        assert_eq!((msgs.len(), err), (3, None));
        assert_eq!(msgs[2].queue_offset, 2);
        assert_eq!(
            msgs[0].uniq_key.as_deref(),
            Some("7F0000010001AABBCCDD000000000007")
        );
        assert_eq!(
            (msgs[0].born_ms, msgs[0].stored_ms, msgs[0].body_len),
            (1_700_000_000_000, 1_700_000_000_005, 64)
        );

        // Truncated in the third record.
        let cut = &body[..body.len() - 10];
        let (msgs, err) = decode_pull_body(cut);
        assert_eq!(msgs.len(), 2);
        assert!(err.is_some());

        // A flipped body byte in the second record: a CRC mismatch, consumed as Java does.
        let mut bad = body.to_vec();
        let second = record(0).encoded_len();
        bad[second + 100] ^= 0xFF;
        let (msgs, err) = decode_pull_body(&bad);
        assert_eq!((msgs.len(), err), (3, None));

        // A broken magic code in the second record: an error naming where.
        bad[second + 4] ^= 0xFF;
        let (msgs, err) = decode_pull_body(&bad);
        assert_eq!(msgs.len(), 1);
        assert!(
            err.unwrap().contains("record at byte"),
            "names the position"
        );

        // Garbage of every length never panics.
        for n in 0..64 {
            let junk: Vec<u8> = (0..n).map(|i| (i * 37) as u8).collect();
            let _ = decode_pull_body(&junk);
        }
    }
}
