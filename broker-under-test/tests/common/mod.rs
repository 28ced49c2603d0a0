//! Shared helpers for the broker's integration tests: start a broker on 127.0.0.1:0 with a small
//! store in a temporary directory, and talk to it with raw frames.
#![allow(dead_code)]

use std::{collections::BTreeMap, time::Duration};

use broker_under_test::{config::BrokerConfig, RunningBroker};
use bytes::BytesMut;
use remoting::{
    decode_frame,
    headers::{PullMessageRequestHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2},
    message::{decode_records, encode_properties, MessageRecord},
    RemotingCommand, RequestCode, SerializeType, MAX_FRAME_LEN,
};
use tempfile::TempDir;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// Generous: the machine running the tests is small and busy.
pub const READ_TIMEOUT: Duration = Duration::from_secs(20);

pub struct TestBroker {
    pub broker: Option<RunningBroker>,
    pub dir: TempDir,
}

impl TestBroker {
    pub async fn start(overrides: &[(&str, &str)]) -> TestBroker {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = BrokerConfig::for_test(dir.path(), overrides).expect("config");
        let broker = RunningBroker::start(config).await.expect("broker start");
        TestBroker {
            broker: Some(broker),
            dir,
        }
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        self.broker.as_ref().expect("running").addr
    }

    pub async fn client(&self) -> Client {
        Client::connect(self.addr()).await
    }

    pub async fn stop(mut self) {
        if let Some(b) = self.broker.take() {
            b.stop().await.expect("clean shutdown");
        }
    }
}

pub struct Client {
    pub stream: TcpStream,
    buf: BytesMut,
    next_opaque: i32,
    /// The broker's own requests (NOTIFY_CONSUMER_IDS_CHANGED) read while `call` waited.
    pending: std::collections::VecDeque<RemotingCommand>,
}

impl Client {
    pub async fn connect(addr: std::net::SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).ok();
        Client {
            stream,
            buf: BytesMut::new(),
            next_opaque: 1,
            pending: Default::default(),
        }
    }

    pub fn opaque(&mut self) -> i32 {
        let o = self.next_opaque;
        self.next_opaque += 1;
        o
    }

    pub async fn write_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    pub async fn send(&mut self, cmd: &RemotingCommand) {
        let bytes = cmd.to_bytes();
        self.write_raw(&bytes).await;
    }

    /// The next whole frame's raw bytes (length field included).
    pub async fn read_raw_frame(&mut self) -> Vec<u8> {
        loop {
            if self.buf.len() >= 4 {
                let len = u32::from_be_bytes(self.buf[..4].try_into().unwrap()) as usize;
                if self.buf.len() >= 4 + len {
                    return self.buf.split_to(4 + len).to_vec();
                }
            }
            let n = tokio::time::timeout(READ_TIMEOUT, self.stream.read_buf(&mut self.buf))
                .await
                .expect("timed out waiting for a frame")
                .expect("read");
            assert!(n > 0, "connection closed while waiting for a frame");
        }
    }

    pub async fn read(&mut self) -> RemotingCommand {
        self.try_read(READ_TIMEOUT)
            .await
            .expect("no frame before the timeout")
    }

    /// The next frame, or `None` after `wait` without one. Panics if the connection closes.
    pub async fn try_read(&mut self, wait: Duration) -> Option<RemotingCommand> {
        if let Some(cmd) = self.pending.pop_front() {
            return Some(cmd);
        }
        self.read_socket(wait).await
    }

    async fn read_socket(&mut self, wait: Duration) -> Option<RemotingCommand> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(cmd) = decode_frame(&mut self.buf, MAX_FRAME_LEN).expect("valid frame") {
                return Some(cmd);
            }
            match tokio::time::timeout_at(deadline, self.stream.read_buf(&mut self.buf)).await {
                Err(_) => return None,
                Ok(Ok(0)) => panic!("connection closed"),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => panic!("read: {e}"),
            }
        }
    }

    /// True once the broker has closed the connection (EOF or reset) within `wait`.
    pub async fn is_closed_within(&mut self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        let mut scratch = [0u8; 4096];
        loop {
            match tokio::time::timeout_at(deadline, self.stream.read(&mut scratch)).await {
                Err(_) => return false,
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => {}
            }
        }
    }

    pub async fn call(&mut self, cmd: RemotingCommand) -> RemotingCommand {
        let opaque = cmd.opaque;
        self.send(&cmd).await;
        loop {
            let r = self
                .read_socket(READ_TIMEOUT)
                .await
                .expect("no frame before the timeout");
            // The broker's own requests (NOTIFY_CONSUMER_IDS_CHANGED) may share the opaque;
            // they are kept for `read`.
            if !r.is_response() {
                self.pending.push_back(r);
            } else if r.opaque == opaque {
                return r;
            }
        }
    }

    pub async fn runtime_info(&mut self) -> BTreeMap<String, String> {
        let o = self.opaque();
        let r = self
            .call(RemotingCommand::request(
                RequestCode::GET_BROKER_RUNTIME_INFO,
                o,
            ))
            .await;
        assert_eq!(r.code, 0, "runtime info: {:?}", r.remark);
        let v: serde_json::Value = serde_json::from_slice(&r.body).expect("runtime info JSON");
        v["table"]
            .as_object()
            .expect("table")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().expect("string value").to_owned()))
            .collect()
    }

    /// Waits (up to 20 s) until `dispatchBehindBytes` is 0: a send is answered before
    /// ReputMessageService builds its consume-queue entry, so a pull right after a send waits
    /// for this to find the message.
    pub async fn dispatched(&mut self) {
        let deadline = tokio::time::Instant::now() + READ_TIMEOUT;
        loop {
            let behind = self.runtime_info().await["dispatchBehindBytes"].clone();
            if behind == "0" {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "still {behind} bytes behind"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Reads all messages of a queue from `from` on via PULL_MESSAGE (CRC verified).
    pub async fn pull_all(&mut self, topic: &str, queue_id: i32) -> Vec<MessageRecord> {
        let mut out = Vec::new();
        let mut offset = 0i64;
        loop {
            let o = self.opaque();
            let mut h = pull_header("test-group", topic, queue_id, offset, 1000);
            h.max_msg_bytes = Some(4 << 20);
            let r = self
                .call(RemotingCommand::request(RequestCode::PULL_MESSAGE, o).with_header(&h))
                .await;
            if r.code != 0 {
                return out;
            }
            let records = decode_records(&r.body).expect("records decode with valid CRCs");
            assert!(!records.is_empty(), "FOUND with an empty body");
            let next: i64 = r.ext("nextBeginOffset").unwrap().parse().unwrap();
            assert!(next > offset);
            offset = next;
            out.extend(records);
        }
    }
}

pub fn props(pairs: &[(&str, &str)]) -> String {
    encode_properties(pairs.iter().copied())
}

/// A SEND_MESSAGE_V2 (310) request.
pub fn send_v2(opaque: i32, topic: &str, queue_id: i32, body: &[u8]) -> RemotingCommand {
    let uniq = format!("UNIQ{opaque:028}");
    let h = SendMessageRequestHeaderV2 {
        a: "test-producer".into(),
        b: topic.into(),
        c: "TBW102".into(),
        d: 4,
        e: queue_id,
        f: 0,
        g: 1_700_000_000_000,
        h: 0,
        i: Some(props(&[("WAIT", "true"), ("UNIQ_KEY", &uniq)])),
        j: Some(0),
        k: Some(false),
        l: None,
        m: Some(false),
        n: Some("broker-a".into()),
    };
    RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, opaque)
        .with_header(&h)
        .with_body(body.to_vec())
}

/// A SEND_MESSAGE (10) request with the long-name header.
pub fn send_v1(opaque: i32, topic: &str, queue_id: i32, body: &[u8]) -> RemotingCommand {
    let v2 = send_v2(opaque, topic, queue_id, body);
    let h: SendMessageRequestHeader = v2
        .header::<SendMessageRequestHeaderV2>()
        .expect("v2")
        .into();
    RemotingCommand::request(RequestCode::SEND_MESSAGE, opaque)
        .with_header(&h)
        .with_body(body.to_vec())
}

pub fn rocketmq(cmd: RemotingCommand) -> RemotingCommand {
    cmd.with_serialize_type(SerializeType::RocketMq)
}

pub fn remark(cmd: &RemotingCommand) -> &str {
    cmd.remark.as_deref().unwrap_or("")
}

pub fn counter(info: &BTreeMap<String, String>, key: &str) -> u64 {
    info.get(key)
        .unwrap_or_else(|| panic!("runtime info lacks {key}"))
        .parse()
        .expect("numeric counter")
}

/// A HEART_BEAT body as a 4.9.8 push consumer sends it (consumer §5.1): one CLUSTERING
/// consumer group subscribed to `topics` with `expression`, plus the inner producer.
pub fn heartbeat_body(client_id: &str, group: &str, topics: &[&str], expression: &str) -> Vec<u8> {
    let subs: Vec<serde_json::Value> = topics
        .iter()
        .map(|t| {
            serde_json::json!({"classFilterMode": false, "codeSet": [], "expressionType": "TAG",
                "subString": expression, "subVersion": 1_717_000_000_000i64, "tagsSet": [],
                "topic": t})
        })
        .collect();
    serde_json::json!({
        "clientID": client_id,
        "consumerDataSet": [{"consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
            "consumeType": "CONSUME_PASSIVELY", "groupName": group,
            "messageModel": "CLUSTERING", "subscriptionDataSet": subs, "unitMode": false}],
        "producerDataSet": [{"groupName": "CLIENT_INNER_PRODUCER"}]
    })
    .to_string()
    .into_bytes()
}

impl Client {
    /// Sends a heartbeat registering `client_id` in `group` on this connection.
    pub async fn heartbeat(&mut self, client_id: &str, group: &str, topics: &[&str], expr: &str) {
        let o = self.opaque();
        let r = self
            .call(
                RemotingCommand::request(RequestCode::HEART_BEAT, o)
                    .with_body(heartbeat_body(client_id, group, topics, expr)),
            )
            .await;
        assert_eq!(r.code, 0, "heartbeat: {:?}", r.remark);
    }
}

/// How long the replication tests wait for observable state before failing. Generous: a
/// 2-core machine shared with other builds.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// GET_BROKER_RUNTIME_INFO's table.
pub async fn info(addr: std::net::SocketAddr) -> BTreeMap<String, String> {
    Client::connect(addr).await.runtime_info().await
}

/// A numeric runtime-info key (panics naming the key when it is missing or not a number).
pub fn num(info: &BTreeMap<String, String>, key: &str) -> i64 {
    info.get(key)
        .unwrap_or_else(|| panic!("runtime info lacks {key}"))
        .parse()
        .unwrap_or_else(|_| panic!("{key} is not a number"))
}

/// Polls `probe` until it returns Some, failing after [`DEADLINE`].
pub async fn wait_for<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A PULL_MESSAGE header of `group` for `topic`'s queue from `offset`: `*` by tag with the
/// SUBSCRIPTION flag (the expression is used, no heartbeat needed), no commit, no suspension.
pub fn pull_header(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    max_msg_nums: i32,
) -> PullMessageRequestHeader {
    PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums,
        sys_flag: 4,
        commit_offset: 0,
        suspend_timeout_millis: 0,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
    }
}

/// Waits until BrokerFastFailure has run once (its first round comes 1000 ms after the broker
/// starts): a test that needs the cleaner running waits on the broker's count of its rounds
/// (`brokerFastFailureRounds`), not on a sleep that a loaded machine can outlast.
pub async fn fast_failure_running(addr: std::net::SocketAddr) {
    wait_for("BrokerFastFailure's first round", || async move {
        (num(&info(addr).await, "brokerFastFailureRounds") > 0).then_some(())
    })
    .await
}
