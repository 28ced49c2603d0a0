//! The corpus of request bodies captured from real clients (tests/fixtures/client-bodies, see
//! its README for where each came from): every body is understood by the broker of every
//! version profile, as a Java broker's fastjson understands it.

mod common;

use std::path::{Path, PathBuf};

use common::{Client, TestBroker};
use remoting::{headers::ConsumerGroupHeader, RemotingCommand, RequestCode};

fn corpus() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/client-bodies");
    let mut files = Vec::new();
    for dir in std::fs::read_dir(&root).expect("the corpus folder") {
        let dir = dir.unwrap().path();
        if dir.is_dir() {
            for f in std::fs::read_dir(&dir).unwrap() {
                let f = f.unwrap().path();
                if f.extension().is_some_and(|e| e == "json") {
                    files.push(f);
                }
            }
        }
    }
    files.sort();
    files
}

async fn consumer_ids(c: &mut Client, group: &str) -> Vec<String> {
    let o = c.opaque();
    let r = c
        .call(
            RemotingCommand::request(RequestCode::GET_CONSUMER_LIST_BY_GROUP, o).with_header(
                &ConsumerGroupHeader {
                    consumer_group: group.into(),
                },
            ),
        )
        .await;
    if r.code != 0 {
        return Vec::new();
    }
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["consumerIdList"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// Sends one captured body with the request code its file name says; panics with the file
/// name and the broker's remark when it is not understood.
async fn check(c: &mut Client, file: &Path, profile: &str) {
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let body = std::fs::read(file).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let code = if name.starts_with("heart_beat") {
        RequestCode::HEART_BEAT
    } else if name.starts_with("lock_batch_mq") {
        RequestCode::LOCK_BATCH_MQ
    } else if name.starts_with("unlock_batch_mq") {
        RequestCode::UNLOCK_BATCH_MQ
    } else {
        panic!("{name}: no request code for this file name");
    };
    let o = c.opaque();
    let r = c
        .call(RemotingCommand::request(code, o).with_body(body))
        .await;
    let what = format!("{profile} {}", file.display());
    assert_eq!(r.code, 0, "{what}: {:?}", r.remark);
    if code == RequestCode::HEART_BEAT {
        let client = json["clientID"].as_str().unwrap();
        for group in json["consumerDataSet"].as_array().into_iter().flatten() {
            let group = group["groupName"].as_str().unwrap();
            let ids = consumer_ids(c, group).await;
            assert!(
                ids.iter().any(|i| i == client),
                "{what}: {group} lists {ids:?}"
            );
        }
    }
    if code == RequestCode::LOCK_BATCH_MQ {
        let answer: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(
            answer["lockOKMQSet"].as_array().map(Vec::len),
            json["mqSet"].as_array().map(Vec::len),
            "{what}: not every free queue was locked"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_captured_body_is_understood_in_every_profile() {
    let files = corpus();
    assert!(
        files.iter().any(|f| f.to_string_lossy().contains("cpp-")),
        "the C++ client's bodies are missing from the corpus"
    );
    for profile in ["4.3", "4.9", "5.3"] {
        let b = TestBroker::start(&[("brokerVersionProfile", profile)]).await;
        let mut c = b.client().await;
        for f in &files {
            check(&mut c, f, profile).await;
        }
        b.stop().await;
    }
}
