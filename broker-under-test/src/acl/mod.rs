//! ACL 1.0 (`aclEnable`): RocketMQ's `PlainAccessValidator` over `plain_acl.yml`.
//!
//! A façade. `file.rs` reads `${rocketmqHome}/conf/plain_acl.yml`, `address.rs` holds the
//! white-address forms (`RemoteAddressStrategyFactory`), `perm.rs` the permission bits
//! (`Permission`), `resource.rs` which resources a request needs (`PlainAccessValidator.parse`),
//! `validator.rs` the check itself (`PlainPermissionManager.validate`) and the refusal as the
//! remoting layer writes it: code 1 SYSTEM_ERROR, remark `exceptionSimpleDesc(AclException)`.
//!
//! The check runs where RocketMQ's server RPC hook runs: on the executor thread, after
//! admission (`[REJECTREQUEST]`/`[OVERLOAD]` come first) and before the processor.

mod address;
mod file;
mod perm;
mod resource;
mod validator;

pub use file::AclFileError;
pub use validator::{Denied, PlainAccessValidator};
