//! The state the consumer's tasks share: the run (`Shared`), one client instance
//! (`Instance`) and one assigned queue (`QueueState`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::consumer::failure::Failures;
use crate::consumer::link::Link;
use crate::consumer::links::Links;
use crate::consumer::log::EventLog;
use crate::consumer::metrics::Metrics;
use crate::consumer::process_queue::Msg;
use crate::consumer::process_queue::ProcessQueue;
use crate::consumer::processing::ProcessingModel;
use crate::consumer::pull_gate::{QueueView, Thresholds};
use crate::consumer::restart::RestartWatch;
use crate::consumer::route::{find_in_subscribe, Mq, Route, Sub, MASTER_ID};
use crate::consumer::threads::ConsumeThreads;
use crate::consumer::wire::WireError;
use crate::consumer::workers::RequestQueue;
use harness_model::profile::Consumer;

/// One consumer run (a job's consumers).
pub struct Shared {
    pub cfg: Consumer,
    /// One broker, or the topic's route from the name server (refreshed every 30 s).
    pub route: Route,
    pub topic: String,
    /// `%RETRY%<group>`, the other subscription.
    pub retry_topic: String,
    pub metrics: Arc<Metrics>,
    pub model: ProcessingModel,
    /// Messages started over every instance: which one `stall_every` hits.
    pub started: AtomicU64,
    pub log: EventLog,
    /// The whole run's stop: every task ends.
    pub cancel: CancellationToken,
    pub tracker: TaskTracker,
    /// Per queue: the offset its current owner would commit (none before any owner).
    pub committed: Mutex<BTreeMap<Mq, i64>>,
    /// Every instance's rebalance, woken when the route changes.
    pub rebalance_wakers: Mutex<Vec<Arc<Notify>>>,
    /// The listener's failures and the retry accounting.
    pub failures: Failures,
    /// Broker restarts: the consumers' recovery and the duplicates they cause.
    pub restart: RestartWatch,
    /// Pulls answered by a slave (brokerId > 0), over every instance.
    pub slave_pulls: AtomicU64,
}

impl Shared {
    /// The topic of subscription `sub`.
    pub fn topic_of(&self, sub: Sub) -> &str {
        match sub {
            Sub::Topic => &self.topic,
            Sub::Retry => &self.retry_topic,
        }
    }

    /// The subscription of `topic`, if it is one of the two.
    pub fn sub_of(&self, topic: &str) -> Option<Sub> {
        Sub::ALL.into_iter().find(|s| self.topic_of(*s) == topic)
    }

    /// Where the current owner of `mq` stands, for the lag sampler.
    pub fn publish_committed(&self, mq: Mq, offset: i64) {
        self.committed.lock().insert(mq, offset);
    }
}

/// Tells the lag sampler where this queue's owner stands.
pub fn publish_committed(inst: &Instance, q: &QueueState) {
    if q.sub == Sub::Retry {
        // The retry queue is not part of the run's topic lag.
        return;
    }
    inst.shared
        .publish_committed(q.mq(), q.offset.load(Ordering::Acquire));
}

/// One queue assigned to an instance.
pub struct QueueState {
    /// The broker that holds the queue: pulls, offsets and locks go there.
    pub broker: Arc<str>,
    pub queue_id: i32,
    pub pq: Mutex<ProcessQueue>,
    pub dropped: AtomicBool,
    /// Orderly: the broker granted the lock at the last LOCK_BATCH_MQ.
    pub locked: AtomicBool,
    pub last_lock: Mutex<Instant>,
    /// The consumed offset to commit, −1 before the first (RemoteBrokerOffsetStore's entry).
    pub offset: AtomicI64,
    /// The next offset to pull (`PullRequest.nextOffset`).
    pub next_offset: AtomicI64,
    /// Orderly: the first pull after locking re-reads the broker's offset.
    pub offset_fixed: AtomicBool,
    pub threshold_count: AtomicI64,
    pub threshold_size: AtomicI64,
    /// The subscription the queue belongs to: the run's topic or `%RETRY%<group>`.
    pub sub: Sub,
    /// `pullFromWhichNodeTable`: the broker id the last pull answer suggested (0 at first).
    pub pull_from: AtomicI64,
}

impl QueueState {
    pub fn new(mq: &Mq, start: i64, locked: bool, t: Thresholds) -> QueueState {
        QueueState {
            broker: mq.broker.clone(),
            queue_id: mq.queue_id,
            pq: Mutex::new(ProcessQueue::default()),
            dropped: AtomicBool::new(false),
            locked: AtomicBool::new(locked),
            last_lock: Mutex::new(Instant::now()),
            offset: AtomicI64::new(start),
            next_offset: AtomicI64::new(start),
            offset_fixed: AtomicBool::new(false),
            threshold_count: AtomicI64::new(t.count),
            threshold_size: AtomicI64::new(t.size_mib),
            sub: Sub::Topic,
            pull_from: AtomicI64::new(MASTER_ID),
        }
    }

    /// The same queue state for a queue of subscription `sub`.
    pub fn of(mut self, sub: Sub) -> QueueState {
        self.sub = sub;
        self
    }

    /// This queue's topic.
    pub fn topic<'a>(&self, shared: &'a Shared) -> &'a str {
        shared.topic_of(self.sub)
    }

    /// Its key in [`Instance::queues`].
    pub fn key(&self) -> (Sub, Mq) {
        (self.sub, self.mq())
    }

    pub fn mq(&self) -> Mq {
        Mq {
            broker: self.broker.clone(),
            queue_id: self.queue_id,
        }
    }

    pub fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    /// What the pull gates look at.
    pub fn view(&self) -> QueueView {
        let pq = self.pq.lock();
        QueueView {
            count: pq.count(),
            size_bytes: pq.size_bytes(),
            min_offset: pq.min_offset().unwrap_or(0),
            max_offset: pq.max_offset().unwrap_or(0),
            max_span: pq.max_span(),
            locked: self.locked.load(Ordering::Acquire),
        }
    }

    /// Raises the in-memory offset (`updateOffset(.., increaseOnly = true)`); −1 is ignored.
    pub fn advance(&self, offset: i64) {
        if offset >= 0 {
            self.offset.fetch_max(offset, Ordering::AcqRel);
        }
    }
}

/// ConsumeMessageConcurrentlyService's ConsumeRequests of one pull, in order: `range` of the
/// pull's messages, one request per `consumeMessageBatchMaxSize` of them (`concurrent.rs`
/// takes them apart). One entry of the request queue per pull, not per request: two shared
/// pointers cloned and dropped per request (per message at the default batch size 1) and a
/// queue lock per request were 8% of a consumer's CPU per message in `make floor`.
pub struct ConsumeRequest {
    pub q: Arc<QueueState>,
    pub pulled: Arc<Vec<Msg>>,
    pub range: std::ops::Range<usize>,
    /// When it was submitted: a thread free earlier starts it then.
    pub ready: tokio::time::Instant,
    /// The run-wide number of its first message (`Shared::started`), once a worker took
    /// it: what it gives back to the queue keeps its numbers.
    pub numbered: Option<u64>,
}

impl ConsumeRequest {
    pub fn msgs(&self) -> &[Msg] {
        &self.pulled[self.range.clone()]
    }

    /// `range` of the same pull, its first message numbered `numbered`.
    pub fn part(&self, range: std::ops::Range<usize>, numbered: Option<u64>) -> ConsumeRequest {
        ConsumeRequest {
            q: self.q.clone(),
            pulled: self.pulled.clone(),
            range,
            ready: self.ready,
            numbered,
        }
    }
}

/// One client instance: its id, connection, queues and consume threads.
pub struct Instance {
    pub index: u32,
    pub client_id: String,
    pub shared: Arc<Shared>,
    /// A link per broker; each reconnects after its broker restarts.
    pub links: Links,
    /// The process queue table: both subscriptions' queues (`processQueueTable`).
    pub queues: Mutex<BTreeMap<(Sub, Mq), Arc<QueueState>>>,
    /// The subscription's `subVersion` sent in pulls (after the heartbeat carrying it).
    pub sub_version: AtomicI64,
    /// Orderly: `consumeThreadMin` threads; the wait for one is bounded by the cached messages.
    pub threads: ConsumeThreads,
    /// Concurrently: the consume requests waiting for one of the `consumeThreadMin` workers.
    pub requests: RequestQueue<ConsumeRequest>,
    /// Woken by NOTIFY_CONSUMER_IDS_CHANGED.
    pub rebalance_now: Arc<Notify>,
    /// This instance's stop (leave_at or the end of the run).
    pub stop: CancellationToken,
    /// `queueFlowControlTimes` (count and size share it) and `queueMaxSpanFlowControlTimes`.
    pub fc_times: AtomicU64,
    pub span_times: AtomicU64,
    pub not_locked_times: AtomicU64,
}

impl Instance {
    /// `PullRequest [consumerGroup=G, messageQueue=MessageQueue [...], nextOffset=N]`.
    pub fn pull_request(&self, q: &QueueState) -> String {
        format!(
            "PullRequest [consumerGroup={}, messageQueue=MessageQueue [topic={}, brokerName={}, queueId={}], nextOffset={}]",
            self.shared.cfg.group,
            q.topic(&self.shared),
            q.broker,
            q.queue_id,
            q.next_offset.load(Ordering::Relaxed)
        )
    }

    pub fn log(&self, level: &str, text: &str) {
        self.shared
            .log
            .line(&format!("consumer-{}", self.index), level, text);
    }

    /// The link to `broker`: `findBrokerAddressInSubscribe(name, MASTER_ID, false)` in the
    /// route (the master, else another address of the name, as RemoteBrokerOffsetStore falls
    /// back when the master is gone), else the master link it had.
    pub fn link(&self, broker: &Arc<str>) -> Option<Arc<Link>> {
        self.link_to(broker, MASTER_ID).map(|(_, l)| l)
    }

    /// The link for `findBrokerAddressInSubscribe(broker, id, false)` and the id it reaches.
    fn link_to(&self, broker: &Arc<str>, id: i64) -> Option<(i64, Arc<Link>)> {
        self.find_link(broker, id, false)
    }

    /// `findBrokerAddressInSubscribe(broker, id, only_this)` as a link; a name the route no
    /// longer lists keeps the link it had.
    fn find_link(&self, broker: &Arc<str>, id: i64, only_this: bool) -> Option<(i64, Arc<Link>)> {
        let addrs = self.shared.route.addrs_of(broker);
        if addrs.is_empty() {
            return self.links.existing(broker).map(|l| (MASTER_ID, l));
        }
        find_in_subscribe(&addrs, id, only_this, self.shared.cfg.client_version)
            .map(|(id, addr)| (id, self.links.to(broker, id, addr)))
    }

    /// The master's link only (`findBrokerAddressInSubscribe(name, MASTER_ID, true)`: locks and
    /// unlocks; with the master gone from the route there is none, and the lock fails).
    pub fn master_link(&self, broker: &Arc<str>) -> Result<Arc<Link>, WireError> {
        self.find_link(broker, MASTER_ID, true)
            .map(|(_, l)| l)
            .ok_or_else(|| WireError::NoRoute(broker.to_string()))
    }

    /// Where `q`'s next pull goes (`recalculatePullFromWhichNode`, then
    /// `findBrokerAddressInSubscribe(name, that id, false)`): the id reached and its link.
    pub fn pull_link(&self, q: &QueueState) -> Option<(i64, Arc<Link>)> {
        self.link_to(&q.broker, q.pull_from.load(Ordering::Acquire))
    }

    /// Every address of `broker` in the route, by id (heartbeats and the unregister go to
    /// each, slaves too, as `sendHeartbeatToAllBroker` does for a consumer).
    pub fn links_all(&self, broker: &Arc<str>) -> Vec<Arc<Link>> {
        self.shared
            .route
            .addrs_of(broker)
            .into_iter()
            .map(|(id, addr)| self.links.to(broker, id, addr))
            .collect()
    }

    /// A call to `broker` on its link.
    pub async fn call(
        &self,
        broker: &Arc<str>,
        cmd: remoting::RemotingCommand,
        timeout: std::time::Duration,
    ) -> Result<remoting::RemotingCommand, WireError> {
        let link = self
            .link(broker)
            .ok_or_else(|| WireError::NoRoute(broker.to_string()))?;
        link.call(cmd, timeout).await
    }

    /// A oneway request to `broker` on its link.
    pub async fn oneway(
        &self,
        broker: &Arc<str>,
        cmd: remoting::RemotingCommand,
    ) -> Result<(), WireError> {
        let link = self
            .link(broker)
            .ok_or_else(|| WireError::NoRoute(broker.to_string()))?;
        link.oneway(cmd).await
    }

    pub fn assigned(&self) -> Vec<Arc<QueueState>> {
        self.queues.lock().values().cloned().collect()
    }
}
