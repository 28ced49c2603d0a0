//! RocketMQ's name server checks no ACL (4.9.x and 5.3.x register no AccessValidator hook in
//! NamesrvController), and ours neither: signed requests, even with a signature no broker
//! would accept, are answered exactly as unsigned ones.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bytes::Bytes;
use name_server::{processor::body_crc32, NamesrvConfig, RunningNameServer};
use remoting::acl::Credentials;
use remoting::headers::{GetRouteInfoRequestHeader, RegisterBrokerRequestHeader};
use remoting::{RemotingCommand, RequestCode};

const BODY: &str = r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1700000000000},"topicConfigTable":{"TBW102":{"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8},"AclTopic":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"AclTopic","topicSysFlag":0,"writeQueueNums":4}}}}"#;

fn call(s: &mut TcpStream, cmd: &RemotingCommand) -> RemotingCommand {
    s.write_all(&cmd.to_bytes()).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut rest = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut rest).unwrap();
    RemotingCommand::decode(Bytes::from(rest)).unwrap()
}

fn signed(mut cmd: RemotingCommand, secret: &str) -> RemotingCommand {
    Credentials::new("harness1", secret).sign(&mut cmd.ext_fields, &cmd.body);
    cmd
}

fn route(opaque: i32) -> RemotingCommand {
    RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, opaque).with_header(
        &GetRouteInfoRequestHeader {
            topic: "AclTopic".into(),
            accept_standard_json_only: None,
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_requests_are_answered_as_unsigned_ones() {
    let config = NamesrvConfig::load(None, &["listenPort=0".to_string()]).unwrap();
    let ns = RunningNameServer::start(config).await.unwrap();
    let addr: SocketAddr = ns.addr;
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let register = RemotingCommand::request(RequestCode::REGISTER_BROKER, 1)
            .with_header(&RegisterBrokerRequestHeader {
                broker_name: "broker-a".into(),
                broker_addr: "127.0.0.1:10911".into(),
                cluster_name: "DefaultCluster".into(),
                ha_server_addr: "127.0.0.1:10912".into(),
                broker_id: 0,
                compressed: Some(false),
                body_crc32: Some(body_crc32(BODY.as_bytes())),
                ..Default::default()
            })
            .with_body(BODY.to_owned());
        let r = call(&mut s, &signed(register, "any-secret"));
        assert_eq!(r.code, 0, "{:?}", r.remark);
        let plain = call(&mut s, &route(2));
        let good = call(&mut s, &signed(route(3), "harness-secret"));
        let bad = call(&mut s, &signed(route(4), "not-the-secret"));
        assert_eq!(plain.code, 0, "{:?}", plain.remark);
        for r in [&good, &bad] {
            assert_eq!((r.code, &r.body), (plain.code, &plain.body));
        }
    })
    .await
    .unwrap();
    ns.stop().await.unwrap();
}
