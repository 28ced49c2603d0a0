//! Push consumers that behave like RocketMQ's `DefaultMQPushConsumer` (send-path reference
//! §12, consumer §8): the pull gates in RocketMQ's order, process queues and committed
//! offsets, rebalance, orderly locks, a processing-time model, and the figures users watch
//! (end-to-end latency, lag, flow-control events, lost and duplicated messages).
//!
//! * run.rs           — a job's consumers: runtime, prefill, join/leave schedule, drain, figures
//! * job_part.rs      — the consumers as a job part (`crate::part`): the hooks the job calls
//! * instance.rs      — one client: heartbeat, rebalance of both subscriptions (the topic,
//!   `%RETRY%<group>`), offset persistence, locks, shutdown
//! * pull.rs          — one queue's pull loop, and orderly's consume task per queue
//! * pull_frame.rs    — its PULL_MESSAGE, encoded once and re-emitted per pull
//! * concurrent.rs    — ConsumeMessageConcurrentlyService: consume requests, their bookkeeping
//! * workers.rs       — the consume executor: worker tasks over one bounded request queue
//! * offset_illegal.rs — code 21: the queue dropped, its offset fixed per client version
//! * pull_gate.rs     — the decision order before each pull, and its log texts
//! * locks.rs         — orderly locks: lockAll, lock(mq), relock and resubmit delays
//! * process_queue.rs — ProcessQueue: the cache ordered by offset, the offset to commit
//! * offset_map.rs    — its map by offset: a sorted ring for offsets that arrive in order
//! * allocate.rs      — AllocateMessageQueueAveragely
//! * bench.rs         — `harness processing-bench`: the model's consume rate against N/T
//! * processing.rs    — the processing-time model (constant / exponential / percentiles, stalls)
//! * failure.rs       — which deliveries fail, and the retry accounting (retries, DLQ, delays)
//! * send_back.rs     — CONSUMER_SEND_MSG_BACK for a failed message; the broker's retry counters
//! * fallback.rs      — the inner producer's publish to `%RETRY%<group>` after a failed send-back
//! * threads.rs       — the consume threads, busy on absolute deadlines (no rounding drift)
//! * body.rs          — pull bodies into messages; a bad record is a counted error
//! * wire.rs          — the async connection (calls, oneway, broker notifications)
//! * outbox.rs        — a connection's outgoing bytes, its next pulls written in rounds
//! * link.rs          — a connection that reconnects after a broker restart
//! * links.rs         — an instance's links, one per address (broker name and id) of the route
//! * route.rs         — one broker or a cluster's route (name server, 30-s refresh); `Mq`
//! * restart.rs       — a restart's recovery time and duplicates
//! * prefill.rs       — the backlog sent before the consumers start
//! * backlog.rs       — the prefilled backlog's drain: first pull to last message (`drain_rate`)
//! * metrics.rs, figures.rs, seqset.rs, tracking.rs, log.rs, state.rs — leaves

mod allocate;
mod backlog;
mod bench;
mod body;
mod concurrent;
mod failure;
mod fallback;
mod figures;
mod instance;
pub mod job_part;
mod link;
mod links;
mod locks;
mod log;
mod metrics;
mod offset_illegal;
mod offset_map;
mod offsets;
mod outbox;
mod prefill;
mod process_queue;
mod processing;
mod pull;
mod pull_answer;
mod pull_frame;
mod pull_gate;
mod restart;
mod route;
mod run;
mod send_back;
mod seqset;
pub mod start_error;
mod state;
mod threads;
mod tracking;
mod wire;
mod workers;

pub use allocate::allocate_averagely;
pub use backlog::drain_rate;
pub use bench::{run_bench, ProcessingBenchArgs, Timing};
pub use body::decode_pull_body;
pub use figures::{BrokerCounts, ConsumerFigures, ConsumerSecond};
pub use process_queue::{Msg, ProcessQueue};
pub use pull_gate::{decide, FlowControl, Gate, QueueView, Thresholds};
pub use route::{Mq, Sub, Target};
pub use run::ConsumerRun;
pub use seqset::SeqSet;
pub use start_error::ConsumerStartError;
pub use tracking::SendTracking;
