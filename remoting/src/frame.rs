//! Frame boundaries: `[int32 length][length bytes]`, checked before anything is allocated.

use bytes::{Buf, Bytes, BytesMut};

use crate::{command::RemotingCommand, error::DecodeError};

/// RocketMQ's default `com.rocketmq.remoting.frameMaxLength`: the largest frame, counting the
/// 4-byte length field itself (Netty's `LengthFieldBasedFrameDecoder` semantics, reference §1.1).
pub const MAX_FRAME_LEN: usize = 16 * 1024 * 1024;

/// Result of looking at the front of a receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameCheck {
    /// Not enough bytes yet; `need` is the total the buffer must hold (when known).
    Incomplete { need: Option<usize> },
    /// A whole frame of `total` bytes (length field included) is at the front of the buffer.
    Complete { total: usize },
}

/// Looks at the front of `buf` without copying. Rejects a negative, too small or oversize length
/// as soon as the 4 length bytes are there, so a hostile length never causes an allocation.
pub fn check_frame(buf: &[u8], max_frame_len: usize) -> Result<FrameCheck, DecodeError> {
    if buf.len() < 4 {
        return Ok(FrameCheck::Incomplete { need: None });
    }
    let length = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if length < 0 {
        return Err(DecodeError::NegativeLength(length));
    }
    let total = length as usize + 4;
    if total > max_frame_len {
        return Err(DecodeError::FrameTooLarge {
            len: total,
            max: max_frame_len,
        });
    }
    if (length as usize) < 4 {
        return Err(DecodeError::FrameTooSmall(length as usize));
    }
    if buf.len() < total {
        return Ok(FrameCheck::Incomplete { need: Some(total) });
    }
    Ok(FrameCheck::Complete { total })
}

/// Takes one whole frame off the front of `buf`, its length field stripped (what
/// [`RemotingCommand::decode`] reads), for a reader that looks at it before decoding it.
/// `Ok(None)` means "need more bytes"; the buffer keeps what it has. On `Err` the connection
/// must be closed.
pub fn take_frame(buf: &mut BytesMut, max_frame_len: usize) -> Result<Option<Bytes>, DecodeError> {
    match check_frame(buf, max_frame_len)? {
        FrameCheck::Incomplete { need } => {
            if let Some(need) = need {
                // The length was validated against the maximum, so reserving is bounded.
                buf.reserve(need.saturating_sub(buf.len()));
            }
            Ok(None)
        }
        FrameCheck::Complete { total } => {
            let mut frame = buf.split_to(total);
            frame.advance(4);
            Ok(Some(frame.freeze()))
        }
    }
}

/// Takes one whole frame off the front of `buf` and decodes it ([`take_frame`]).
pub fn decode_frame(
    buf: &mut BytesMut,
    max_frame_len: usize,
) -> Result<Option<RemotingCommand>, DecodeError> {
    take_frame(buf, max_frame_len)?
        .map(RemotingCommand::decode)
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_buffer_is_incomplete() {
        assert_eq!(
            check_frame(&[0, 0], MAX_FRAME_LEN),
            Ok(FrameCheck::Incomplete { need: None })
        );
        assert_eq!(
            check_frame(&[0, 0, 0, 8, 0, 0], MAX_FRAME_LEN),
            Ok(FrameCheck::Incomplete { need: Some(12) })
        );
    }

    #[test]
    fn hostile_lengths_are_rejected_before_allocation() {
        assert_eq!(
            check_frame(&[0xff, 0xff, 0xff, 0xff], MAX_FRAME_LEN),
            Err(DecodeError::NegativeLength(-1))
        );
        assert!(matches!(
            check_frame(&[0x7f, 0xff, 0xff, 0xff], MAX_FRAME_LEN),
            Err(DecodeError::FrameTooLarge { .. })
        ));
        // Exactly at the limit (length field included) is allowed, one more byte is not.
        let at_limit = ((MAX_FRAME_LEN - 4) as u32).to_be_bytes();
        assert!(check_frame(&at_limit, MAX_FRAME_LEN).is_ok());
        let over = ((MAX_FRAME_LEN - 3) as u32).to_be_bytes();
        assert!(check_frame(&over, MAX_FRAME_LEN).is_err());
        assert_eq!(
            check_frame(&[0, 0, 0, 3], MAX_FRAME_LEN),
            Err(DecodeError::FrameTooSmall(3))
        );
    }

    #[test]
    fn incomplete_frame_leaves_buffer_untouched() {
        let mut buf = BytesMut::from(&[0u8, 0, 0, 30, 0, 0][..]);
        assert_eq!(decode_frame(&mut buf, MAX_FRAME_LEN), Ok(None));
        assert_eq!(&buf[..], &[0u8, 0, 0, 30, 0, 0]);
    }
}
