//! Process-wide signing: once credentials are installed, every request the encoders write is
//! signed, the JSON template included; responses and pre-signed requests are left alone. One
//! test function, because the installed credentials are shared by the whole test binary.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use remoting::acl::{self, Credentials};
use remoting::{FrameTemplate, RemotingCommand, SerializeType};

fn decode(bytes: &[u8]) -> RemotingCommand {
    RemotingCommand::decode(Bytes::copy_from_slice(&bytes[4..])).unwrap()
}

fn verifies(cmd: &RemotingCommand, secret: &str) -> bool {
    let sig = cmd.ext("Signature").unwrap_or_default();
    acl::signature(secret, &acl::content(&cmd.ext_fields, &cmd.body)) == sig
}

fn send(serialize: SerializeType) -> RemotingCommand {
    let ext: BTreeMap<String, String> = [("a", "g"), ("b", "T"), ("e", "0"), ("g", "0")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    RemotingCommand::request(310, 9)
        .with_ext_fields(ext)
        .with_body(&b"payload"[..])
        .with_serialize_type(serialize)
}

#[test]
fn installed_credentials_sign_every_request() {
    acl::install(Some(
        Credentials::new("ak", "sk").with_security_token("tok"),
    ));

    for serialize in [SerializeType::Json, SerializeType::RocketMq] {
        let wire = decode(&send(serialize).to_bytes());
        assert_eq!(wire.ext("AccessKey"), Some("ak"));
        assert_eq!(wire.ext("SecurityToken"), Some("tok"));
        assert!(
            verifies(&wire, "sk"),
            "{serialize:?}: {:?}",
            wire.ext_fields
        );
        assert!(!verifies(&wire, "other"));
    }

    // The template writes what the full encoder writes, signature included.
    let cmd = send(SerializeType::Json);
    let t = FrameTemplate::new(&cmd, &["e", "g"]).unwrap();
    let mut got = BytesMut::new();
    t.encode(-3, &["2", "1700000000000"], &mut got);
    let mut want_cmd = cmd.clone();
    want_cmd.opaque = -3;
    want_cmd.ext_fields.insert("e".into(), "2".into());
    want_cmd
        .ext_fields
        .insert("g".into(), "1700000000000".into());
    assert_eq!(&got[..], &want_cmd.to_bytes()[..]);
    assert!(verifies(&decode(&got), "sk"));

    // Responses are not signed; a request signed by its caller keeps its own signature.
    let resp = decode(&RemotingCommand::response_to(&cmd, 0, None).to_bytes());
    assert!(resp.ext_fields.is_empty());
    let mut own = send(SerializeType::Json);
    Credentials::new("other", "x").sign(&mut own.ext_fields, &own.body);
    let wire = decode(&own.to_bytes());
    assert_eq!(wire.ext("AccessKey"), Some("other"));
    assert!(verifies(&wire, "x"));

    acl::install(None);
    let wire = decode(&send(SerializeType::Json).to_bytes());
    assert_eq!(wire.ext("AccessKey"), None);
    assert_eq!(wire.ext("Signature"), None);
}
