//! The ACL 1.0 signature against a vector computed from RocketMQ's algorithm
//! (`AclClientRPCHook.parseRequestContent` → `AclUtils.combineRequestContent` →
//! `AclSigner.calSignature`), written out here independently of `remoting::acl`.

use std::collections::BTreeMap;

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use remoting::acl::{self, Credentials};
use sha1::Sha1;

/// A SEND_MESSAGE_V2 header as a 4.9 producer writes it, signed by account `RocketMQ`
/// (the example account of RocketMQ's distribution `conf/plain_acl.yml`).
fn send_v2_fields() -> BTreeMap<String, String> {
    [
        ("a", "bench_producer"),
        ("b", "TopicTest"),
        ("c", "TBW102"),
        ("d", "4"),
        ("e", "1"),
        ("f", "0"),
        ("g", "1700000000000"),
        ("h", "0"),
        (
            "i",
            "WAIT\u{1}true\u{2}UNIQ_KEY\u{1}7F0000010001000000000000000000\u{2}",
        ),
        ("j", "0"),
        ("m", "false"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

const BODY: &[u8] = b"hello";

/// Checked by hand with python3:
/// ```text
/// python3 -c "import hmac,hashlib,base64; f={'AccessKey':'RocketMQ','a':'bench_producer','b':'TopicTest','c':'TBW102','d':'4','e':'1','f':'0','g':'1700000000000','h':'0','i':'WAIT\x01true\x02UNIQ_KEY\x017F0000010001000000000000000000\x02','j':'0','m':'false'}; print(base64.b64encode(hmac.new(b'12345678',''.join(f[k] for k in sorted(f)).encode()+b'hello',hashlib.sha1).digest()).decode())"
/// ```
/// (the same with `f['SecurityToken']='tok-1'` added gives the second vector).
const VECTOR: &str = "R+DU29qcz/tbLR8M8umO//fsqfM=";
const VECTOR_WITH_TOKEN: &str = "+P5Sd/pDQARZr0Kq5a2EE1sz+BI=";

/// RocketMQ's algorithm, step by step: a sorted map of every field but `Signature`, the values
/// concatenated in key order as UTF-8, the body appended, HmacSHA1 with the secret key, Base64.
fn rocketmq_signature(fields: &BTreeMap<String, String>, body: &[u8], secret: &str) -> String {
    let sorted: BTreeMap<&str, &str> = fields
        .iter()
        .filter(|(k, _)| k.as_str() != "Signature")
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut content: Vec<u8> = sorted.values().flat_map(|v| v.bytes()).collect();
    content.extend_from_slice(body);
    let mut mac = Hmac::<Sha1>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(&content);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

#[test]
fn signature_matches_the_vector() {
    let mut fields = send_v2_fields();
    Credentials::new("RocketMQ", "12345678").sign(&mut fields, BODY);
    assert_eq!(fields["AccessKey"], "RocketMQ");
    assert!(!fields.contains_key("SecurityToken"));
    assert_eq!(fields["Signature"], VECTOR);
    assert_eq!(rocketmq_signature(&fields, BODY, "12345678"), VECTOR);
}

#[test]
fn security_token_is_signed_and_sent() {
    let mut fields = send_v2_fields();
    Credentials::new("RocketMQ", "12345678")
        .with_security_token("tok-1")
        .sign(&mut fields, BODY);
    assert_eq!(fields["SecurityToken"], "tok-1");
    assert_eq!(fields["Signature"], VECTOR_WITH_TOKEN);
    assert_eq!(
        rocketmq_signature(&fields, BODY, "12345678"),
        VECTOR_WITH_TOKEN
    );
}

#[test]
fn a_different_secret_or_body_changes_the_signature() {
    let fields = send_v2_fields();
    let mut signed = fields.clone();
    Credentials::new("RocketMQ", "12345678").sign(&mut signed, BODY);
    let mut other = fields.clone();
    Credentials::new("RocketMQ", "wrong").sign(&mut other, BODY);
    assert_ne!(signed["Signature"], other["Signature"]);
    assert_ne!(
        acl::signature("12345678", &acl::content(&signed, b"hellp")),
        signed["Signature"]
    );
}
