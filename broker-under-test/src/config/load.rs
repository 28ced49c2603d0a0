//! Loading: defaults, explicit keys (file, then `--set`), checks against the key table, typed
//! parsing, validation and sanitizing.

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use super::{
    broker_config::{BrokerConfig, ExecutorSettings},
    error::{did_you_mean, ConfigError},
    properties::{parse_entries, Entry},
};
use crate::{
    keys::{self, Reader, VersionProfile},
    store::StoreConfig,
    task::ExecutorKind,
};

/// Where configuration comes from: a file and `--set` overrides, in order.
#[derive(Debug, Clone, Default)]
pub struct ConfigSources {
    pub file: Option<PathBuf>,
    pub overrides: Vec<(String, String)>,
    /// `--strict`: unknown keys are an error instead of a warning.
    pub strict: bool,
}

/// The result of loading: the configuration plus warnings (unknown keys, clamps) for stderr.
#[derive(Debug)]
pub struct Loaded {
    pub config: BrokerConfig,
    pub warnings: Vec<String>,
}

impl BrokerConfig {
    /// Loads `sources` for the profile they select; keys set explicitly always win over the
    /// profile's defaults.
    pub fn load(sources: &ConfigSources) -> Result<Loaded, ConfigError> {
        let mut explicit: Vec<Entry> = Vec::new();
        if let Some(path) = &sources.file {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?;
            explicit.extend(parse_entries(&text, &path.display().to_string())?);
        }
        explicit.extend(sources.overrides.iter().map(|(k, v)| Entry {
            key: k.clone(),
            value: v.clone(),
            origin: "--set".into(),
        }));
        Self::from_entries(&explicit, sources.strict)
    }

    /// Builds a configuration from explicit `key=value` pairs (later pairs win).
    pub fn from_pairs(explicit: &[(String, String)]) -> Result<Loaded, ConfigError> {
        let entries: Vec<Entry> = explicit
            .iter()
            .map(|(k, v)| Entry {
                key: k.clone(),
                value: v.clone(),
                origin: "(given)".into(),
            })
            .collect();
        Self::from_entries(&entries, false)
    }

    /// Builds a configuration from explicit entries (later entries win); `strict` turns unknown
    /// keys into [`ConfigError::UnknownKey`].
    pub fn from_entries(explicit: &[Entry], strict: bool) -> Result<Loaded, ConfigError> {
        let mut set: BTreeMap<String, (String, String)> = BTreeMap::new();
        for e in explicit {
            set.insert(e.key.clone(), (e.value.clone(), e.origin.clone()));
        }
        // The two keys other defaults depend on are checked first.
        let checked = |key: &str| -> Result<Option<&String>, ConfigError> {
            let Some((value, _)) = set.get(key) else {
                return Ok(None);
            };
            check(key, value)?;
            Ok(Some(value))
        };
        let profile = match checked("brokerVersionProfile")? {
            Some(v) => v.parse().map_err(|reason| ConfigError::BadValue {
                key: "brokerVersionProfile".into(),
                value: v.clone(),
                reason,
            })?,
            None => VersionProfile::V5_3,
        };
        let send_key = ExecutorKind::Send.names().threads_key;
        let send_threads = match checked(send_key)? {
            Some(v) => Some(v.parse::<usize>().map_err(|e| ConfigError::BadValue {
                key: send_key.into(),
                value: v.clone(),
                reason: e.to_string(),
            })?),
            None => None,
        };
        let mut effective = keys::defaults(profile, send_threads);
        let mut warnings = Vec::new();
        for (k, (v, origin)) in set {
            if let Some(slot) = effective.get_mut(&k) {
                *slot = v;
                continue;
            }
            let suggestion = keys::suggest(&k).map(str::to_owned);
            if strict {
                return Err(ConfigError::UnknownKey {
                    key: k,
                    origin,
                    suggestion,
                });
            }
            warnings.push(format!(
                "unknown configuration key {k} (value {v:?}) ignored ({origin}){}",
                did_you_mean(&suggestion)
            ));
        }
        for (k, v) in &effective {
            check(k, v)?;
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
        let mut store = StoreConfig::from_keys(&effective)?;
        // The port is filled in once bound (`store_config`).
        store.store_host.set_port(0);
        let mut executors = [ExecutorSettings::default(); ExecutorKind::COUNT];
        for kind in ExecutorKind::ALL {
            let names = kind.names();
            executors[kind.index()] = ExecutorSettings {
                threads: r.get(names.threads_key)?,
                queue_capacity: r.get(names.queue_key)?,
                wait_limit: names.wait_key.map(|k| r.millis(k)).transpose()?,
            };
        }
        let broker_role = r.get("brokerRole")?;
        let ha = super::ha::HaConfig::from_effective(profile, broker_role, &effective)?;
        Ok(BrokerConfig {
            ha,
            profile,
            listen_port: r.get("listenPort")?,
            broker_ip: r.get("brokerIP1")?,
            store_path_root_dir: PathBuf::from(r.raw("storePathRootDir")),
            broker_name: r.raw("brokerName").to_owned(),
            broker_cluster_name: r.raw("brokerClusterName").to_owned(),
            broker_role,
            region_id: r.raw("regionId").to_owned(),
            trace_on: r.bool("traceOn")?,
            auto_create_topic_enable: r.bool("autoCreateTopicEnable")?,
            default_topic_queue_nums: r.get("defaultTopicQueueNums")?,
            executors,
            broker_fast_failure_enable: r.bool("brokerFastFailureEnable")?,
            server_channel_max_idle: Duration::from_secs(r.get("serverChannelMaxIdleTimeSeconds")?),
            flush_consumer_offset_interval: r.millis("flushConsumerOffsetInterval")?,
            message_delay_level: crate::schedule::DelayLevels::parse(r.raw("messageDelayLevel"))
                .map_err(|reason| ConfigError::BadValue {
                    key: "messageDelayLevel".into(),
                    value: r.raw("messageDelayLevel").to_owned(),
                    reason,
                })?,
            flush_delay_offset_interval: r.millis("flushDelayOffsetInterval")?,
            auto_create_subscription_group: r.bool("autoCreateSubscriptionGroup")?,
            access_message_in_memory_max_ratio: r.get("accessMessageInMemoryMaxRatio")?,
            long_polling_enable: r.bool("longPollingEnable")?,
            short_polling_time: r.millis("shortPollingTimeMills")?,
            max_transfer_in_memory: (
                r.get("maxTransferCountOnMessageInMemory")?,
                r.get("maxTransferBytesOnMessageInMemory")?,
            ),
            max_transfer_on_disk: (
                r.get("maxTransferCountOnMessageInDisk")?,
                r.get("maxTransferBytesOnMessageInDisk")?,
            ),
            channel_expired_timeout: r.millis("channelExpiredTimeout")?,
            rebalance_lock_max_live_time: r.millis("rebalanceLockMaxLiveTime")?,
            acl_enable: r.bool("aclEnable")?,
            rocketmq_home: PathBuf::from(r.raw("rocketmqHome")),
            max_connections: r.get("maxConnections")?,
            store,
            effective,
        })
    }
}

/// Checks one value against its key's type and range.
fn check(key: &str, value: &str) -> Result<(), ConfigError> {
    match keys::find(key) {
        Some(spec) => spec.check(value).map_err(|reason| ConfigError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}
