//! The name server over TCP, raw bytes where the format matters: registration, routes in both
//! JSON dialects, cluster info, unregistration, expiry, channel close, bad input, and the
//! binary's stdout line and clean SIGINT.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use bytes::Bytes;
use name_server::{processor::body_crc32, NamesrvConfig, RunningNameServer};
use remoting::{
    headers::{
        CustomHeader, GetRouteInfoRequestHeader, RegisterBrokerRequestHeader,
        UnregisterBrokerRequestHeader,
    },
    route::{ClusterInfo, RegisterBrokerBody, TopicRouteData},
    RemotingCommand, RequestCode, ResponseCode,
};

const BODY: &str = r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":2,"timestamp":1700000000000},"topicConfigTable":{"TBW102":{"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8},"TopicTest":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}}}}"#;

fn config(overrides: &[&str]) -> NamesrvConfig {
    let mut args = vec!["listenPort=0".to_string()];
    args.extend(overrides.iter().map(|s| s.to_string()));
    NamesrvConfig::load(None, &args).unwrap()
}

struct Client {
    s: TcpStream,
    opaque: i32,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client { s, opaque: 0 }
    }

    fn raw(&mut self, frame: &[u8]) -> RemotingCommand {
        self.s.write_all(frame).unwrap();
        let mut len = [0u8; 4];
        self.s.read_exact(&mut len).unwrap();
        let mut rest = vec![0u8; u32::from_be_bytes(len) as usize];
        self.s.read_exact(&mut rest).unwrap();
        RemotingCommand::decode(Bytes::from(rest)).unwrap()
    }

    fn call(&mut self, mut cmd: RemotingCommand) -> RemotingCommand {
        self.opaque += 1;
        cmd.opaque = self.opaque;
        let answer = self.raw(&cmd.to_bytes());
        assert_eq!(answer.opaque, self.opaque);
        answer
    }

    fn register(&mut self, name: &str, addr: &str, body: &str) -> RemotingCommand {
        self.call(
            RemotingCommand::request(RequestCode::REGISTER_BROKER, 0)
                .with_header(&RegisterBrokerRequestHeader {
                    broker_name: name.into(),
                    broker_addr: addr.into(),
                    cluster_name: "DefaultCluster".into(),
                    ha_server_addr: "127.0.0.1:10912".into(),
                    broker_id: 0,
                    compressed: Some(false),
                    body_crc32: Some(body_crc32(body.as_bytes())),
                    ..Default::default()
                })
                .with_body(body.to_owned()),
        )
    }

    fn route(&mut self, topic: &str, version: i32) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, 0).with_header(
            &GetRouteInfoRequestHeader {
                topic: topic.into(),
                accept_standard_json_only: None,
            },
        );
        cmd.version = version;
        self.call(cmd)
    }
}

/// Polls `f` every 20 ms for up to 10 s (a loaded 2-core machine), returning whether it held.
fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_routes_and_cluster_info_byte_for_byte() {
    let ns = RunningNameServer::start(config(&[])).await.unwrap();
    let addr = ns.addr;
    tokio::task::spawn_blocking(move || {
        let mut c = Client::connect(addr);
        // REGISTER_BROKER written by hand: JSON header, version 401, body CRC.
        let header = format!(
            r#"{{"code":103,"extFields":{{"bodyCrc32":"{}","brokerAddr":"127.0.0.1:10911","brokerId":"0","brokerName":"broker-a","clusterName":"DefaultCluster","compressed":"false","haServerAddr":"127.0.0.1:10912"}},"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":401}}"#,
            body_crc32(BODY.as_bytes())
        );
        let mut frame = Vec::new();
        frame.extend_from_slice(&((4 + header.len() + BODY.len()) as u32).to_be_bytes());
        frame.extend_from_slice(&(header.len() as u32).to_be_bytes());
        frame.extend_from_slice(header.as_bytes());
        frame.extend_from_slice(BODY.as_bytes());
        let answer = c.raw(&frame);
        assert_eq!((answer.code, answer.opaque, answer.flag), (0, 1, 1));

        let quoted = c.route("TopicTest", 401);
        assert_eq!(quoted.code, 0);
        assert_eq!(
            std::str::from_utf8(&quoted.body).unwrap(),
            r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
        );
        // A 4.9.3 client (version 400) gets fastjson's bare integer keys.
        let bare = c.route("TopicTest", 400);
        let text = std::str::from_utf8(&bare.body).unwrap();
        assert!(text.contains(r#"{"brokerAddrs":{0:"127.0.0.1:10911"}"#), "{text}");
        assert_eq!(
            TopicRouteData::decode(&bare.body).unwrap(),
            TopicRouteData::decode(&quoted.body).unwrap()
        );

        c.register("broker-b", "127.0.0.1:20911", BODY);
        let r = TopicRouteData::decode(&c.route("TopicTest", 401).body).unwrap();
        assert_eq!(r.queue_datas.len(), 2);
        let info = c.call(RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO, 0));
        assert!(std::str::from_utf8(&info.body)
            .unwrap()
            .contains(r#""broker-b":{"brokerAddrs":{0:"127.0.0.1:20911"}"#));
        let info = ClusterInfo::decode(&info.body).unwrap();
        assert_eq!(info.cluster_addr_table["DefaultCluster"].len(), 2);

        let gone = c.call(
            RemotingCommand::request(RequestCode::UNREGISTER_BROKER, 0).with_header(
                &UnregisterBrokerRequestHeader {
                    broker_name: "broker-a".into(),
                    broker_addr: "127.0.0.1:10911".into(),
                    cluster_name: "DefaultCluster".into(),
                    broker_id: 0,
                },
            ),
        );
        assert_eq!(gone.code, 0);
        let r = TopicRouteData::decode(&c.route("TopicTest", 401).body).unwrap();
        assert_eq!(r.queue_datas.len(), 1);
        assert_eq!(r.queue_datas[0].broker_name, "broker-b");
    })
    .await
    .unwrap();
    ns.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_broker_expires_and_a_closed_channel_leaves_at_once() {
    // Expiry after 400 ms, scanned every 50 ms: the 120 s rule, shortened.
    let ns = RunningNameServer::start(config(&[
        "brokerChannelExpiredTime=400",
        "scanNotActiveBrokerInterval=50",
    ]))
    .await
    .unwrap();
    let addr = ns.addr;
    tokio::task::spawn_blocking(move || {
        let mut silent = Client::connect(addr);
        assert_eq!(silent.register("broker-a", "127.0.0.1:10911", BODY).code, 0);
        let mut closing = Client::connect(addr);
        assert_eq!(closing.register("broker-b", "127.0.0.1:20911", BODY).code, 0);
        let mut producer = Client::connect(addr);
        let brokers = |p: &mut Client| {
            let r = p.route("TopicTest", 401);
            if r.code != 0 {
                return Vec::new();
            }
            let mut names: Vec<String> = TopicRouteData::decode(&r.body)
                .unwrap()
                .queue_datas
                .into_iter()
                .map(|q| q.broker_name)
                .collect();
            names.sort();
            names
        };
        assert_eq!(brokers(&mut producer), ["broker-a", "broker-b"]);
        // broker-b's connection closes: gone without waiting for the scan's timeout.
        let closed_at = Instant::now();
        drop(closing);
        assert!(eventually(|| brokers(&mut producer) == ["broker-a"]));
        assert!(closed_at.elapsed() < Duration::from_secs(5));
        // broker-a keeps its connection but stops registering: expired, and its channel closed.
        assert!(eventually(|| brokers(&mut producer).is_empty()));
        let mut byte = [0u8; 1];
        assert_eq!(silent.s.read(&mut byte).unwrap(), 0, "the channel is closed");
        let missing = producer.route("TopicTest", 401);
        assert_eq!(missing.code, ResponseCode::TOPIC_NOT_EXIST as i32);
        assert_eq!(
            missing.remark.as_deref(),
            Some("No topic route info in name server for the topic: TopicTest\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.")
        );
    })
    .await
    .unwrap();
    ns.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_clear_answer() {
    let ns = RunningNameServer::start(config(&["maxBrokers=1"]))
        .await
        .unwrap();
    let addr = ns.addr;
    tokio::task::spawn_blocking(move || {
        let mut c = Client::connect(addr);
        let unknown = c.call(RemotingCommand::request(999, 0));
        assert_eq!(
            unknown.code,
            ResponseCode::REQUEST_CODE_NOT_SUPPORTED as i32
        );
        assert_eq!(
            unknown.remark.as_deref(),
            Some(" request type 999 not supported")
        );

        let mut missing = RegisterBrokerRequestHeader {
            broker_name: "a".into(),
            broker_addr: "h:1".into(),
            cluster_name: "c".into(),
            ha_server_addr: "h:2".into(),
            ..Default::default()
        }
        .to_ext_fields();
        missing.remove("brokerId");
        let answer = c.call(
            RemotingCommand::request(RequestCode::REGISTER_BROKER, 0).with_ext_fields(missing),
        );
        assert_eq!(answer.code, 1);
        assert_eq!(
            answer.remark.as_deref(),
            Some("REGISTER_BROKER: the field brokerId is null")
        );

        let mut cmd = RemotingCommand::request(RequestCode::REGISTER_BROKER, 0)
            .with_header(&RegisterBrokerRequestHeader {
                broker_name: "a".into(),
                broker_addr: "h:1".into(),
                cluster_name: "c".into(),
                ha_server_addr: "h:2".into(),
                body_crc32: Some(12345),
                ..Default::default()
            })
            .with_body(BODY.to_owned());
        assert_eq!(
            c.call(cmd.clone()).remark.as_deref(),
            Some("crc32 not match")
        );
        cmd.ext_fields.remove("bodyCrc32");
        cmd.body = Bytes::from_static(b"{\"topicConfigSerializeWrapper\":[");
        let bad = c.call(cmd);
        assert_eq!(bad.code, 1);
        assert!(bad
            .remark
            .unwrap()
            .starts_with("RegisterBrokerBody body does not parse"));

        let only = RegisterBrokerBody::decode(BODY.as_bytes()).unwrap();
        let mut one = only.clone();
        one.topic_config_serialize_wrapper
            .topic_config_table
            .remove("TBW102");
        let one = String::from_utf8(one.encode()).unwrap();
        assert_eq!(
            c.register("a", "h:1", &one).remark.as_deref(),
            Some("register broker failed")
        );
        assert_eq!(c.register("a", "h:1", BODY).code, 0);
        let full = c.register("b", "h:2", BODY);
        assert_eq!(full.code, 1);
        assert!(full.remark.unwrap().contains("maxBrokers"));

        // A frame whose length exceeds 16 MiB closes the connection without an answer.
        c.s.write_all(&[0x7f, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(c.s.read(&mut byte).unwrap(), 0);
    })
    .await
    .unwrap();
    ns.stop().await.unwrap();
}

#[test]
fn the_binary_prints_one_line_and_stops_cleanly_on_sigint() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_name-server"))
        .args(["--set", "listenPort=0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr: SocketAddr = line
        .trim()
        .strip_prefix("listening on ")
        .expect("the one stdout line")
        .parse()
        .unwrap();
    let mut c = Client::connect(addr);
    assert_eq!(
        c.route("Nope", 401).code,
        ResponseCode::TOPIC_NOT_EXIST as i32
    );
    // SAFETY: signalling our own child by pid.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "nothing but the one line on stdout");

    let bad = Command::new(env!("CARGO_BIN_EXE_name-server"))
        .args(["--set", "listenPrt=1"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("did you mean `listenPort`"), "{err}");
}

/// A 4.x broker with `compressedRegister=true`: header `compressed=true`, a zlib body of
/// length-prefixed parts (namesrv §2.3), CRC over the compressed bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compressed_registration_is_read() {
    use std::io::Write as _;
    let ns = RunningNameServer::start(config(&[])).await.unwrap();
    let addr = ns.addr;
    tokio::task::spawn_blocking(move || {
        let mut raw = Vec::new();
        let mut part = |b: &[u8]| {
            raw.extend_from_slice(&(b.len() as i32).to_be_bytes());
            raw.extend_from_slice(b);
        };
        part(br#"{"counter":1,"timestamp":1700000000000}"#);
        raw.extend_from_slice(&2i32.to_be_bytes());
        for line in ["TBW102 8 8 7 SINGLE_TAG", "Zipped 2 3 6 SINGLE_TAG"] {
            raw.extend_from_slice(&(line.len() as i32).to_be_bytes());
            raw.extend_from_slice(line.as_bytes());
        }
        raw.extend_from_slice(&2i32.to_be_bytes());
        raw.extend_from_slice(b"[]");
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&raw).unwrap();
        let body = z.finish().unwrap();
        let mut c = Client::connect(addr);
        let mut cmd = RemotingCommand::request(RequestCode::REGISTER_BROKER, 0)
            .with_header(&RegisterBrokerRequestHeader {
                broker_name: "broker-z".into(),
                broker_addr: "127.0.0.1:30911".into(),
                cluster_name: "DefaultCluster".into(),
                ha_server_addr: "127.0.0.1:30912".into(),
                broker_id: 0,
                compressed: Some(true),
                body_crc32: Some(body_crc32(&body)),
                ..Default::default()
            })
            .with_body(body);
        cmd.version = 409;
        assert_eq!(c.call(cmd).code, 0);
        let r = TopicRouteData::decode(&c.route("Zipped", 409).body).unwrap();
        assert_eq!(r.queue_datas[0].write_queue_nums, 3);
        assert_eq!(r.queue_datas[0].read_queue_nums, 2);
    })
    .await
    .unwrap();
    ns.stop().await.unwrap();
}
