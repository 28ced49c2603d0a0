//! The shared state every processor sees: configuration, store, executor queues, topic and
//! consumer-offset tables, counters.

use std::{net::SocketAddr, sync::Arc, time::Instant};

use crate::{
    acl::PlainAccessValidator,
    clock::epoch_millis,
    config::BrokerConfig,
    consumer::{
        clients::ConsumerManager, hold::PullHold, locks::LockManager, ConfigFile, ConfigFileError,
    },
    counters::FlowControlCounters,
    executor::TaskQueue,
    ha::state::HaState,
    namesrv::hook::RegisterHook,
    schedule::{ScheduleService, SCHEDULE_TOPIC},
    store::MessageStore,
    task::ExecutorKind,
};

pub use crate::consumer::{
    OffsetTable, SubscriptionGroupConfig, SubscriptionGroupTable, TopicConfig, TopicTable,
    PERM_INHERIT, PERM_READ, PERM_WRITE,
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
    /// Subscription groups.
    pub groups: SubscriptionGroupTable,
    /// Registered consumers and producers.
    pub consumers: ConsumerManager,
    /// Long polling: pulls waiting for messages.
    pub pull_hold: Arc<PullHold>,
    /// Queue locks for orderly consumption.
    pub locks: LockManager,
    /// Delay levels, SCHEDULE_TOPIC_XXXX delivery and the retry counters.
    pub schedule: Arc<ScheduleService>,
    pub boot: Instant,
    pub boot_epoch_ms: i64,
    /// Registers a topic created by a request before the request is answered.
    pub namesrv: RegisterHook,
    /// `aclEnable=true`: the accounts every request is checked against before its processor.
    pub acl: Option<PlainAccessValidator>,
    /// Replication: connections, acknowledged offsets, the master's address (`ha/`).
    pub ha: Arc<HaState>,
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
            SubscriptionGroupTable::default(),
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
        let offsets = OffsetTable::persisted(ConfigFile::durable(dir.join("consumerOffset.json")));
        let groups =
            SubscriptionGroupTable::persisted(ConfigFile::new(dir.join("subscriptionGroup.json")));
        let broker = Self::with_tables(config, store, store_host, topics, offsets, groups);
        let log = vec![
            broker.topics.load()?,
            broker.offsets.load()?,
            broker.groups.load()?,
            broker.schedule.load()?,
        ];
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
            if let Err(e) = self.groups.persist() {
                eprintln!("subscription groups: {e}");
            }
        }
    }

    fn with_tables(
        config: BrokerConfig,
        store: Arc<MessageStore>,
        store_host: SocketAddr,
        topics: TopicTable,
        offsets: OffsetTable,
        groups: SubscriptionGroupTable,
    ) -> Self {
        let queues = ExecutorKind::ALL
            .map(|kind| Arc::new(TaskQueue::new(kind, config.executor(kind).queue_capacity)));
        let pull_hold = Arc::new(PullHold::new(queues[ExecutorKind::Pull.index()].clone()));
        let config_version = config.profile.ordinal();
        let lock_live = config.rebalance_lock_max_live_time;
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
        if config.profile != crate::config::VersionProfile::V4_3 {
            // 4.9/5.3 list the schedule topic from start-up, one queue per level (18 at least,
            // TopicConfigManager's SCHEDULE_TOPIC_QUEUE_NUM).
            let queues = config.message_delay_level.max_level().max(18);
            topics.put_default(TopicConfig {
                topic_name: SCHEDULE_TOPIC.into(),
                read_queue_nums: queues,
                write_queue_nums: queues,
                perm: PERM_READ | PERM_WRITE,
                order: false,
            });
        }
        let schedule = Arc::new(ScheduleService::new(
            config.message_delay_level.clone(),
            store.clone(),
            config.profile,
            &config.store_path_root_dir.join("config"),
        ));
        Broker {
            ha: HaState::new(config.ha.master_address.clone()),
            schedule,
            config,
            store,
            store_host,
            queues,
            counters: FlowControlCounters::default(),
            topics,
            offsets,
            groups,
            consumers: ConsumerManager::new(config_version),
            pull_hold,
            locks: LockManager::new(lock_live),
            boot: Instant::now(),
            boot_epoch_ms: epoch_millis(),
            namesrv: RegisterHook::default(),
            acl: None,
        }
    }

    /// findSubscriptionGroupConfig with this broker's settings (consumer §2.5).
    pub fn find_group(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        self.groups.find_or_create(
            group,
            self.config.auto_create_subscription_group,
            !self.config.profile.is_4x(),
        )
    }

    /// A group's membership changed: NOTIFY_CONSUMER_IDS_CHANGED to its members, if the
    /// group's `notifyConsumerIdsChangedEnable` (a group without config notifies, as 4.x).
    pub fn consumer_ids_changed(&self, group: &str) {
        let enabled = self
            .groups
            .get(group)
            .is_none_or(|g| g.notify_consumer_ids_changed_enable);
        if enabled {
            self.consumers.notify_ids_changed(group);
        }
    }

    /// ClientHousekeepingService.onChannelClose: the connection leaves every group; the
    /// remaining members are told (4.x always, 5.3 not for BROADCASTING groups).
    pub fn channel_closed(&self, peer: SocketAddr) {
        for (group, model) in self.consumers.channel_closed(peer) {
            if self.config.profile.is_4x() || model != "BROADCASTING" {
                self.consumers.notify_ids_changed(&group);
            }
        }
    }

    /// Consumer-side figures for GET_BROKER_RUNTIME_INFO.
    pub fn consumer_runtime_info(&self) -> Vec<(String, String)> {
        let (groups, connections) = self.consumers.counts();
        vec![
            (
                "pullRequestHoldCount".into(),
                self.pull_hold.held().to_string(),
            ),
            (
                "pullRequestHoldLostWakeups".into(),
                self.pull_hold.lost_wakeups().to_string(),
            ),
            (
                "pullRequestHoldReleasedByMessage".into(),
                self.pull_hold.released_by_message().to_string(),
            ),
            ("consumerGroupCount".into(), groups.to_string()),
            ("rebalanceLockCount".into(), self.locks.held().to_string()),
            ("consumerConnectionCount".into(), connections.to_string()),
        ]
        .into_iter()
        .chain(self.schedule.runtime_info())
        .collect()
    }

    /// The per-minute `flow-control:` line, with the long-polling figures.
    pub fn summary_line(&self) -> String {
        format!(
            "{} pull-hold: held={} lostWakeups={}",
            self.counters.summary_line(),
            self.pull_hold.held(),
            self.pull_hold.lost_wakeups()
        )
    }

    pub fn queue(&self, kind: ExecutorKind) -> &Arc<TaskQueue> {
        &self.queues[kind.index()]
    }
}
