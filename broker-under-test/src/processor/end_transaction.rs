//! END_TRANSACTION (37), minimal: the header is checked and the request accepted. Half messages
//! are stored like any other, so there is nothing to commit or roll back.

use remoting::{headers::EndTransactionRequestHeader, RemotingCommand, ResponseCode};

use crate::{broker::Broker, dispatch::response, processor::header::header_error};

pub fn process(broker: &Broker, request: &RemotingCommand) -> RemotingCommand {
    if let Err(e) = request.header::<EndTransactionRequestHeader>() {
        return header_error(broker, request, &e);
    }
    response(broker.config.profile, request, ResponseCode::SUCCESS, None)
}
