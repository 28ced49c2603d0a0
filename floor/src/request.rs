//! The request both senders send.

use bytes::BytesMut;
use remoting::headers::SendMessageRequestHeaderV2;
use remoting::message::encode_properties;
use remoting::{RemotingCommand, RequestCode, SerializeType};

/// A SEND_MESSAGE_V2 request shaped like the harness's: the Java client's one-letter header keys,
/// a `KEYS`/`WAIT` properties string and a body of `message_size` bytes.
pub fn send_frame(message_size: usize, serialize: SerializeType, opaque: i32) -> BytesMut {
    let properties = encode_properties([("KEYS", "floor-0000000000"), ("WAIT", "true")]);
    let cmd = RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, opaque)
        .with_serialize_type(serialize)
        .with_body(vec![b'x'; message_size])
        .with_header(&SendMessageRequestHeaderV2 {
            a: "floor_producer".into(),
            b: "BenchmarkTopic".into(),
            c: "TBW102".into(),
            d: 4,
            e: 0,
            f: 0,
            g: 1_700_000_000_000,
            h: 0,
            i: Some(properties),
            j: Some(0),
            k: Some(false),
            l: None,
            m: None,
            n: None,
        });
    let mut buf = BytesMut::new();
    cmd.encode(&mut buf);
    buf
}
