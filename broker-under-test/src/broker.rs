//! The shared state every processor sees: configuration, store, executor queues, topic and
//! consumer-offset tables, counters.

use std::{net::SocketAddr, sync::Arc, time::Instant};

use crate::{
    clock::epoch_millis,
    config::BrokerConfig,
    consumer::{ConfigFile, ConfigFileError},
    counters::FlowControlCounters,
    executor::TaskQueue,
    store::MessageStore,
    task::ExecutorKind,
};

pub use crate::consumer::{
    OffsetTable, TopicConfig, TopicTable, PERM_INHERIT, PERM_READ, PERM_WRITE,
};

/// The template topic clients name in `defaultTopic` for auto-creation.
pub const AUTO_CREATE_TOPIC_KEY_TOPIC: &str = "TBW102";

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
    /// Committed consume offsets.
    pub offsets: OffsetTable,
    pub boot: Instant,
    pub boot_epoch_ms: i64,
}

impl Broker {
    /// A broker whose topics and offsets live in memory only (unit tests).
    pub fn new(config: BrokerConfig, store: Arc<MessageStore>, store_host: SocketAddr) -> Self {
        Self::with_tables(
            config,
            store,
            store_host,
            TopicTable::default(),
            OffsetTable::default(),
        )
    }

    /// A broker with `config/topics.json` and `config/consumerOffset.json` under
    /// `storePathRootDir`, loaded now (consumer §6.1, §6.2). Returns the broker and the log lines
    /// of the loads.
    pub fn open(
        config: BrokerConfig,
        store: Arc<MessageStore>,
        store_host: SocketAddr,
    ) -> Result<(Self, Vec<String>), ConfigFileError> {
        let dir = config.store_path_root_dir.join("config");
        let topics = TopicTable::persisted(ConfigFile::new(dir.join("topics.json")));
        let offsets = OffsetTable::persisted(ConfigFile::new(dir.join("consumerOffset.json")));
        let broker = Self::with_tables(config, store, store_host, topics, offsets);
        let log = vec![broker.topics.load()?, broker.offsets.load()?];
        Ok((broker, log))
    }

    /// Writes both files (the periodic flush and the clean stop).
    pub fn persist(&self, force: bool) {
        if let Err(e) = self.offsets.persist(force) {
            eprintln!("consumer offsets: {e}");
        }
        if force {
            if let Err(e) = self.topics.persist() {
                eprintln!("topics: {e}");
            }
        }
    }

    fn with_tables(
        config: BrokerConfig,
        store: Arc<MessageStore>,
        store_host: SocketAddr,
        topics: TopicTable,
        offsets: OffsetTable,
    ) -> Self {
        let queues = ExecutorKind::ALL
            .map(|kind| Arc::new(TaskQueue::new(kind, config.executor(kind).queue_capacity)));
        if config.auto_create_topic_enable {
            // TopicConfigManager creates the template topic only when auto-creation is on; a
            // loaded topics.json replaces it (`putAll` after the built-ins).
            topics.put_default(TopicConfig {
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
            offsets,
            boot: Instant::now(),
            boot_epoch_ms: epoch_millis(),
        }
    }

    pub fn queue(&self, kind: ExecutorKind) -> &Arc<TaskQueue> {
        &self.queues[kind.index()]
    }
}
