//! Raw-byte protocol tests: exact answers where deterministic, oneway rules per version, and
//! malformed input that closes only its own connection.

mod common;

use std::time::Duration;

use common::*;
use remoting::{RemotingCommand, SerializeType, FLAG_RESPONSE};

fn frame(header: &[u8], serialize_type: u8, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&((4 + header.len() + body.len()) as u32).to_be_bytes());
    f.extend_from_slice(&(((serialize_type as u32) << 24) | header.len() as u32).to_be_bytes());
    f.extend_from_slice(header);
    f.extend_from_slice(body);
    f
}

#[tokio::test]
async fn unknown_code_gets_exact_not_supported_bytes() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    // Written by hand so that a bug shared by our encoder and decoder cannot hide here.
    let req = br#"{"code":9999,"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":401}"#;
    c.write_raw(&frame(req, 0, b"")).await;
    let expected_header = br#"{"code":3,"flag":1,"language":"JAVA","opaque":7,"remark":" request type 9999 not supported","serializeTypeCurrentRPC":"JSON","version":479}"#;
    assert_eq!(c.read_raw_frame().await, frame(expected_header, 0, b""));

    // The same request with a ROCKETMQ header: remoting-layer answers are JSON in every version.
    let mut rq = Vec::new();
    rq.extend_from_slice(&9999u16.to_be_bytes()); // code
    rq.push(0); // JAVA
    rq.extend_from_slice(&401u16.to_be_bytes());
    rq.extend_from_slice(&8i32.to_be_bytes()); // opaque
    rq.extend_from_slice(&0i32.to_be_bytes()); // flag
    rq.extend_from_slice(&0i32.to_be_bytes()); // remark length
    rq.extend_from_slice(&0i32.to_be_bytes()); // ext length
    c.write_raw(&frame(&rq, 1, b"")).await;
    let r = c.read().await;
    assert_eq!((r.code, r.opaque, r.flag), (3, 8, FLAG_RESPONSE));
    assert_eq!(r.serialize_type, SerializeType::Json);
    assert_eq!(remark(&r), " request type 9999 not supported");
    b.stop().await;
}

#[tokio::test]
async fn oneway_not_supported_is_answered_in_4x_only() {
    for (profile, answered) in [("4.3", true), ("4.9", true), ("5.3", false)] {
        let b = TestBroker::start(&[("brokerVersionProfile", profile)]).await;
        let mut c = b.client().await;
        c.send(&RemotingCommand::request(9999, 41).with_oneway())
            .await;
        // A normal request after it: its answer proves the oneway one was handled first.
        c.send(&RemotingCommand::request(9998, 42)).await;
        let first = c.read().await;
        if answered {
            assert_eq!((first.opaque, first.code), (41, 3), "profile {profile}");
            assert_eq!(c.read().await.opaque, 42);
        } else {
            assert_eq!(first.opaque, 42, "profile {profile}");
        }
        b.stop().await;
    }
}

#[tokio::test]
async fn response_frames_from_clients_are_ignored() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    let mut resp = RemotingCommand::request(0, 5);
    resp.flag = FLAG_RESPONSE;
    c.send(&resp).await;
    c.send(&RemotingCommand::request(9999, 6)).await;
    assert_eq!(c.read().await.opaque, 6);
    b.stop().await;
}

#[tokio::test]
async fn processor_answers_follow_the_profile_serialization() {
    for (profile, expected) in [
        ("4.9", SerializeType::RocketMq),
        ("5.3", SerializeType::Json),
    ] {
        let b = TestBroker::start(&[("brokerVersionProfile", profile)]).await;
        let mut c = b.client().await;
        let r = c.call(rocketmq(send_v2(1, "SerTopic", 0, b"hello"))).await;
        assert_eq!(r.code, 0, "{profile}: {:?}", r.remark);
        assert_eq!(r.serialize_type, expected, "profile {profile}");
        assert_eq!(r.version, if profile == "4.9" { 409 } else { 479 });
        b.stop().await;
    }
}

/// Each malformed input closes its own connection; another connection keeps being served.
#[tokio::test]
async fn malformed_input_closes_only_its_connection() {
    let b = TestBroker::start(&[]).await;
    let mut healthy = b.client().await;
    let good_json = br#"{"code":9999,"flag":0,"language":"JAVA","opaque":1,"version":401}"#;
    let mut remark_too_long = vec![0, 10, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
    remark_too_long.extend_from_slice(&1000i32.to_be_bytes());
    remark_too_long.extend_from_slice(&[0; 8]);
    let mut ext_too_long = vec![0, 10, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
    ext_too_long.extend_from_slice(&0i32.to_be_bytes());
    ext_too_long.extend_from_slice(&5000i32.to_be_bytes());
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("negative length", vec![0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0]),
        ("oversize length", vec![0x7f, 0, 0, 0, 0, 0, 0, 0]),
        ("header beyond frame", {
            let mut f = 12u32.to_be_bytes().to_vec();
            f.extend_from_slice(&500u32.to_be_bytes());
            f.extend_from_slice(&[b'{'; 8]);
            f
        }),
        ("unknown serialize type", frame(good_json, 7, b"")),
        ("bad JSON", frame(b"{\"code\":oops}", 0, b"")),
        (
            "remark length beyond header",
            frame(&remark_too_long, 1, b""),
        ),
        ("ext length beyond header", frame(&ext_too_long, 1, b"")),
        ("random garbage", {
            let mut x: u32 = 0x9e37_79b9;
            (0..64)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    // Keep the first byte small enough for a plausible length.
                    (x & 0xff) as u8
                })
                .enumerate()
                .map(|(i, v)| if i == 0 { 0 } else { v })
                .collect()
        }),
    ];
    for (name, bytes) in cases {
        let mut bad = b.client().await;
        bad.write_raw(&bytes).await;
        // Garbage that happens to announce a longer frame waits for more bytes: close our
        // write side so the broker sees EOF and the frame can never complete.
        if name == "random garbage" {
            bad.stream.shutdown().await.ok();
        }
        assert!(
            bad.is_closed_within(Duration::from_secs(10)).await,
            "{name}: connection still open"
        );
        let o = healthy.opaque();
        let r = healthy.call(RemotingCommand::request(9999, o)).await;
        assert_eq!(r.code, 3, "{name}: healthy connection not served");
    }
    b.stop().await;
}

/// A client that sends but never reads fills its outbound queue; the broker closes that
/// connection instead of buffering without bound, and keeps serving the others.
#[tokio::test]
async fn a_client_that_never_reads_is_disconnected() {
    let b = TestBroker::start(&[]).await;
    let mut healthy = b.client().await;
    let mut greedy = b.client().await;
    let frame = RemotingCommand::request(9999, 1).to_bytes();
    let batch: Vec<u8> = frame
        .iter()
        .copied()
        .cycle()
        .take(frame.len() * 1000)
        .collect();
    let mut sent = 0;
    // The outbound queue holds 32768 answers plus what the socket buffers absorb.
    while sent < 1_000_000 {
        match tokio::time::timeout(Duration::from_secs(5), greedy.stream.write_all(&batch)).await {
            Ok(Ok(())) => sent += 1000,
            // Write error: closed by the broker. Timeout: the broker stopped reading us.
            _ => break,
        }
    }
    assert!(
        // The broker must first answer 32768 requests; a starved one took over 25 s.
        greedy.is_closed_within(Duration::from_secs(90)).await,
        "still open after {sent} unread answers"
    );
    let r = healthy.call(RemotingCommand::request(9999, 2)).await;
    assert_eq!(r.code, 3);
    b.stop().await;
}

#[tokio::test]
async fn idle_connections_are_closed() {
    let b = TestBroker::start(&[("serverChannelMaxIdleTimeSeconds", "1")]).await;
    let mut c = b.client().await;
    assert!(c.is_closed_within(Duration::from_secs(10)).await);
    b.stop().await;
}

use tokio::io::AsyncWriteExt;
