//! A consumer that receives a malformed pull body (a record with a bad magic code) counts it
//! as a decode error, keeps the records before it, and goes on: no crash, no hang. A record
//! whose body does not match its CRC is consumed, as the Java client consumes it.
//! The broker here is a minimal blocking fake that answers only what one consumer asks.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use bytes::BytesMut;
use harness::consumer::{ConsumerRun, Target};
use harness_model::profile::{Consumer, Workload};
use remoting::message::{encode_properties, MessageRecord};
use remoting::{decode_frame, RemotingCommand, RequestCode, MAX_FRAME_LEN};

fn record(offset: i64) -> MessageRecord {
    MessageRecord {
        queue_id: 0,
        flag: 0,
        queue_offset: offset,
        physical_offset: offset * 300,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "127.0.0.1:1".parse().unwrap(),
        store_timestamp: 1_700_000_000_001,
        store_host: "127.0.0.1:2".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: vec![b'b'; 100],
        topic: "T".into(),
        properties: encode_properties([("UNIQ_KEY", "7F000001000100000000000000000001")]),
    }
}

/// Four records: the second one's body corrupted after its CRC was written, the third one's
/// magic code broken.
fn corrupt_body() -> Vec<u8> {
    let mut b = BytesMut::new();
    for o in 0..4 {
        record(o).encode(&mut b);
    }
    let mut v = b.to_vec();
    let len = record(0).encoded_len();
    v[len + 90] ^= 0x55;
    v[2 * len + 4] ^= 0x55;
    v
}

fn answer(req: &RemotingCommand, client: &mut String, pulls: &mut u32) -> Option<RemotingCommand> {
    let ok = |code: i32| RemotingCommand::response_to(req, code, None);
    let with = |cmd: RemotingCommand, fields: &[(&str, String)]| {
        cmd.with_ext_fields(
            fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    };
    match RequestCode::from_i32(req.code)? {
        RequestCode::HEART_BEAT => {
            let v: serde_json::Value = serde_json::from_slice(&req.body).ok()?;
            *client = v["clientID"].as_str()?.to_owned();
            Some(ok(0))
        }
        RequestCode::GET_CONSUMER_LIST_BY_GROUP => {
            let body = serde_json::json!({ "consumerIdList": [client.clone()] }).to_string();
            Some(ok(0).with_body(body.into_bytes()))
        }
        RequestCode::QUERY_CONSUMER_OFFSET => Some(with(ok(0), &[("offset", "0".into())])),
        RequestCode::GET_MAX_OFFSET => Some(with(ok(0), &[("offset", "4".into())])),
        RequestCode::PULL_MESSAGE => {
            *pulls += 1;
            let fields = [
                ("suggestWhichBrokerId", "0".into()),
                ("nextBeginOffset", "4".into()),
                ("minOffset", "0".into()),
                ("maxOffset", "4".into()),
            ];
            if *pulls == 1 {
                Some(with(ok(0), &fields).with_body(corrupt_body()))
            } else {
                thread::sleep(Duration::from_millis(50));
                Some(with(ok(19), &fields))
            }
        }
        _ if req.is_oneway() => None,
        _ => Some(ok(0)),
    }
}

fn serve(mut s: TcpStream, stop: &AtomicBool) {
    let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
    let (mut buf, mut chunk) = (BytesMut::new(), [0u8; 8192]);
    let (mut client, mut pulls) = (String::new(), 0);
    while !stop.load(Ordering::Acquire) {
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => continue,
        }
        while let Ok(Some(req)) = decode_frame(&mut buf, MAX_FRAME_LEN) {
            if let Some(resp) = answer(&req, &mut client, &mut pulls) {
                if s.write_all(&resp.to_bytes()).is_err() {
                    return;
                }
            }
        }
    }
}

#[test]
fn a_bad_record_in_a_pull_body_is_counted_not_a_crash() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let fake: JoinHandle<()> = {
        let stop = stop.clone();
        thread::Builder::new()
            .name("fake-consumer-broker".into())
            .spawn(move || {
                let mut conns = Vec::new();
                while !stop.load(Ordering::Acquire) {
                    match listener.accept() {
                        Ok((s, _)) => {
                            let stop = stop.clone();
                            conns.push(thread::spawn(move || serve(s, &stop)));
                        }
                        Err(_) => thread::sleep(Duration::from_millis(10)),
                    }
                }
                for c in conns {
                    let _ = c.join();
                }
            })
            .unwrap()
    };
    let workload = Workload {
        topic: "T".into(),
        queues: 1,
        ..Workload::default()
    };
    let cfg = Consumer {
        drain_timeout: harness_model::profile::Secs(5.0),
        ..Consumer::default()
    };
    let mut run = ConsumerRun::start(&cfg, &workload, Target::Broker(addr), Some(0), None).unwrap();
    run.start_measuring();
    run.drain(|_| {});
    let f = run.finish();
    stop.store(true, Ordering::Release);
    fake.join().unwrap();
    assert_eq!(f.decode_errors, 1, "{f:?}");
    assert_eq!(
        f.consumed, 2,
        "the records before the bad one are consumed, the one failing its CRC too: {f:?}"
    );
    assert_eq!(f.foreign, 2, "not sent by this run: {f:?}");
    assert!(
        f.pulls[0] >= 1 && f.pulls[1] >= 1,
        "pulling went on after the bad body: {f:?}"
    );
    assert!(f.drained, "offset moved past the dropped records: {f:?}");
}
