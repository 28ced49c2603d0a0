//! Every malformed frame the decoder must refuse, each with its typed error.

use bytes::{BufMut, BytesMut};
use remoting::{decode_frame, DecodeError, MAX_FRAME_LEN};

fn frame(mark: u32, header: &[u8], body: &[u8]) -> BytesMut {
    let mut b = BytesMut::new();
    b.put_u32((4 + header.len() + body.len()) as u32);
    b.put_u32(mark);
    b.put_slice(header);
    b.put_slice(body);
    b
}

fn decode(mut b: BytesMut) -> Result<(), DecodeError> {
    decode_frame(&mut b, MAX_FRAME_LEN).map(|c| assert!(c.is_some(), "expected a whole frame"))
}

/// A ROCKETMQ header with the given remark length field and ext length field.
fn binary_header(remark_len: i32, remark: &[u8], ext_len: i32, ext: &[u8]) -> Vec<u8> {
    let mut h = BytesMut::new();
    h.put_i16(10);
    h.put_u8(0);
    h.put_i16(401);
    h.put_i32(7);
    h.put_i32(0);
    h.put_i32(remark_len);
    h.put_slice(remark);
    h.put_i32(ext_len);
    h.put_slice(ext);
    h.to_vec()
}

#[test]
fn negative_length() {
    let b = BytesMut::from(&[0x80u8, 0, 0, 0, 0, 0, 0, 0][..]);
    assert_eq!(decode(b), Err(DecodeError::NegativeLength(i32::MIN)));
}

#[test]
fn oversize_length_is_refused_from_the_first_four_bytes() {
    let b = BytesMut::from(&[0x01u8, 0, 0, 0][..]);
    assert!(matches!(decode(b), Err(DecodeError::FrameTooLarge { len, .. }) if len == 0x0100_0004));
}

#[test]
fn header_length_beyond_frame() {
    let mut b = BytesMut::new();
    b.put_u32(8);
    b.put_u32(100); // JSON, header length 100, but only 4 bytes follow
    b.put_u32(0);
    assert_eq!(
        decode(b),
        Err(DecodeError::HeaderBeyondFrame {
            header_len: 100,
            available: 4
        })
    );
}

#[test]
fn unknown_serialize_type() {
    assert_eq!(
        decode(frame(0x0200_0002, b"{}", b"")),
        Err(DecodeError::UnknownSerializeType(2))
    );
}

#[test]
fn bad_json() {
    assert!(matches!(
        decode(frame(4, b"{\"co", b"")),
        Err(DecodeError::BadJson(_))
    ));
    assert!(matches!(
        decode(frame(2, b"[]", b"")),
        Err(DecodeError::BadJson(_))
    ));
    let h = br#"{"code":10,"language":"KLINGON"}"#;
    assert!(matches!(
        decode(frame(h.len() as u32, h, b"")),
        Err(DecodeError::BadJson(_))
    ));
}

#[test]
fn remark_length_beyond_header() {
    let h = binary_header(1000, b"abc", 0, b"");
    let r = decode(frame(0x0100_0000 | h.len() as u32, &h, b""));
    assert!(
        matches!(
            r,
            Err(DecodeError::LengthBeyondHeader {
                field: "remark",
                ..
            })
        ),
        "{r:?}"
    );
    let h = binary_header(-5, b"", 0, b"");
    let r = decode(frame(0x0100_0000 | h.len() as u32, &h, b""));
    assert!(
        matches!(
            r,
            Err(DecodeError::LengthBeyondHeader {
                field: "remark",
                ..
            })
        ),
        "{r:?}"
    );
}

#[test]
fn ext_length_beyond_header() {
    let h = binary_header(0, b"", 64, &[0, 1, b'a', 0, 0, 0, 1, b'b']);
    let r = decode(frame(0x0100_0000 | h.len() as u32, &h, b""));
    assert!(
        matches!(
            r,
            Err(DecodeError::LengthBeyondHeader {
                field: "extFields",
                ..
            })
        ),
        "{r:?}"
    );
    // An entry whose value length runs past the ext section.
    let h = binary_header(0, b"", 8, &[0, 1, b'a', 0, 0, 0, 9, b'b']);
    let r = decode(frame(0x0100_0000 | h.len() as u32, &h, b""));
    assert!(r.is_err(), "{r:?}");
}

#[test]
fn truncated_binary_header() {
    let h = [0u8, 10, 0, 1];
    assert!(matches!(
        decode(frame(0x0100_0004, &h, b"")),
        Err(DecodeError::Truncated(_))
    ));
}

#[test]
fn invalid_utf8_remark() {
    let h = binary_header(2, &[0xff, 0xfe], 0, b"");
    let r = decode(frame(0x0100_0000 | h.len() as u32, &h, b""));
    assert_eq!(r, Err(DecodeError::InvalidUtf8("remark")));
}
