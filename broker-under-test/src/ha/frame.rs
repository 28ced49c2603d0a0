//! The classic HA wire format, identical in 4.3, 4.9 and 5.3's DefaultHAService (HA reference
//! §2.2, §2.3). Big-endian, no handshake, no magic:
//!
//! - slave → master, a report: `[maxPhyOffset: i64]` (8 bytes), the end of the slave's CommitLog;
//! - master → slave, a transfer frame: `[physicOffset: i64][bodySize: i32]` (12 bytes) then
//!   `bodySize` raw CommitLog bytes starting at `physicOffset`; `bodySize = 0` is a heartbeat.
//!
//! Decoding is `check` then `parse` over a buffer: `Ok(None)` means "need more bytes", and a
//! body larger than the reader's buffer is refused before anything is allocated.

/// Length of a slave's offset report.
pub const REPORT_LEN: usize = 8;
/// Length of a transfer frame's header.
pub const HEADER_LEN: usize = 12;
/// The slave's read buffer (`READ_MAX_BUFFER_SIZE`, 4 MiB): no frame may be larger.
pub const READ_MAX_BUFFER_SIZE: usize = 4 * 1024 * 1024;

/// A transfer frame's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// CommitLog offset of the first body byte (for a heartbeat: the next offset to send).
    pub physic_offset: i64,
    pub body_size: usize,
}

/// A frame no RocketMQ master sends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("transfer frame body size {0} is negative")]
    NegativeSize(i32),
    #[error("transfer frame body size {0} exceeds the {READ_MAX_BUFFER_SIZE}-byte read buffer")]
    TooLarge(usize),
    #[error("transfer frame offset {0} is negative")]
    NegativeOffset(i64),
}

/// The 8-byte report.
pub fn encode_report(max_phy_offset: i64) -> [u8; REPORT_LEN] {
    max_phy_offset.to_be_bytes()
}

/// Reads a report from the front of `buf`, if 8 bytes are there.
pub fn parse_report(buf: &[u8]) -> Option<i64> {
    let bytes: [u8; REPORT_LEN] = buf.get(..REPORT_LEN)?.try_into().ok()?;
    Some(i64::from_be_bytes(bytes))
}

/// The 12-byte frame header.
pub fn encode_header(physic_offset: i64, body_size: usize) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&physic_offset.to_be_bytes());
    h[8..].copy_from_slice(&(body_size as i32).to_be_bytes());
    h
}

/// The header at the front of `buf`, once the header **and** its whole body are there.
pub fn check_frame(buf: &[u8]) -> Result<Option<FrameHeader>, FrameError> {
    let Some(h) = buf.get(..HEADER_LEN) else {
        return Ok(None);
    };
    let physic_offset = i64::from_be_bytes(h[..8].try_into().expect("8 bytes"));
    let size = i32::from_be_bytes(h[8..].try_into().expect("4 bytes"));
    if size < 0 {
        return Err(FrameError::NegativeSize(size));
    }
    if physic_offset < 0 {
        return Err(FrameError::NegativeOffset(physic_offset));
    }
    let body_size = size as usize;
    if body_size > READ_MAX_BUFFER_SIZE - HEADER_LEN {
        return Err(FrameError::TooLarge(body_size));
    }
    if buf.len() < HEADER_LEN + body_size {
        return Ok(None);
    }
    Ok(Some(FrameHeader {
        physic_offset,
        body_size,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's example: 128 bytes at 1 GiB, the report that follows, a heartbeat.
    #[test]
    fn the_reference_example_round_trips() {
        let h = encode_header(1 << 30, 128);
        assert_eq!(h, [0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0x80]);
        assert_eq!(
            encode_report((1 << 30) + 128),
            [0, 0, 0, 0, 0x40, 0, 0, 0x80]
        );
        let mut frame = h.to_vec();
        assert_eq!(check_frame(&frame), Ok(None), "body missing");
        frame.extend_from_slice(&[7u8; 128]);
        assert_eq!(
            check_frame(&frame),
            Ok(Some(FrameHeader {
                physic_offset: 1 << 30,
                body_size: 128
            }))
        );
        assert_eq!(parse_report(&encode_report(42)), Some(42));
        assert_eq!(parse_report(&[0; 7]), None);
    }

    #[test]
    fn bad_headers_are_refused_before_allocating() {
        let mut h = encode_header(0, 0).to_vec();
        h[8..].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(check_frame(&h), Err(FrameError::NegativeSize(-1)));
        let big = encode_header(0, READ_MAX_BUFFER_SIZE);
        assert!(matches!(check_frame(&big), Err(FrameError::TooLarge(_))));
        assert_eq!(check_frame(&[0; 11]), Ok(None));
    }

    proptest::proptest! {
        #[test]
        fn headers_round_trip(offset in 0i64..i64::MAX, size in 0usize..4096) {
            let mut f = encode_header(offset, size).to_vec();
            f.resize(HEADER_LEN + size, 0);
            let h = check_frame(&f).unwrap().unwrap();
            proptest::prop_assert_eq!(h.physic_offset, offset);
            proptest::prop_assert_eq!(h.body_size, size);
        }
    }
}
