//! The shared state every processor sees: configuration, store, executor queues, topic and
//! consumer-offset tables, counters.

use std::{collections::HashMap, net::SocketAddr, sync::Arc, time::Instant};

use parking_lot::{Mutex, RwLock};

use crate::{
    clock::epoch_millis, config::BrokerConfig, counters::FlowControlCounters, executor::TaskQueue,
    store::MessageStore, task::ExecutorKind,
};

/// The template topic clients name in `defaultTopic` for auto-creation.
pub const AUTO_CREATE_TOPIC_KEY_TOPIC: &str = "TBW102";

/// PermName bits.
pub const PERM_INHERIT: i32 = 1;
pub const PERM_WRITE: i32 = 2;
pub const PERM_READ: i32 = 4;

/// A topic's queues and permissions (TopicConfig).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicConfig {
    pub topic_name: String,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub perm: i32,
    pub order: bool,
}

impl std::fmt::Display for TopicConfig {
    /// Java's `TopicConfig.toString()` (4.9.8), which RocketMQ puts into some remarks.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let perm = format!(
            "{}{}{}",
            if self.perm & PERM_READ != 0 { "R" } else { "-" },
            if self.perm & PERM_WRITE != 0 {
                "W"
            } else {
                "-"
            },
            if self.perm & PERM_INHERIT != 0 {
                "X"
            } else {
                "-"
            },
        );
        write!(
            f,
            "TopicConfig [topicName={}, readQueueNums={}, writeQueueNums={}, perm={}, \
             topicFilterType=SINGLE_TAG, topicSysFlag=0, order={}]",
            self.topic_name, self.read_queue_nums, self.write_queue_nums, perm, self.order
        )
    }
}

/// Topics known to the broker (TopicConfigManager, in memory only).
#[derive(Debug, Default)]
pub struct TopicTable {
    // Read on every send, written on creation: an RwLock keeps sends from serializing here.
    topics: RwLock<HashMap<String, TopicConfig>>,
}

impl TopicTable {
    pub fn get(&self, topic: &str) -> Option<TopicConfig> {
        self.topics.read().get(topic).cloned()
    }

    pub fn put(&self, config: TopicConfig) {
        self.topics
            .write()
            .insert(config.topic_name.clone(), config);
    }

    /// TopicConfigManager.createTopicInSendMessageMethod: a new topic copies the template's
    /// permissions (without INHERIT) with min(client's, template's write) queues. `None` when the
    /// template is unknown or not inheritable.
    pub fn create_in_send(
        &self,
        topic: &str,
        default_topic: &str,
        client_default_queue_nums: i32,
    ) -> Option<TopicConfig> {
        let mut topics = self.topics.write();
        if let Some(existing) = topics.get(topic) {
            return Some(existing.clone());
        }
        let template = topics.get(default_topic)?;
        if template.perm & PERM_INHERIT == 0 {
            return None;
        }
        let queues = client_default_queue_nums
            .min(template.write_queue_nums)
            .max(1);
        let config = TopicConfig {
            topic_name: topic.to_owned(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm: template.perm & !PERM_INHERIT,
            order: false,
        };
        topics.insert(topic.to_owned(), config.clone());
        Some(config)
    }
}

/// Everything a request handler needs.
pub struct Broker {
    pub config: BrokerConfig,
    pub store: Arc<MessageStore>,
    /// `brokerIP1` + the bound port: written into records and message ids.
    pub store_host: SocketAddr,
    /// The executor queues, indexed by [`ExecutorKind::index`].
    pub queues: [Arc<TaskQueue>; ExecutorKind::COUNT],
    pub counters: FlowControlCounters,
    pub topics: TopicTable,
    /// (group, topic, queueId) → committed consume offset.
    pub consumer_offsets: Mutex<HashMap<(String, String, i32), i64>>,
    pub boot: Instant,
    pub boot_epoch_ms: i64,
}

impl Broker {
    pub fn new(config: BrokerConfig, store: Arc<MessageStore>, store_host: SocketAddr) -> Self {
        let queues = ExecutorKind::ALL
            .map(|kind| Arc::new(TaskQueue::new(kind, config.executor(kind).queue_capacity)));
        let topics = TopicTable::default();
        if config.auto_create_topic_enable {
            // TopicConfigManager creates the template topic only when auto-creation is on.
            topics.put(TopicConfig {
                topic_name: AUTO_CREATE_TOPIC_KEY_TOPIC.into(),
                read_queue_nums: config.default_topic_queue_nums,
                write_queue_nums: config.default_topic_queue_nums,
                perm: PERM_INHERIT | PERM_READ | PERM_WRITE,
                order: false,
            });
        }
        Broker {
            config,
            store,
            store_host,
            queues,
            counters: FlowControlCounters::default(),
            topics,
            consumer_offsets: Mutex::new(HashMap::new()),
            boot: Instant::now(),
            boot_epoch_ms: epoch_millis(),
        }
    }

    pub fn queue(&self, kind: ExecutorKind) -> &Arc<TaskQueue> {
        &self.queues[kind.index()]
    }
}
