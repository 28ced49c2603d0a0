//! The RocketMQ remoting wire protocol, and nothing else: no sockets, no policy.
//!
//! A frame on the wire is `[int32 length][int32 serializeType<<24 | headerLength][header][body]`
//! (reference §1). [`frame`] finds frame boundaries in a byte buffer, [`command`] turns a frame
//! into a [`RemotingCommand`] and back, [`header`] holds the two header serializations (JSON and
//! the ROCKETMQ binary form), [`code`] the request and response codes, [`headers`] the typed
//! "custom headers" carried in `extFields`, and [`message`] the message-level encodings
//! (properties string, batch body, CommitLog record). [`acl`] signs requests as RocketMQ's
//! `AclClientRPCHook` does, inside the encoders.
//!
//! The bottom of the workspace: it must never import another crate of the workspace, nor tokio
//! or anything that opens a socket. The broker, the name server, the client and `floor` share
//! this one codec, so a byte-level fix reaches all of them.

pub mod acl;
pub mod code;
pub mod command;
pub mod error;
pub mod fastjson;
pub mod frame;
pub mod frame_bits;
pub mod frame_buf;
pub mod frame_cache;
pub mod header;
mod header_fields;
pub mod headers;
pub mod message;
pub mod peek;
pub mod peek_cache;
pub mod plain_json;
pub mod record;
pub mod record_ref;
pub mod route;
pub mod template;

pub use code::{LanguageCode, RequestCode, ResponseCode};
pub use command::RemotingCommand;
pub use error::{DecodeError, HeaderError};
pub use frame::{decode_frame, take_frame, FrameCheck, MAX_FRAME_LEN};
pub use frame_bits::{SerializeType, FLAG_ONEWAY, FLAG_RESPONSE};
pub use frame_buf::FrameBuf;
pub use frame_cache::FrameCache;
pub use peek::{peek_frame, HeaderPeek};
pub use peek_cache::PeekCache;
pub use template::{FrameTemplate, TemplateError};
