//! HEART_BEAT (34): accepted; this broker keeps no client registry.

use remoting::{RemotingCommand, ResponseCode};

use crate::{broker::Broker, dispatch::response};

pub fn process(broker: &Broker, request: &RemotingCommand) -> RemotingCommand {
    response(broker.config.profile, request, ResponseCode::SUCCESS, None)
}
