//! How an answer is built and whether it is written (reference §1.5).

use remoting::{LanguageCode, RemotingCommand, SerializeType};

use crate::{
    keys::VersionProfile,
    task::{AnswerSource, Responder},
};

/// A response to `request` with RocketMQ's response fields: same opaque, RESPONSE bit, the
/// broker's own version ordinal, language JAVA, JSON unless `answer` re-tags it.
pub fn response(
    profile: VersionProfile,
    request: &RemotingCommand,
    code: impl Into<i32>,
    remark: Option<String>,
) -> RemotingCommand {
    let mut r = RemotingCommand::response_to(request, code, remark);
    r.version = profile.ordinal();
    r.language = LanguageCode::JAVA;
    r
}

/// Writes `response` to `request`'s connection following the rules of `source`.
pub fn answer(
    profile: VersionProfile,
    request: &RemotingCommand,
    responder: &Responder,
    mut response: RemotingCommand,
    source: AnswerSource,
) {
    let write = match source {
        AnswerSource::Processor | AnswerSource::Overload => !request.is_oneway(),
        AnswerSource::RemotingReject => !request.is_oneway() || profile.is_4x(),
        AnswerSource::FastFailure => true,
    };
    if !write {
        return;
    }
    response.serialize_type = match source {
        AnswerSource::Processor if profile.is_4x() => request.serialize_type,
        _ => SerializeType::Json,
    };
    responder.write(response.to_bytes());
}
