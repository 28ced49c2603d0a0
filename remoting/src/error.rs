use thiserror::Error;

/// Why a byte sequence is not a valid remoting frame. Every variant means the peer broke the
/// protocol; RocketMQ closes the connection on any of them (reference §1.1), and so do we.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DecodeError {
    #[error("frame length {0} is negative")]
    NegativeLength(i32),
    #[error("frame length {len} exceeds the maximum of {max} bytes")]
    FrameTooLarge { len: usize, max: usize },
    #[error("frame length {0} is too small to hold the header-length field")]
    FrameTooSmall(usize),
    #[error("header length {header_len} exceeds the frame's {available} remaining bytes")]
    HeaderBeyondFrame { header_len: usize, available: usize },
    #[error("unknown serialize type {0} (expected 0 = JSON or 1 = ROCKETMQ)")]
    UnknownSerializeType(u8),
    #[error("bad JSON header: {0}")]
    BadJson(String),
    #[error("ROCKETMQ header truncated while reading {0}")]
    Truncated(&'static str),
    #[error("{field} length {len} exceeds the header length {header_len}")]
    LengthBeyondHeader {
        field: &'static str,
        len: i64,
        header_len: usize,
    },
    #[error("{0} is not valid UTF-8")]
    InvalidUtf8(&'static str),
}

/// A typed custom header could not be built from a command's `extFields`.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum HeaderError {
    #[error("the field {0} is null")]
    Missing(&'static str),
    #[error("the field {field} has the invalid value {value:?}")]
    Invalid { field: &'static str, value: String },
}
