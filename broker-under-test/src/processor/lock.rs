//! LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42) (AdminBrokerProcessor, consumer §7.1): JSON
//! bodies, no header. A body that does not parse answers SYSTEM_ERROR with the reason, as
//! RocketMQ's decode exception does; the connection stays open.

use remoting::{
    fastjson::{self, lenient},
    RemotingCommand, RequestCode, ResponseCode,
};
use serde::Deserialize;

use crate::{broker::Broker, consumer::locks::MessageQueue, dispatch::response};

/// `LockBatchRequestBody` / `UnlockBatchRequestBody`, read as fastjson reads them; 5.x's
/// `onlyThisBroker` and other unknown fields are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct LockBatchRequestBody {
    #[serde(deserialize_with = "lenient::string")]
    client_id: String,
    #[serde(deserialize_with = "lenient::string")]
    consumer_group: String,
    mq_set: Vec<MessageQueue>,
}

pub fn process(broker: &Broker, request: &RemotingCommand) -> RemotingCommand {
    let profile = broker.config.profile;
    let body: LockBatchRequestBody = match fastjson::from_slice(&request.body) {
        Ok(b) => b,
        Err(e) => {
            return response(
                profile,
                request,
                ResponseCode::SYSTEM_ERROR,
                Some(format!("the lock batch body does not decode: {e}")),
            )
        }
    };
    if request.code == RequestCode::UNLOCK_BATCH_MQ.as_i32() {
        broker
            .locks
            .unlock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
        return response(profile, request, ResponseCode::SUCCESS, None);
    }
    let locked = broker
        .locks
        .try_lock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
    let json = serde_json::json!({ "lockOKMQSet": locked }).to_string();
    response(profile, request, ResponseCode::SUCCESS, None).with_body(json.into_bytes())
}
