//! GET_BROKER_CONFIG (26): the effective configuration as `key=value` lines and the
//! configuration's DataVersion in the `version` header (4.9.8 AdminBrokerProcessor
//! .getBrokerConfig l.552-575). The harness reads it back to prove a key took, on Apache's
//! broker and on this one alike.

mod common;

use remoting::{RemotingCommand, RequestCode};

use common::TestBroker;

async fn config_of(
    profile: &str,
) -> (
    std::collections::BTreeMap<String, String>,
    serde_json::Value,
) {
    let b = TestBroker::start(&[
        ("brokerVersionProfile", profile),
        ("waitTimeMillsInSendQueue", "321"),
    ])
    .await;
    let mut c = b.client().await;
    let resp = c
        .call(RemotingCommand::request(RequestCode::GET_BROKER_CONFIG, 7))
        .await;
    assert_eq!(resp.code, 0, "{resp:?}");
    let body = String::from_utf8(resp.body.to_vec()).unwrap();
    let keys = body
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let version: serde_json::Value = serde_json::from_str(&resp.ext_fields["version"]).unwrap();
    b.stop().await;
    (keys, version)
}

#[tokio::test]
async fn the_effective_keys_come_back_as_properties() {
    let (keys, version) = config_of("4.9").await;
    assert_eq!(keys["waitTimeMillsInSendQueue"], "321");
    assert_eq!(keys["brokerVersionProfile"], "4.9");
    // A default nobody set is there too: every key, as RocketMQ's Configuration prints them.
    assert!(keys.contains_key("sendMessageThreadPoolNums"), "{keys:?}");
    assert_eq!(version["counter"], 0);
    assert!(version["timestamp"].as_u64().unwrap() > 1_600_000_000_000);
    // 4.x's DataVersion has no stateVersion (5.x added it).
    assert!(version.get("stateVersion").is_none(), "{version}");
}

#[tokio::test]
async fn a_5_3_version_header_carries_state_version() {
    let (keys, version) = config_of("5.3").await;
    assert_eq!(keys["waitTimeMillsInSendQueue"], "321");
    assert_eq!(version["stateVersion"], 0);
}
