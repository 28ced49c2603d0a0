//! `aclEnable=true` with a `plain_acl.yml` on 127.0.0.1:0, `brokerVersionProfile=4.9` (the one
//! profile with ACL 1.0): a signed send is stored and read back; unsigned, unknown-key, wrongly
//! signed and not-permitted requests get 4.9.8's SYSTEM_ERROR and AclException remark; a white
//! address skips the signature. One test function: the process-wide signer
//! (`remoting::acl::install`) is switched on half-way. On 4.3 and 5.3 the broker refuses to
//! start with `aclEnable=true`: 5.3.3 removed ACL 1.0 and checks nothing (acl/release.rs).

mod common;

use common::*;
use remoting::acl::{self, Credentials};
use remoting::{RemotingCommand, ResponseCode};
use tempfile::TempDir;

const ACL_FILE: &str = "
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: harness1
    secretKey: harness-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - AclTopic=PUB|SUB
      - ReadOnly=SUB
  - accessKey: trusted1
    secretKey: trusted-secret
    whiteRemoteAddress: 127.0.0.1,127.0.0.2
";

/// `${rocketmqHome}/conf/plain_acl.yml` in a fresh directory.
fn home() -> TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("conf")).unwrap();
    std::fs::write(dir.path().join("conf/plain_acl.yml"), ACL_FILE).unwrap();
    dir
}

fn signed(mut cmd: RemotingCommand, ak: &str, sk: &str) -> RemotingCommand {
    Credentials::new(ak, sk).sign(&mut cmd.ext_fields, &cmd.body);
    cmd
}

fn refused(r: &RemotingCommand, message: &str, frame: &str) {
    assert_eq!(r.code, ResponseCode::SYSTEM_ERROR as i32, "{:?}", r.remark);
    assert_eq!(
        remark(r),
        format!("org.apache.rocketmq.acl.common.AclException: {message}, {frame}")
    );
}

/// 4.9.8's frames: `PlainPermissionManager.validate` and `checkPerm`.
const VALIDATE: &str =
    "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java";
const CHECK_PERM: &str =
    "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_broker_answers_as_rocketmq() {
    acl::install(None);
    let home = home();
    let home_path = home.path().display().to_string();
    let b = TestBroker::start(&[
        ("aclEnable", "true"),
        ("rocketmqHome", &home_path),
        ("brokerVersionProfile", "4.9"),
    ])
    .await;
    let mut c = b.client().await;

    let r = c.call(send_v2(1, "AclTopic", 0, b"unsigned")).await;
    refused(
        &r,
        "No accessKey is configured",
        &format!("{VALIDATE}:664)"),
    );

    let r = c
        .call(signed(send_v2(2, "AclTopic", 0, b"x"), "nobody99", "x"))
        .await;
    refused(
        &r,
        "No acl config for nobody99",
        &format!("{VALIDATE}:668)"),
    );

    let r = c
        .call(signed(
            send_v2(3, "AclTopic", 0, b"x"),
            "harness1",
            "wrong-secret",
        ))
        .await;
    refused(
        &r,
        "Check signature failed for accessKey=harness1",
        &format!("{VALIDATE}:684)"),
    );

    // A body changed after signing fails the same way.
    let mut tampered = signed(
        send_v2(4, "AclTopic", 0, b"x"),
        "harness1",
        "harness-secret",
    );
    tampered.body = bytes::Bytes::from_static(b"y");
    let r = c.call(tampered).await;
    assert_eq!(r.code, 1, "{:?}", r.remark);

    // 4.9.8 words a missing bit the same whether the topic has an entry or not.
    let r = c
        .call(signed(
            send_v2(5, "ReadOnly", 0, b"x"),
            "harness1",
            "harness-secret",
        ))
        .await;
    refused(
        &r,
        "No default permission for topic:ReadOnly",
        &format!("{CHECK_PERM}:611)"),
    );
    let r = c
        .call(signed(
            send_v2(6, "Elsewhere", 0, b"x"),
            "harness1",
            "harness-secret",
        ))
        .await;
    refused(
        &r,
        "No default permission for topic:Elsewhere",
        &format!("{CHECK_PERM}:606)"),
    );

    // trusted1's white address list holds 127.0.0.1: no signature needed, nor permissions.
    let r = c
        .call(signed(
            send_v2(7, "Elsewhere", 0, b"white"),
            "trusted1",
            "not-it",
        ))
        .await;
    assert_eq!(r.code, 0, "{:?}", r.remark);

    // From here on every request this process writes is signed as harness1.
    acl::install(Some(Credentials::new("harness1", "harness-secret")));
    let r = c.call(send_v2(8, "AclTopic", 1, b"signed body")).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    c.dispatched().await;
    let stored = c.pull_all("AclTopic", 1).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(&stored[0].body[..], b"signed body");
    // Nothing refused was stored.
    assert!(c.pull_all("AclTopic", 0).await.is_empty());
    acl::install(None);
    b.stop().await;
}

#[test]
fn acl_needs_a_readable_file_and_a_release_with_acl_1_0() {
    let dir = tempfile::tempdir().unwrap();
    let empty_home = dir.path().display().to_string();
    let config = broker_under_test::config::BrokerConfig::for_test(
        dir.path(),
        &[
            ("aclEnable", "true"),
            ("rocketmqHome", &empty_home),
            ("brokerVersionProfile", "4.9"),
        ],
    )
    .expect("the keys are valid");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let err = rt
        .block_on(broker_under_test::RunningBroker::start(config))
        .err()
        .expect("no plain_acl.yml: the broker does not start");
    assert!(format!("{err:#}").contains("plain_acl.yml"), "{err:#}");
    let refused = |profile: Option<&str>| {
        let mut keys = vec![("aclEnable", "true"), ("rocketmqHome", &*empty_home)];
        keys.extend(profile.map(|p| ("brokerVersionProfile", p)));
        broker_under_test::config::BrokerConfig::for_test(dir.path(), &keys)
            .expect_err("aclEnable=true must be refused on this profile")
            .to_string()
    };
    assert!(refused(Some("4.3")).contains("4.4.0"));
}

/// Audit #8: 5.3.3 removed ACL 1.0 (RIP-77), so a real 5.3.3 broker with `aclEnable=true`
/// checks nothing. The 5.3 profile (the default) must neither check `plain_acl.yml` under
/// 5.3's name nor start quietly as if it did: it refuses, naming the key, the release and the
/// fix, with the file present (so the refusal is about the release, not the file).
#[test]
fn the_5_3_profile_refuses_acl_1_0() {
    let home = home();
    let home_path = home.path().display().to_string();
    for profile in [None, Some("5.3")] {
        let mut keys = vec![("aclEnable", "true"), ("rocketmqHome", &*home_path)];
        keys.extend(profile.map(|p| ("brokerVersionProfile", p)));
        let err = broker_under_test::config::BrokerConfig::for_test(home.path(), &keys)
            .expect_err("5.3 with aclEnable=true must not start")
            .to_string();
        for part in [
            "aclEnable=true",
            "brokerVersionProfile=5.3",
            "5.3.3",
            "brokerVersionProfile=4.9",
            "ACL 2.0",
        ] {
            assert!(err.contains(part), "{part:?} missing from: {err}");
        }
    }
    // `false` is what 5.3.3 does anyway: accepted.
    broker_under_test::config::BrokerConfig::for_test(home.path(), &[("aclEnable", "false")])
        .expect("aclEnable=false is fine on 5.3");
    // A configuration built past `validate` still gets no 4.9.8 checks under 5.3's name.
    let mut config = broker_under_test::config::BrokerConfig::for_test(
        home.path(),
        &[("rocketmqHome", &home_path)],
    )
    .unwrap();
    config.acl_enable = true;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let err = rt
        .block_on(broker_under_test::RunningBroker::start(config))
        .err()
        .expect("the start refuses ACL 1.0 on 5.3 too");
    assert!(format!("{err:#}").contains("5.3.3"), "{err:#}");
}
