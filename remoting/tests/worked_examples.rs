//! Byte-exact checks against the worked examples of reference §1.3 and §1.4.

use bytes::{Bytes, BytesMut};
use remoting::{decode_frame, RemotingCommand, RequestCode, SerializeType, MAX_FRAME_LEN};

fn runtime_info_request() -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::GET_BROKER_RUNTIME_INFO, 1);
    cmd.version = 409;
    cmd
}

#[test]
fn json_header_matches_section_1_3() {
    let header = br#"{"code":28,"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":409}"#;
    assert_eq!(header.len(), 96);
    let mut expected = vec![0, 0, 0, 0x64, 0, 0, 0, 0x60];
    expected.extend_from_slice(header);
    assert_eq!(
        runtime_info_request().to_bytes(),
        Bytes::from(expected.clone())
    );

    let mut buf = BytesMut::from(&expected[..]);
    let decoded = decode_frame(&mut buf, MAX_FRAME_LEN).unwrap().unwrap();
    assert_eq!(decoded, runtime_info_request());
    assert!(buf.is_empty());
}

#[test]
fn rocketmq_header_matches_section_1_4() {
    let expected: Vec<u8> = vec![
        0x00, 0x00, 0x00, 0x19, 0x01, 0x00, 0x00, 0x15, 0x00, 0x1c, 0x00, 0x01, 0x99, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];
    let cmd = runtime_info_request().with_serialize_type(SerializeType::RocketMq);
    assert_eq!(cmd.to_bytes(), Bytes::from(expected.clone()));
    let mut buf = BytesMut::from(&expected[..]);
    assert_eq!(decode_frame(&mut buf, MAX_FRAME_LEN).unwrap().unwrap(), cmd);
}

#[test]
fn rocketmq_ext_entry_matches_section_1_4() {
    let mut cmd = runtime_info_request().with_serialize_type(SerializeType::RocketMq);
    cmd.ext_fields.insert("a".into(), "g1".into());
    let bytes = cmd.to_bytes();
    // ext length 9, then key length 1, 'a', value length 2, "g1".
    assert_eq!(
        &bytes[bytes.len() - 13..],
        &[0, 0, 0, 9, 0x00, 0x01, 0x61, 0x00, 0x00, 0x00, 0x02, 0x67, 0x31]
    );
}
