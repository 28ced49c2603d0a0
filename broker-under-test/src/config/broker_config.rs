//! The validated, typed broker configuration.

use std::{
    collections::BTreeMap,
    net::{IpAddr, SocketAddr},
    path::{Path, PathBuf},
    time::Duration,
};

use super::{error::ConfigError, ha::HaConfig, role::BrokerRole};
use crate::{keys::VersionProfile, store::StoreConfig, task::ExecutorKind};

/// One executor's settings, read from the keys its [`ExecutorKind`] names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecutorSettings {
    pub threads: usize,
    pub queue_capacity: usize,
    /// BrokerFastFailure's `[TIMEOUT_CLEAN_QUEUE]` limit; `None`: the queue is not scanned.
    pub wait_limit: Option<Duration>,
}

/// The validated broker configuration.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// `brokerVersionProfile` (ours): 4.3 | 4.9 | 5.3. Default: 5.3.
    pub profile: VersionProfile,
    /// `listenPort`; 0 binds an ephemeral port. Default: 10911.
    pub listen_port: u16,
    /// `brokerIP1`: the address bound and written into message ids. Default: 127.0.0.1.
    pub broker_ip: IpAddr,
    /// `storePathRootDir`. Default: $HOME/store.
    pub store_path_root_dir: PathBuf,
    /// `brokerName`. Default: the host name.
    pub broker_name: String,
    /// `brokerClusterName`, stored in every message's CLUSTER property. Default: DefaultCluster.
    pub broker_cluster_name: String,
    /// `brokerRole`. Default: ASYNC_MASTER.
    pub broker_role: BrokerRole,
    /// `regionId`, returned as MSG_REGION. Default: DefaultRegion.
    pub region_id: String,
    /// `traceOn`, returned as TRACE_ON. Default: true.
    pub trace_on: bool,
    /// `autoCreateTopicEnable`. Default: true.
    pub auto_create_topic_enable: bool,
    /// `defaultTopicQueueNums`: queues of the TBW102 template topic. Default: 4.
    pub default_topic_queue_nums: i32,
    /// Threads, queue capacity and wait limit per executor (reference §4.1, §6), indexed by
    /// [`ExecutorKind::index`]; see [`BrokerConfig::executor`].
    pub executors: [ExecutorSettings; ExecutorKind::COUNT],
    /// `brokerFastFailureEnable`. Default: true.
    pub broker_fast_failure_enable: bool,
    /// `serverChannelMaxIdleTimeSeconds`. Default: 120.
    pub server_channel_max_idle: Duration,
    /// `flushConsumerOffsetInterval`: period of the consumerOffset.json write. Default: 5000 ms.
    pub flush_consumer_offset_interval: Duration,
    /// `messageDelayLevel`: the delay of each level. Default: RocketMQ's 18 levels, 1s … 2h.
    pub message_delay_level: crate::schedule::DelayLevels,
    /// `flushDelayOffsetInterval`: period of the delayOffset.json write. Default: 10000 ms.
    pub flush_delay_offset_interval: Duration,
    /// `autoCreateSubscriptionGroup`. Default: true.
    pub auto_create_subscription_group: bool,
    /// `accessMessageInMemoryMaxRatio` (%). Default: 40.
    pub access_message_in_memory_max_ratio: u64,
    /// `longPollingEnable`. Default: true.
    pub long_polling_enable: bool,
    /// `shortPollingTimeMills`. Default: 1000 ms.
    pub short_polling_time: Duration,
    /// Pull limits (consumer §4): (count, bytes) in memory and on disk. Defaults: 32, 256 KiB,
    /// 8, 64 KiB.
    pub max_transfer_in_memory: (usize, usize),
    pub max_transfer_on_disk: (usize, usize),
    /// `channelExpiredTimeout`. Default: 120000 ms.
    pub channel_expired_timeout: Duration,
    /// `rebalanceLockMaxLiveTime` (ours). Default: 60000 ms.
    pub rebalance_lock_max_live_time: Duration,
    /// `aclEnable`: check requests against `plain_acl.yml` (4.9 only; refused on 4.3 and 5.3).
    /// Default: false.
    pub acl_enable: bool,
    /// `rocketmqHome`: `conf/plain_acl.yml` is read under it. Default: $ROCKETMQ_HOME.
    pub rocketmq_home: PathBuf,
    /// `maxConnections` (ours). Default: 1024.
    pub max_connections: usize,
    /// Replication: ids, the HA port, the slave wait (`ha.rs`).
    pub ha: HaConfig,
    /// Everything the store needs; `store_host` is filled in once the port is bound.
    pub store: StoreConfig,
    /// The effective `key=value` map (every known key), for `-p` and the start-up log.
    pub effective: BTreeMap<String, String>,
}

impl BrokerConfig {
    /// The settings of one executor.
    pub fn executor(&self, kind: ExecutorKind) -> &ExecutorSettings {
        &self.executors[kind.index()]
    }

    /// Settings that are legal but do not do what they seem to: one warning each.
    pub fn sanitize(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self
            .effective
            .get("transientStorePoolEnable")
            .map(String::as_str)
            == Some("true")
            && !self.store.transient_store_pool_in_effect
        {
            w.push(format!(
                "transientStorePoolEnable=true has no effect with brokerVersionProfile={} here: \
                 the pool needs {} (reference §5)",
                self.profile,
                if self.profile.is_4x() {
                    "flushDiskType=ASYNC_FLUSH and brokerRole != SLAVE"
                } else {
                    "brokerRole != SLAVE"
                }
            ));
        }
        // isOSPageCacheBusy only counts lock holds shorter than 10^7 ms.
        if self.store.os_page_cache_busy_timeout_mills >= 10_000_000 {
            w.push(format!(
                "osPageCacheBusyTimeOutMills={} disables the page-cache-busy check \
                 (RocketMQ's formula ignores holds of 10,000,000 ms or more)",
                self.store.os_page_cache_busy_timeout_mills
            ));
        }
        w.extend(self.ha.sanitize(self.listen_port));
        w
    }

    /// Fails on contradictions a real broker would only discover at run time.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let namesrv_addr = self.effective.get("namesrvAddr").map_or("", |s| s.trim());
        if let Err(reason) = crate::namesrv::addr::name_servers(namesrv_addr) {
            return Err(ConfigError::BadValue {
                key: "namesrvAddr".into(),
                value: self
                    .effective
                    .get("namesrvAddr")
                    .cloned()
                    .unwrap_or_default(),
                reason,
            });
        }
        // ACL 1.0 is modelled for 4.9 only: 4.3.2 predates it, 5.3.3 removed it (acl/release.rs).
        if let Some(why) = self
            .acl_enable
            .then(|| crate::acl::acl_refusal(self.profile))
            .flatten()
        {
            return Err(ConfigError::Contradiction(why));
        }
        if self.acl_enable && self.rocketmq_home.as_os_str().is_empty() {
            return Err(ConfigError::Contradiction(
                "aclEnable=true needs rocketmqHome (or ROCKETMQ_HOME): the accounts are read from \
                 ${rocketmqHome}/conf/plain_acl.yml"
                    .into(),
            ));
        }
        if self.default_topic_queue_nums < 1 {
            return Err(ConfigError::BadValue {
                key: "defaultTopicQueueNums".into(),
                value: self.default_topic_queue_nums.to_string(),
                reason: "must be at least 1".into(),
            });
        }
        if self.store.mapped_file_size_commit_log < 4096 {
            return Err(ConfigError::Contradiction(format!(
                "mappedFileSizeCommitLog={} is smaller than one 4 KiB page",
                self.store.mapped_file_size_commit_log
            )));
        }
        if (self.store.max_message_size as u64) >= self.store.mapped_file_size_commit_log as u64 {
            return Err(ConfigError::Contradiction(format!(
                "maxMessageSize={} does not fit in one CommitLog file of mappedFileSizeCommitLog={}",
                self.store.max_message_size, self.store.mapped_file_size_commit_log
            )));
        }
        if self.store.transient_store_pool_in_effect && self.store.transient_store_pool_size == 0 {
            return Err(ConfigError::Contradiction(
                "transientStorePoolEnable=true with transientStorePoolSize=0".into(),
            ));
        }
        Ok(())
    }

    /// The store configuration once the listening address is known (the store host is part of
    /// every record and message id).
    pub fn store_config(&self, bound: SocketAddr) -> StoreConfig {
        let mut store = self.store.clone();
        store.store_host = SocketAddr::new(self.broker_ip, bound.port());
        store
    }

    /// RocketMQ's ACL file: `${rocketmqHome}/conf/plain_acl.yml` (PlainPermissionManager's
    /// `defaultAclFile`).
    pub fn acl_file(&self) -> PathBuf {
        self.rocketmq_home.join("conf").join("plain_acl.yml")
    }

    /// The address to bind.
    pub fn bind_addr(&self) -> SocketAddr {
        SocketAddr::new(self.broker_ip, self.listen_port)
    }

    /// `key=value` lines, sorted by key, as `-p` prints them.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (k, v) in &self.effective {
            out.push_str(k);
            out.push('=');
            out.push_str(v);
            out.push('\n');
        }
        out
    }

    /// A configuration for tests: ephemeral port on 127.0.0.1, store under `dir`, small files.
    pub fn for_test(dir: &Path, overrides: &[(&str, &str)]) -> Result<Self, ConfigError> {
        let mut pairs = vec![
            ("listenPort".to_owned(), "0".to_owned()),
            ("brokerIP1".to_owned(), "127.0.0.1".to_owned()),
            ("storePathRootDir".to_owned(), dir.display().to_string()),
            ("brokerName".to_owned(), "broker-a".to_owned()),
            ("mappedFileSizeCommitLog".to_owned(), (16 << 20).to_string()),
            ("maxMessageSize".to_owned(), (1 << 20).to_string()),
            ("transientStorePoolSize".to_owned(), "2".to_owned()),
            // A test's answers must not depend on how full the machine's disk is: at 90 % every
            // send would get 14, at 85 % clean rounds force deletions. The store is measured
            // against a 1 TiB cap instead; retention tests set their own.
            (
                "injectStoreSizeCapBytes".to_owned(),
                (1u64 << 40).to_string(),
            ),
        ];
        pairs.extend(
            overrides
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        Ok(Self::from_pairs(&pairs)?.config)
    }
}
