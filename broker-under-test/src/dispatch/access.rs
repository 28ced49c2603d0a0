//! The ACL gate in front of every processor (`aclEnable`, [`crate::acl`]).

use remoting::ResponseCode;

use super::answer::response;
use crate::{broker::Broker, task::RequestTask};

/// The answer to a request the ACL refuses, or `None` to let it through. RocketMQ's remoting
/// layer turns the hook's AclException into SYSTEM_ERROR with `exceptionSimpleDesc(e)` as the
/// remark (4.9.8 `NettyRemotingAbstract.processRequestCommand`), and writes nothing for a
/// oneway request.
pub fn refusal(broker: &Broker, task: &RequestTask) -> Option<remoting::RemotingCommand> {
    let acl = broker.acl.as_ref()?;
    let denied = acl.check(&task.request, task.responder.peer().ip()).err()?;
    let profile = broker.config.profile;
    Some(response(
        profile,
        &task.request,
        ResponseCode::SYSTEM_ERROR,
        Some(denied.remark()),
    ))
}
