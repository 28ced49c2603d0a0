//! The responder and the minimal sender against each other on 127.0.0.1, and the responder
//! against raw frames.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::BytesMut;
use floor::request::send_frame;
use floor::responder::NullResponder;
use floor::sender::{run, SenderConfig};
use remoting::{decode_frame, RemotingCommand, RequestCode, SerializeType, MAX_FRAME_LEN};

fn start() -> floor::responder::Running {
    NullResponder::bind("127.0.0.1:0".parse().unwrap())
        .unwrap()
        .start()
        .unwrap()
}

fn read_responses(s: &mut TcpStream, n: usize) -> Vec<RemotingCommand> {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    while out.len() < n {
        let k = s.read(&mut chunk).unwrap();
        assert!(k > 0, "responder closed after {} responses", out.len());
        buf.extend_from_slice(&chunk[..k]);
        while let Some(cmd) = decode_frame(&mut buf, MAX_FRAME_LEN).unwrap() {
            out.push(cmd);
        }
    }
    out
}

#[test]
fn answers_every_send_with_its_opaque_in_both_serializations() {
    let r = start();
    let mut s = TcpStream::connect(r.addr()).unwrap();
    let mut bytes = Vec::new();
    for (i, ser) in [SerializeType::Json, SerializeType::RocketMq]
        .iter()
        .cycle()
        .take(10)
        .enumerate()
    {
        bytes.extend_from_slice(&send_frame(64, *ser, 1000 + i as i32));
    }
    s.write_all(&bytes).unwrap();
    let resp = read_responses(&mut s, 10);
    for (i, cmd) in resp.iter().enumerate() {
        assert!(cmd.is_response());
        assert_eq!(cmd.code, 0);
        assert_eq!(cmd.opaque, 1000 + i as i32);
        assert_eq!(cmd.ext("queueOffset"), Some((i + 1).to_string().as_str()));
        assert_eq!(cmd.ext("msgId").map(str::len), Some(32));
    }
    assert_eq!(r.answered(), 10);
}

#[test]
fn oneway_sends_get_nothing_and_other_codes_are_answered() {
    let r = start();
    let mut s = TcpStream::connect(r.addr()).unwrap();
    let mut buf = BytesMut::new();
    RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, 1)
        .with_oneway()
        .encode(&mut buf);
    RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, 2).encode(&mut buf);
    RemotingCommand::request(RequestCode::GET_BROKER_RUNTIME_INFO, 3).encode(&mut buf);
    RemotingCommand::request(9999, 4).encode(&mut buf);
    s.write_all(&buf).unwrap();
    let resp = read_responses(&mut s, 3);
    assert_eq!(
        resp.iter().map(|c| (c.opaque, c.code)).collect::<Vec<_>>(),
        vec![(2, 0), (3, 0), (4, 3)]
    );
    assert_eq!(&resp[1].body[..], b"{\"table\":{}}");
}

#[test]
fn an_oversize_length_closes_only_that_connection() {
    let r = start();
    let mut bad = TcpStream::connect(r.addr()).unwrap();
    bad.write_all(&u32::MAX.to_be_bytes()).unwrap();
    bad.write_all(&[0u8; 8]).unwrap();
    bad.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut one = [0u8; 1];
    assert_eq!(
        bad.read(&mut one).unwrap_or(0),
        0,
        "connection must be closed"
    );
    let mut good = TcpStream::connect(r.addr()).unwrap();
    good.write_all(&send_frame(16, SerializeType::Json, 5))
        .unwrap();
    assert_eq!(read_responses(&mut good, 1)[0].opaque, 5);
}

#[test]
fn sender_keeps_its_window_full_and_counts_every_response() {
    let r = start();
    let report = run(&SenderConfig {
        target: r.addr(),
        in_flight: 64,
        warmup: Duration::ZERO,
        duration: Duration::from_secs(2),
        message_size: 128,
        serialize: SerializeType::Json,
        max_requests: 5_000,
    })
    .unwrap();
    // The request cap ends the run early; every request is answered and counted.
    assert_eq!(report.responses, 5_000);
    assert_eq!(r.answered(), 5_000);
}
