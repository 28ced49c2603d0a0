//! The answer to a request whose header does not decode.

use remoting::{HeaderError, RemotingCommand, ResponseCode};

use crate::{broker::Broker, dispatch::response};

/// The SYSTEM_ERROR answer for a request header that cannot be decoded, with the text of
/// RocketMQ's `RemotingCommandException`.
pub fn header_error(
    broker: &Broker,
    request: &RemotingCommand,
    e: &HeaderError,
) -> RemotingCommand {
    let remark = match e {
        HeaderError::Missing(field) => format!("the custom field <{field}> is null"),
        HeaderError::Invalid { field, value } => {
            format!("the custom field <{field}> has an invalid value: {value:?}")
        }
    };
    response(
        broker.config.profile,
        request,
        ResponseCode::SYSTEM_ERROR,
        Some(remark),
    )
}
