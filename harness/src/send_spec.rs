//! A workload's sends as the client builds them: the profile's `[workload]` (and the shard of
//! the schedule this process sends) turned into `rmq_client`'s [`SendSpec`]. The one place
//! where the model's vocabulary meets the wire's, for the producer and the consumers' prefill.

use harness_model::profile::{HeaderKind, SendCode, Workload};
use harness_model::shard::Shard;
use remoting::SerializeType;
use rmq_client::send::{RequestVersion, SendBuilder, SendSpec};

/// The sends of `w`, as shard `shard` of the schedule sends them: its own producer group and a
/// UNIQ_KEY client part of its own.
pub fn send_spec(w: &Workload, shard: Shard) -> SendSpec {
    SendSpec {
        version: match w.code {
            SendCode::V1 => RequestVersion::V1,
            SendCode::V2 => RequestVersion::V2,
        },
        serialize: match w.header {
            HeaderKind::Json => SerializeType::Json,
            HeaderKind::Rocketmq => SerializeType::RocketMq,
        },
        oneway: w.oneway,
        batch: w.batch,
        message_size: w.message_size as usize,
        topic: w.topic.clone(),
        queues: w.queues,
        producer_group: shard.producer_group(&w.producer_group),
        shard: (!shard.is_whole()).then_some(shard.index),
    }
}

/// The builder of the whole schedule's sends of `w`.
pub fn builder(w: &Workload) -> SendBuilder {
    SendBuilder::new(&send_spec(w, Shard::WHOLE))
}
