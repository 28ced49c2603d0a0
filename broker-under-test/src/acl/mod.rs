//! ACL 1.0 (`aclEnable`): rocketmq-all-4.9.8's `PlainAccessValidator` over `plain_acl.yml`.
//!
//! Only the 4.9 profile has it: 4.3.2 predates ACL and 5.3.3 removed ACL 1.0, and on both
//! `aclEnable=true` is refused at start-up (`release.rs` says why).
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
mod release;
mod resource;
mod validator;

pub use file::AclFileError;
pub use release::acl_refusal;
pub use validator::{Denied, PlainAccessValidator};
