//! The frame's kind bits, a leaf below [`crate::command`], [`crate::plain_json`] and
//! [`crate::peek`]: the flag bits (response, oneway) and the serialize-type byte, the high byte
//! of the header-length field (reference §1.2).

use crate::error::DecodeError;

/// Flag bit 0: the frame is a response.
pub const FLAG_RESPONSE: i32 = 1;
/// Flag bit 1: the request expects no response.
pub const FLAG_ONEWAY: i32 = 2;

/// How the header of a frame is serialized: the high byte of the header-length field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SerializeType {
    #[default]
    Json,
    RocketMq,
}

impl SerializeType {
    pub fn as_byte(self) -> u8 {
        match self {
            SerializeType::Json => 0,
            SerializeType::RocketMq => 1,
        }
    }

    pub fn from_byte(b: u8) -> Result<Self, DecodeError> {
        match b {
            0 => Ok(SerializeType::Json),
            1 => Ok(SerializeType::RocketMq),
            other => Err(DecodeError::UnknownSerializeType(other)),
        }
    }
}
