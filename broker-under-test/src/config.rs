//! `broker.conf`: RocketMQ's properties format and key names, with RocketMQ's defaults for the
//! selected version profile (reference §4.1, §5, §9.1).
//!
//! Loading works on strings first: the version profile's defaults form a `key → value` map, keys
//! set explicitly (file, then `--set`, last wins) replace them, and the result is parsed into the
//! typed [`BrokerConfig`]. That map is also what `-p` prints, so what is printed is exactly what
//! runs.

use std::{
    collections::BTreeMap,
    fmt,
    net::{IpAddr, SocketAddr},
    path::{Path, PathBuf},
    str::FromStr,
    time::Duration,
};

use thiserror::Error;

use crate::store::{FaultInjection, FlushDiskType, PutLockKind, StoreConfig};

/// Why a configuration could not be loaded.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: expected key=value, got {text:?}")]
    Syntax {
        path: String,
        line: usize,
        text: String,
    },
    #[error("bad value for {key}: {value:?} ({reason})")]
    BadValue {
        key: String,
        value: String,
        reason: String,
    },
    #[error("contradictory configuration: {0}")]
    Contradiction(String),
}

/// Which RocketMQ release the broker imitates where behaviour or defaults differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VersionProfile {
    /// rocketmq-all-4.3.0: spin lock and one send thread by default, synchronous send path.
    V4_3,
    /// rocketmq-all-4.9.8: the last 4.x release.
    V4_9,
    /// rocketmq-all-5.3.3.
    V5_3,
}

impl VersionProfile {
    /// The `MQVersion.Version` ordinal the broker puts in every response's `version` field.
    pub fn ordinal(self) -> i32 {
        match self {
            VersionProfile::V4_3 => 273,
            VersionProfile::V4_9 => 409,
            VersionProfile::V5_3 => 479,
        }
    }

    /// `brokerVersionDesc` in GET_BROKER_RUNTIME_INFO.
    pub fn desc(self) -> &'static str {
        match self {
            VersionProfile::V4_3 => "V4_3_0",
            VersionProfile::V4_9 => "V4_9_8",
            VersionProfile::V5_3 => "V5_3_3",
        }
    }

    pub fn is_4x(self) -> bool {
        self != VersionProfile::V5_3
    }
}

impl FromStr for VersionProfile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "4.3" => Ok(VersionProfile::V4_3),
            "4.9" => Ok(VersionProfile::V4_9),
            "5.3" => Ok(VersionProfile::V5_3),
            _ => Err("expected 4.3, 4.9 or 5.3".into()),
        }
    }
}

impl fmt::Display for VersionProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            VersionProfile::V4_3 => "4.3",
            VersionProfile::V4_9 => "4.9",
            VersionProfile::V5_3 => "5.3",
        })
    }
}

/// `brokerRole`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerRole {
    AsyncMaster,
    SyncMaster,
    Slave,
}

impl FromStr for BrokerRole {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ASYNC_MASTER" => Ok(BrokerRole::AsyncMaster),
            "SYNC_MASTER" => Ok(BrokerRole::SyncMaster),
            "SLAVE" => Ok(BrokerRole::Slave),
            _ => Err("expected ASYNC_MASTER, SYNC_MASTER or SLAVE".into()),
        }
    }
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
    /// Thread counts and queue capacities per executor (reference §4.1).
    pub send_threads: usize,
    pub send_queue_capacity: usize,
    pub pull_threads: usize,
    pub pull_queue_capacity: usize,
    pub heartbeat_threads: usize,
    pub heartbeat_queue_capacity: usize,
    pub end_transaction_threads: usize,
    pub end_transaction_queue_capacity: usize,
    pub admin_threads: usize,
    pub admin_queue_capacity: usize,
    /// `brokerFastFailureEnable`. Default: true.
    pub broker_fast_failure_enable: bool,
    /// BrokerFastFailure wait limits (reference §6).
    pub wait_time_send_queue: Duration,
    pub wait_time_pull_queue: Duration,
    pub wait_time_heartbeat_queue: Duration,
    pub wait_time_transaction_queue: Duration,
    /// `serverChannelMaxIdleTimeSeconds`. Default: 120.
    pub server_channel_max_idle: Duration,
    /// `maxConnections` (ours). Default: 1024.
    pub max_connections: usize,
    /// Everything the store needs; `store_host` is filled in once the port is bound.
    pub store: StoreConfig,
    /// The effective `key=value` map (every known key), for `-p` and the start-up log.
    pub effective: BTreeMap<String, String>,
}

/// Where configuration comes from: a file and `--set` overrides, in order.
#[derive(Debug, Clone, Default)]
pub struct ConfigSources {
    pub file: Option<PathBuf>,
    pub overrides: Vec<(String, String)>,
}

/// The result of loading: the configuration plus warnings (unknown keys, clamps) for stderr.
#[derive(Debug)]
pub struct Loaded {
    pub config: BrokerConfig,
    pub warnings: Vec<String>,
}

/// Keys that are ours, not RocketMQ's.
pub const OWN_KEYS: &[&str] = &[
    "brokerVersionProfile",
    "maxConnections",
    "injectPutStallMillis",
    "injectPutStallIntervalMillis",
    "injectAppendDelayMicros",
    "injectFlushStallMillis",
];

fn cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for writes of its length; gethostname NUL-terminates on success
    // when the name fits, and we stop at the first NUL or the end of the buffer anyway.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "DEFAULT_BROKER".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(s) if !s.is_empty() => s.to_owned(),
        _ => "DEFAULT_BROKER".into(),
    }
}

/// The defaults of every known key for `profile` (RocketMQ's BrokerConfig, MessageStoreConfig,
/// NettyServerConfig of that release). `send_threads` is the effective send thread count, which
/// the 4.9.1+ end-transaction default depends on.
pub fn defaults(profile: VersionProfile, send_threads: Option<usize>) -> BTreeMap<String, String> {
    let cpus = cpus();
    let old = profile == VersionProfile::V4_3;
    let send = send_threads.unwrap_or(if old { 1 } else { cpus.min(4) });
    let end_tx = if old {
        8 + 2 * cpus
    } else {
        (8 + 2 * cpus).max(4 * send)
    };
    let home = std::env::var("HOME").unwrap_or_else(|_| ".".into());
    let pairs: Vec<(&str, String)> = vec![
        ("brokerVersionProfile", profile.to_string()),
        ("listenPort", "10911".into()),
        ("brokerIP1", "127.0.0.1".into()),
        ("storePathRootDir", format!("{home}/store")),
        ("brokerName", host_name()),
        ("brokerClusterName", "DefaultCluster".into()),
        ("brokerRole", "ASYNC_MASTER".into()),
        ("regionId", "DefaultRegion".into()),
        ("traceOn", "true".into()),
        ("autoCreateTopicEnable", "true".into()),
        ("defaultTopicQueueNums", "4".into()),
        ("sendMessageThreadPoolNums", send.to_string()),
        ("sendThreadPoolQueueCapacity", "10000".into()),
        ("pullMessageThreadPoolNums", (16 + 2 * cpus).to_string()),
        ("pullThreadPoolQueueCapacity", "100000".into()),
        ("heartbeatThreadPoolNums", cpus.min(32).to_string()),
        ("heartbeatThreadPoolQueueCapacity", "50000".into()),
        ("endTransactionThreadPoolNums", end_tx.to_string()),
        ("endTransactionPoolQueueSize", "100000".into()),
        ("adminBrokerThreadPoolNums", "16".into()),
        // 4.x's admin pool has an unbounded queue; we keep 5.x's bound for every profile.
        ("adminBrokerThreadPoolQueueCapacity", "10000".into()),
        ("brokerFastFailureEnable", "true".into()),
        ("waitTimeMillsInSendQueue", "200".into()),
        ("waitTimeMillsInPullQueue", "5000".into()),
        ("waitTimeMillsInHeartbeatQueue", "31000".into()),
        ("waitTimeMillsInTransactionQueue", "3000".into()),
        ("serverChannelMaxIdleTimeSeconds", "120".into()),
        ("maxConnections", "1024".into()),
        ("useReentrantLockWhenPutMessage", (!old).to_string()),
        ("flushDiskType", "ASYNC_FLUSH".into()),
        ("mappedFileSizeCommitLog", (1u64 << 30).to_string()),
        ("maxMessageSize", (4 * 1024 * 1024).to_string()),
        ("flushIntervalCommitLog", "500".into()),
        ("flushCommitLogLeastPages", "4".into()),
        ("flushCommitLogThoroughInterval", "10000".into()),
        ("flushCommitLogTimed", (!old).to_string()),
        ("commitIntervalCommitLog", "200".into()),
        ("commitCommitLogLeastPages", "4".into()),
        ("commitCommitLogThoroughInterval", "200".into()),
        ("syncFlushTimeout", "5000".into()),
        ("osPageCacheBusyTimeOutMills", "1000".into()),
        ("transientStorePoolEnable", "false".into()),
        ("transientStorePoolSize", "5".into()),
        ("fastFailIfNoBufferInStorePool", "false".into()),
        ("injectPutStallMillis", "0".into()),
        ("injectPutStallIntervalMillis", "0".into()),
        ("injectAppendDelayMicros", "0".into()),
        ("injectFlushStallMillis", "0".into()),
    ];
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Parses RocketMQ's properties format: `key=value` (or `key:value`, `key value`), `#` and `!`
/// comments, surrounding whitespace trimmed. Continuation lines are not supported.
pub fn parse_properties(text: &str, origin: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let split = line
            .find(['=', ':'])
            .or_else(|| line.find(char::is_whitespace));
        let Some(pos) = split else {
            return Err(ConfigError::Syntax {
                path: origin.to_owned(),
                line: i + 1,
                text: raw.to_owned(),
            });
        };
        let key = line[..pos].trim();
        let value = line[pos + 1..].trim();
        if key.is_empty() {
            return Err(ConfigError::Syntax {
                path: origin.to_owned(),
                line: i + 1,
                text: raw.to_owned(),
            });
        }
        out.push((key.to_owned(), value.to_owned()));
    }
    Ok(out)
}

/// Splits a `--set key=value` argument.
pub fn parse_override(arg: &str) -> Result<(String, String), ConfigError> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(ConfigError::Syntax {
            path: "--set".into(),
            line: 0,
            text: arg.to_owned(),
        }),
    }
}

struct Reader<'a> {
    map: &'a BTreeMap<String, String>,
}

impl Reader<'_> {
    fn raw(&self, key: &str) -> &str {
        // Every key read here is present in `defaults`, which seeds the map.
        self.map.get(key).map(String::as_str).unwrap_or("")
    }

    fn get<T: FromStr>(&self, key: &str) -> Result<T, ConfigError>
    where
        T::Err: fmt::Display,
    {
        let raw = self.raw(key);
        raw.parse::<T>().map_err(|e| ConfigError::BadValue {
            key: key.to_owned(),
            value: raw.to_owned(),
            reason: e.to_string(),
        })
    }

    /// Java's `Boolean.parseBoolean` accepts anything (non-"true" is false); we are stricter so
    /// that a typo does not silently switch a mode.
    fn bool(&self, key: &str) -> Result<bool, ConfigError> {
        match self.raw(key).to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(ConfigError::BadValue {
                key: key.to_owned(),
                value: other.to_owned(),
                reason: "expected true or false".into(),
            }),
        }
    }

    fn positive(&self, key: &str) -> Result<usize, ConfigError> {
        let v: usize = self.get(key)?;
        if v == 0 {
            return Err(ConfigError::BadValue {
                key: key.to_owned(),
                value: "0".into(),
                reason: "must be at least 1".into(),
            });
        }
        Ok(v)
    }

    fn millis(&self, key: &str) -> Result<Duration, ConfigError> {
        Ok(Duration::from_millis(self.get::<u64>(key)?))
    }
}

impl BrokerConfig {
    /// Loads `sources` for the profile they select; keys set explicitly always win over the
    /// profile's defaults.
    pub fn load(sources: &ConfigSources) -> Result<Loaded, ConfigError> {
        let mut explicit: Vec<(String, String)> = Vec::new();
        if let Some(path) = &sources.file {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?;
            explicit.extend(parse_properties(&text, &path.display().to_string())?);
        }
        explicit.extend(sources.overrides.iter().cloned());
        Self::from_pairs(&explicit)
    }

    /// Builds a configuration from explicit `key=value` pairs (later pairs win).
    pub fn from_pairs(explicit: &[(String, String)]) -> Result<Loaded, ConfigError> {
        let mut set: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in explicit {
            set.insert(k.clone(), v.clone());
        }
        let profile = match set.get("brokerVersionProfile") {
            Some(v) => v.parse().map_err(|reason| ConfigError::BadValue {
                key: "brokerVersionProfile".into(),
                value: v.clone(),
                reason,
            })?,
            None => VersionProfile::V5_3,
        };
        let send_threads = match set.get("sendMessageThreadPoolNums") {
            Some(v) => Some(v.parse::<usize>().map_err(|e| ConfigError::BadValue {
                key: "sendMessageThreadPoolNums".into(),
                value: v.clone(),
                reason: e.to_string(),
            })?),
            None => None,
        };
        let mut effective = defaults(profile, send_threads);
        let mut warnings = Vec::new();
        for (k, v) in set {
            if let Some(slot) = effective.get_mut(&k) {
                *slot = v;
            } else {
                warnings.push(format!(
                    "unknown configuration key {k} (value {v:?}) ignored"
                ));
            }
        }
        let config = Self::from_effective(profile, effective)?;
        config.validate()?;
        warnings.extend(config.sanitize());
        Ok(Loaded { config, warnings })
    }

    fn from_effective(
        profile: VersionProfile,
        effective: BTreeMap<String, String>,
    ) -> Result<Self, ConfigError> {
        let r = Reader { map: &effective };
        let broker_ip: IpAddr = r.get("brokerIP1")?;
        let broker_role: BrokerRole = r.get("brokerRole")?;
        let flush_disk_type = match r.raw("flushDiskType") {
            "ASYNC_FLUSH" => FlushDiskType::AsyncFlush,
            "SYNC_FLUSH" => FlushDiskType::SyncFlush,
            other => {
                return Err(ConfigError::BadValue {
                    key: "flushDiskType".into(),
                    value: other.into(),
                    reason: "expected ASYNC_FLUSH or SYNC_FLUSH".into(),
                })
            }
        };
        let pool_enable = r.bool("transientStorePoolEnable")?;
        // §5: the pool is only in effect under the selected release's conditions.
        let pool_in_effect = pool_enable
            && broker_role != BrokerRole::Slave
            && (profile == VersionProfile::V5_3 || flush_disk_type == FlushDiskType::AsyncFlush);
        let store = StoreConfig {
            store_path_root_dir: PathBuf::from(r.raw("storePathRootDir")),
            mapped_file_size_commit_log: r.get("mappedFileSizeCommitLog")?,
            flush_disk_type,
            flush_interval_commit_log: r.get("flushIntervalCommitLog")?,
            flush_commit_log_least_pages: r.get("flushCommitLogLeastPages")?,
            flush_commit_log_thorough_interval: r.get("flushCommitLogThoroughInterval")?,
            flush_commit_log_timed: r.bool("flushCommitLogTimed")?,
            commit_interval_commit_log: r.get("commitIntervalCommitLog")?,
            commit_commit_log_least_pages: r.get("commitCommitLogLeastPages")?,
            commit_commit_log_thorough_interval: r.get("commitCommitLogThoroughInterval")?,
            sync_flush_timeout: r.get("syncFlushTimeout")?,
            os_page_cache_busy_timeout_mills: r.get("osPageCacheBusyTimeOutMills")?,
            transient_store_pool_in_effect: pool_in_effect,
            transient_store_pool_size: r.get("transientStorePoolSize")?,
            fast_fail_if_no_buffer_in_store_pool: r.bool("fastFailIfNoBufferInStorePool")?,
            max_message_size: r.get("maxMessageSize")?,
            put_lock: if r.bool("useReentrantLockWhenPutMessage")? {
                PutLockKind::Reentrant
            } else {
                PutLockKind::Spin
            },
            // Before 4.9.1 there is no pre-encoder: the record is built inside the put lock.
            encode_inside_lock: profile == VersionProfile::V4_3,
            store_host: SocketAddr::new(broker_ip, 0),
            injection: FaultInjection {
                put_stall_millis: r.get("injectPutStallMillis")?,
                put_stall_interval_millis: r.get("injectPutStallIntervalMillis")?,
                append_delay_micros: r.get("injectAppendDelayMicros")?,
                flush_stall_millis: r.get("injectFlushStallMillis")?,
            },
        };
        Ok(BrokerConfig {
            profile,
            listen_port: r.get("listenPort")?,
            broker_ip,
            store_path_root_dir: PathBuf::from(r.raw("storePathRootDir")),
            broker_name: r.raw("brokerName").to_owned(),
            broker_cluster_name: r.raw("brokerClusterName").to_owned(),
            broker_role,
            region_id: r.raw("regionId").to_owned(),
            trace_on: r.bool("traceOn")?,
            auto_create_topic_enable: r.bool("autoCreateTopicEnable")?,
            default_topic_queue_nums: r.get("defaultTopicQueueNums")?,
            send_threads: r.positive("sendMessageThreadPoolNums")?,
            send_queue_capacity: r.positive("sendThreadPoolQueueCapacity")?,
            pull_threads: r.positive("pullMessageThreadPoolNums")?,
            pull_queue_capacity: r.positive("pullThreadPoolQueueCapacity")?,
            heartbeat_threads: r.positive("heartbeatThreadPoolNums")?,
            heartbeat_queue_capacity: r.positive("heartbeatThreadPoolQueueCapacity")?,
            end_transaction_threads: r.positive("endTransactionThreadPoolNums")?,
            end_transaction_queue_capacity: r.positive("endTransactionPoolQueueSize")?,
            admin_threads: r.positive("adminBrokerThreadPoolNums")?,
            admin_queue_capacity: r.positive("adminBrokerThreadPoolQueueCapacity")?,
            broker_fast_failure_enable: r.bool("brokerFastFailureEnable")?,
            wait_time_send_queue: r.millis("waitTimeMillsInSendQueue")?,
            wait_time_pull_queue: r.millis("waitTimeMillsInPullQueue")?,
            wait_time_heartbeat_queue: r.millis("waitTimeMillsInHeartbeatQueue")?,
            wait_time_transaction_queue: r.millis("waitTimeMillsInTransactionQueue")?,
            server_channel_max_idle: Duration::from_secs(r.get("serverChannelMaxIdleTimeSeconds")?),
            max_connections: r.positive("maxConnections")?,
            store,
            effective,
        })
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
        w
    }

    /// Fails on contradictions a real broker would only discover at run time.
    pub fn validate(&self) -> Result<(), ConfigError> {
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
        ];
        pairs.extend(
            overrides
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        Ok(Self::from_pairs(&pairs)?.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(pairs: &[(&str, &str)]) -> Result<Loaded, ConfigError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        BrokerConfig::from_pairs(&pairs)
    }

    #[test]
    fn properties_format_trims_and_skips_comments() {
        let text = "# comment\n! also\n\n  listenPort = 0  \nbrokerName:b1\nregionId R1\n";
        let pairs = parse_properties(text, "t").unwrap();
        assert_eq!(
            pairs,
            vec![
                ("listenPort".into(), "0".into()),
                ("brokerName".into(), "b1".into()),
                ("regionId".into(), "R1".into()),
            ]
        );
        assert!(matches!(
            parse_properties("=x", "t"),
            Err(ConfigError::Syntax { line: 1, .. })
        ));
    }

    #[test]
    fn profile_defaults_differ_where_rocketmq_does() {
        let old = load(&[("brokerVersionProfile", "4.3")]).unwrap().config;
        assert_eq!(old.send_threads, 1);
        assert_eq!(old.store.put_lock, PutLockKind::Spin);
        assert!(!old.store.flush_commit_log_timed);
        assert!(old.store.encode_inside_lock);
        let new = load(&[]).unwrap().config;
        assert_eq!(new.profile, VersionProfile::V5_3);
        assert_eq!(new.send_threads, cpus().min(4));
        assert_eq!(new.store.put_lock, PutLockKind::Reentrant);
        assert!(new.store.flush_commit_log_timed);
        assert_eq!(
            new.end_transaction_threads,
            (8 + 2 * cpus()).max(4 * new.send_threads)
        );
    }

    #[test]
    fn explicit_keys_win_over_profile_defaults() {
        let c = load(&[
            ("brokerVersionProfile", "4.3"),
            ("useReentrantLockWhenPutMessage", "true"),
            ("sendMessageThreadPoolNums", "8"),
            ("flushCommitLogTimed", "true"),
        ])
        .unwrap()
        .config;
        assert_eq!(c.store.put_lock, PutLockKind::Reentrant);
        assert_eq!(c.send_threads, 8);
        assert!(c.store.flush_commit_log_timed);
        assert_eq!(c.effective["sendMessageThreadPoolNums"], "8");
    }

    #[test]
    fn unknown_keys_warn_and_bad_values_name_key_and_value() {
        let l = load(&[("noSuchKey", "1")]).unwrap();
        assert!(l.warnings[0].contains("noSuchKey"));
        let err = load(&[("listenPort", "abc")]).unwrap_err().to_string();
        assert!(err.contains("listenPort") && err.contains("abc"), "{err}");
        let err = load(&[("flushDiskType", "SOMETIMES")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("flushDiskType") && err.contains("SOMETIMES"));
        let err = load(&[("brokerVersionProfile", "6.0")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("brokerVersionProfile") && err.contains("6.0"));
    }

    #[test]
    fn contradictions_fail_validation() {
        assert!(matches!(
            load(&[
                ("mappedFileSizeCommitLog", "1048576"),
                ("maxMessageSize", "4194304")
            ]),
            Err(ConfigError::Contradiction(_))
        ));
    }

    #[test]
    fn transient_pool_conditions_follow_the_profile() {
        let on = |profile: &str, flush: &str, role: &str| {
            load(&[
                ("brokerVersionProfile", profile),
                ("transientStorePoolEnable", "true"),
                ("flushDiskType", flush),
                ("brokerRole", role),
            ])
            .unwrap()
            .config
            .store
            .transient_store_pool_in_effect
        };
        assert!(on("4.9", "ASYNC_FLUSH", "ASYNC_MASTER"));
        assert!(!on("4.9", "SYNC_FLUSH", "ASYNC_MASTER"));
        assert!(on("5.3", "SYNC_FLUSH", "SYNC_MASTER"));
        assert!(!on("5.3", "ASYNC_FLUSH", "SLAVE"));
    }

    #[test]
    fn ineffective_settings_warn() {
        let l = load(&[
            ("brokerVersionProfile", "4.9"),
            ("transientStorePoolEnable", "true"),
            ("flushDiskType", "SYNC_FLUSH"),
        ])
        .unwrap();
        assert!(
            l.warnings.iter().any(|w| w.contains("no effect")),
            "{:?}",
            l.warnings
        );
        assert!(load(&[]).unwrap().warnings.is_empty());
    }

    #[test]
    fn render_lists_every_key_sorted() {
        let c = load(&[("listenPort", "0")]).unwrap().config;
        let text = c.render();
        let keys: Vec<&str> = text.lines().map(|l| l.split('=').next().unwrap()).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert!(text.contains("listenPort=0\n"));
        assert!(text.contains("brokerVersionProfile=5.3\n"));
    }
}
