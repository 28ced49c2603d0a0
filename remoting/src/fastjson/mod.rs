//! Reading JSON the way RocketMQ's fastjson does, and writing what it writes.
//!
//! A Java broker or name server parses every request body with fastjson, which is lenient where
//! serde is strict; real clients rely on that (Apache's C++ client sends enums as ordinals and
//! `subVersion` as a string). Strict types are for what we write, not for what we read:
//! - [`text`]: the dialect's text form (bare integer map keys, tab-indented pretty output) and
//!   [`from_slice`], the one entry point for decoding a body;
//! - [`lenient`]: `deserialize_with` helpers for numbers, booleans and strings as fastjson
//!   converts them;
//! - [`enums`]: RocketMQ's enums, read by name or by ordinal, written by name.
//!
//! Unknown fields are ignored by every body type (serde's default; never `deny_unknown_fields`).

pub mod enums;
pub mod lenient;
pub mod text;

pub use enums::{ConsumeFromWhere, ConsumeType, MessageModel, TopicFilterType};
pub use text::{from_slice, pretty_tabs, quote_integer_keys};
