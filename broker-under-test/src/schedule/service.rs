//! ScheduleMessageService (reference B4.3–B4.5): one pass over every level each round, on one
//! named thread `ScheduleMessageTimerThread`, every 100 ms (4.9.3+ and 5.3: a level whose next
//! message is not due, or whose queue is drained, is looked at again 100 ms later). The offsets
//! are written to `config/delayOffset.json` every `flushDelayOffsetInterval` by
//! `ScheduleMessageServicePersistThread` and at a clean stop (4.9/5.3; 4.3 only periodically).
//!
//! A re-put the store refuses (disk full, say) stops the level's round; 4.9.3+ and 5.3 look at
//! the level again 100 ms later, 4.3 only after `DELAY_FOR_A_PERIOD`, 10 s (4.3.2
//! `DeliverDelayedMessageTimerTask.executeOnTimeup` l.292-304; 4.9.8 l.455-458 and 5.3.3
//! l.476-479 use `DELAY_FOR_A_WHILE`).
//!
//! Differences from RocketMQ: one thread serves all levels (4.9.3+ runs a pool of one thread per
//! level; the per-level order and cadence are the same, a slow re-put delays the other levels);
//! 4.3's exact countdown to the next due message is replaced by the 100 ms poll;
//! the consume-queue slot holds the TAGS hash, not the deliver time, so the deliver time is
//! computed from the record (store time + level delay), which is RocketMQ's own fallback when
//! the slot cannot be used.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use remoting::message::{
    decode_properties, decode_records, encode_properties, offset_msg_id, property,
    PROPERTY_DELAY_TIME_LEVEL, PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC,
    PROPERTY_WAIT_STORE_MSG_OK,
};

use super::levels::{DelayLevels, SCHEDULE_TOPIC};
use super::offsets::{DelayOffsets, UPDATE_VERSION_STEP};
use super::stats::RetryStats;
use crate::clock::epoch_millis;
use crate::consumer::{ConfigFile, ConfigFileError};
use crate::keys::VersionProfile;
use crate::periodic::Periodic;
use crate::store::{GetMessageStatus, MessageStore, PutMessage, PutMessageStatus};

/// The 4.9.3+ poll period of a level.
pub const DELIVER_PERIOD: Duration = Duration::from_millis(100);
/// 4.3's `DELAY_FOR_A_PERIOD`: how long a level rests after a failed re-put.
pub const FAILED_REPUT_REST_4_3: Duration = Duration::from_millis(10_000);

/// TopicValidator.RMQ_SYS_TRANS_HALF_TOPIC.
const TRANS_HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
/// 5.3 also strips the timer properties from a re-put message.
const TIMER_PROPERTIES: [&str; 2] = ["TIMER_DELIVER_MS", "TIMER_DELAY_SEC"];

/// Offsets and 5.3's version, behind one lock taken briefly by the delivery thread (per
/// message), the persist thread and runtime info.
#[derive(Debug, Default)]
struct State {
    offsets: BTreeMap<i32, i64>,
    updates: u64,
    counter: i64,
    /// 4.3: a level whose re-put failed is not looked at before this epoch millisecond.
    rest_until: BTreeMap<i32, i64>,
}

pub struct ScheduleService {
    pub levels: DelayLevels,
    store: Arc<MessageStore>,
    profile: VersionProfile,
    file: ConfigFile,
    state: Mutex<State>,
    pub stats: RetryStats,
}

/// The two threads; stopping joins both and writes the offsets a last time (not 4.3).
pub struct ScheduleThreads {
    deliver: Periodic,
    persist: Periodic,
    service: Arc<ScheduleService>,
}

impl ScheduleThreads {
    pub fn stop(&mut self) {
        self.deliver.stop();
        self.persist.stop();
        if self.service.profile != VersionProfile::V4_3 {
            if let Err(e) = self.service.persist() {
                eprintln!("delayOffset.json: {e}");
            }
        }
    }
}

impl ScheduleService {
    /// A service whose offsets live in `config_dir/delayOffset.json`; call [`Self::load`] first.
    pub fn new(
        levels: DelayLevels,
        store: Arc<MessageStore>,
        profile: VersionProfile,
        config_dir: &std::path::Path,
    ) -> Self {
        ScheduleService {
            levels,
            store,
            profile,
            file: ConfigFile::new(config_dir.join("delayOffset.json")),
            state: Mutex::new(State::default()),
            stats: RetryStats::default(),
        }
    }

    /// Loads delayOffset.json; 4.9.x+ and 5.3 clamp each offset into the level queue's
    /// [min, max]. Returns a line for the log.
    pub fn load(&self) -> Result<String, ConfigFileError> {
        let (found, note) = match self.file.load_logged(DelayOffsets::decode)? {
            Ok(found) => found,
            Err(fresh) => return Ok(fresh),
        };
        let mut st = self.state.lock();
        for (level, offset) in found.table {
            let offset = if self.profile == VersionProfile::V4_3 {
                offset
            } else {
                let min = self.store.min_offset_in_queue(SCHEDULE_TOPIC, level - 1);
                let max = self.store.max_offset_in_queue(SCHEDULE_TOPIC, level - 1);
                offset.clamp(min, max.max(min))
            };
            st.offsets.insert(level, offset);
        }
        st.counter = found.data_version.map_or(0, |v| v.0);
        Ok(format!("loaded {} delay offsets{note}", st.offsets.len()))
    }

    /// GET_ALL_DELAY_OFFSET's body: delayOffset.json as last written, None without one (4.9.8
    /// AdminBrokerProcessor.getAllDelayOffset reads the file, and answers SYSTEM_ERROR
    /// without it).
    pub fn file_content(&self) -> Option<String> {
        std::fs::read_to_string(self.file.path()).ok()
    }

    /// SlaveSynchronize.syncDelayOffset: the master's delayOffset.json written as this
    /// broker's file (`MixAll.string2File`), not loaded: a slave runs no schedule service.
    pub fn write_from_master(&self, content: &str) -> Result<(), ConfigFileError> {
        self.file.persist(content)
    }

    /// Writes delayOffset.json (every period, whether or not it changed, as ConfigManager does).
    pub fn persist(&self) -> Result<(), ConfigFileError> {
        let content = {
            let st = self.state.lock();
            DelayOffsets {
                table: st.offsets.clone(),
                data_version: (self.profile == VersionProfile::V5_3)
                    .then(|| (st.counter, epoch_millis())),
            }
            .encode()
        };
        self.file.persist(&content)
    }

    /// Starts the delivery thread (first round after 1 s, RocketMQ's first delay) and the
    /// persist thread.
    pub fn start(self: &Arc<Self>, flush_interval: Duration) -> std::io::Result<ScheduleThreads> {
        let s = self.clone();
        let deliver = Periodic::start(
            "ScheduleMessageTimerThread",
            Duration::from_millis(1000),
            DELIVER_PERIOD,
            move || s.deliver_due(),
        )?;
        let s = self.clone();
        let persist = Periodic::start(
            "ScheduleMessageServicePersistThread",
            flush_interval,
            flush_interval,
            move || {
                if let Err(e) = s.persist() {
                    eprintln!("delayOffset.json: {e}");
                }
            },
        )?;
        Ok(ScheduleThreads {
            deliver,
            persist,
            service: self.clone(),
        })
    }

    fn offset(&self, level: i32) -> i64 {
        self.state.lock().offsets.get(&level).copied().unwrap_or(0)
    }

    fn set_offset(&self, level: i32, offset: i64) {
        let mut st = self.state.lock();
        st.offsets.insert(level, offset);
        st.updates += 1;
        if st.updates.is_multiple_of(UPDATE_VERSION_STEP) {
            st.counter += 1;
        }
    }

    /// One round: every level's due messages, in queue order.
    pub fn deliver_due(&self) {
        for level in 1..=self.levels.max_level() {
            self.deliver_level(level);
        }
    }

    fn deliver_level(&self, level: i32) {
        if self.profile == VersionProfile::V4_3 {
            let rest_until = self.state.lock().rest_until.get(&level).copied();
            if rest_until.is_some_and(|t| epoch_millis() < t) {
                return;
            }
        }
        let queue_id = level - 1;
        let max = self.store.max_offset_in_queue(SCHEDULE_TOPIC, queue_id);
        let start = self.offset(level);
        if start >= max {
            return;
        }
        let mut offset = start;
        let min = self.store.min_offset_in_queue(SCHEDULE_TOPIC, queue_id);
        if offset < min {
            eprintln!(
                "schedule CQ offset invalid. offset={offset}, cqMinOffset={min}, queueId={queue_id}"
            );
            offset = min;
        }
        let delay = self.levels.delay_millis(level).unwrap_or(1000);
        while offset < max {
            let got = self
                .store
                .get_message(SCHEDULE_TOPIC, queue_id, offset, 1, usize::MAX);
            let record = match got.status {
                GetMessageStatus::Found => decode_records(&got.body)
                    .ok()
                    .and_then(|mut v| (!v.is_empty()).then(|| v.swap_remove(0))),
                _ => None,
            };
            let Some(record) = record else {
                // The record is gone: skipped, as RocketMQ skips a failed lookup.
                offset += 1;
                continue;
            };
            let now = epoch_millis();
            let mut deliver_at = self.levels.deliver_timestamp(level, record.store_timestamp);
            if deliver_at > now + delay {
                // The clock went back: deliver now (correctDeliverTimestamp).
                deliver_at = now;
            }
            if deliver_at > now {
                break;
            }
            let real_topic = property(&record.properties, PROPERTY_REAL_TOPIC).map(str::to_owned);
            if real_topic.as_deref() == Some(TRANS_HALF_TOPIC)
                && self.profile != VersionProfile::V4_3
            {
                eprintln!(
                    "[BUG] the real topic of schedule msg is {TRANS_HALF_TOPIC}, discard the msg. msg={}",
                    offset_msg_id(record.store_host, record.physical_offset)
                );
                offset += 1;
                continue;
            }
            let msg = self.rebuild(&record, real_topic);
            match self.put(msg) {
                PutMessageStatus::PutOk => {
                    self.stats.delivered.fetch_add(1, Ordering::Relaxed);
                    offset += 1;
                    self.set_offset(level, offset);
                }
                _ => {
                    self.stats.deliver_failed.fetch_add(1, Ordering::Relaxed);
                    eprintln!(
                        "ScheduleMessageService, a message time up, but reput it failed, topic: {} msgId {}",
                        record.topic,
                        offset_msg_id(record.store_host, record.physical_offset)
                    );
                    if self.profile == VersionProfile::V4_3 {
                        let until = epoch_millis() + FAILED_REPUT_REST_4_3.as_millis() as i64;
                        self.state.lock().rest_until.insert(level, until);
                    }
                    break;
                }
            }
        }
        if offset != start {
            self.set_offset(level, offset);
        }
    }

    /// messageTimeup (B4.4): the record back to its real topic and queue, without DELAY, with
    /// WAIT=false; REAL_TOPIC and REAL_QID stay.
    fn rebuild(
        &self,
        r: &remoting::message::MessageRecord,
        real_topic: Option<String>,
    ) -> PutMessage {
        let strip_timer = !self.profile.is_4x();
        let mut pairs: Vec<(String, String)> = decode_properties(&r.properties)
            .into_iter()
            .filter(|(k, _)| {
                k != PROPERTY_DELAY_TIME_LEVEL
                    && k != PROPERTY_WAIT_STORE_MSG_OK
                    && !(strip_timer && TIMER_PROPERTIES.contains(&k.as_str()))
            })
            .collect();
        pairs.push((PROPERTY_WAIT_STORE_MSG_OK.into(), "false".into()));
        let queue_id = property(&r.properties, PROPERTY_REAL_QUEUE_ID)
            .and_then(|q| q.parse().ok())
            .unwrap_or(0);
        PutMessage {
            topic: real_topic.unwrap_or_else(|| r.topic.clone()),
            queue_id,
            flag: r.flag,
            body: r.body.clone().into(),
            properties: encode_properties(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
            sys_flag: r.sys_flag,
            born_timestamp: r.born_timestamp,
            born_host: r.born_host,
            reconsume_times: r.reconsume_times,
            wait_store_ok: false,
        }
    }

    /// A put through the store's public API, waited for (WAIT=false: answered at once).
    fn put(&self, msg: PutMessage) -> PutMessageStatus {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.store.put_message(
            msg,
            Box::new(move |r| {
                let _ = tx.send(r.status);
            }),
        );
        rx.recv().unwrap_or(PutMessageStatus::UnknownError)
    }

    /// `scheduleMessageOffset_<level>` = `<delayOffset>,<maxOffset>` per level in the table
    /// (RocketMQ's), the summed backlog (ours) and the counters.
    pub fn runtime_info(&self) -> Vec<(String, String)> {
        let offsets = self.state.lock().offsets.clone();
        let mut out = Vec::new();
        let mut backlog = 0;
        for (level, offset) in offsets {
            let max = self.store.max_offset_in_queue(SCHEDULE_TOPIC, level - 1);
            backlog += (max - offset).max(0);
            out.push((
                format!("scheduleMessageOffset_{level}"),
                format!("{offset},{max}"),
            ));
        }
        // Levels with messages but no offset yet (nothing delivered) count from 0.
        for level in 1..=self.levels.max_level() {
            if !out
                .iter()
                .any(|(k, _)| k == &format!("scheduleMessageOffset_{level}"))
            {
                backlog += self.store.max_offset_in_queue(SCHEDULE_TOPIC, level - 1);
            }
        }
        out.push(("scheduleMessageBacklog".into(), backlog.to_string()));
        out.extend(self.stats.runtime_info());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys;
    use crate::store::StoreConfig;
    use remoting::message::encode_properties;

    /// Audit #14 (fidelity-after-wave-3): after a re-put the store refuses, a 4.3 level rests
    /// 10 s (one attempt), where 4.9 and 5.3 try again on every round. The refusal here is the
    /// real topic's: 200 bytes, over the store's limit.
    #[test]
    fn a_failed_re_put_rests_the_level_10_s_on_4_3_only() {
        for (profile, attempts_after) in [
            (VersionProfile::V4_3, 1),
            (VersionProfile::V4_9, 6),
            (VersionProfile::V5_3, 6),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let mut cfg = StoreConfig::from_keys(&keys::defaults(profile, None)).unwrap();
            cfg.store_path_root_dir = dir.path().join("store");
            cfg.mapped_file_size_commit_log = 64 * 1024;
            let store = MessageStore::open(cfg).unwrap();
            let long = "T".repeat(200);
            let props = encode_properties([
                (PROPERTY_REAL_TOPIC, long.as_str()),
                (PROPERTY_REAL_QUEUE_ID, "0"),
                (PROPERTY_DELAY_TIME_LEVEL, "1"),
            ]);
            let (tx, rx) = std::sync::mpsc::channel();
            store.put_message(
                PutMessage {
                    topic: SCHEDULE_TOPIC.into(),
                    queue_id: 0,
                    flag: 0,
                    body: bytes::Bytes::from_static(b"x"),
                    properties: props,
                    sys_flag: 0,
                    born_timestamp: 0,
                    born_host: "127.0.0.1:1".parse().unwrap(),
                    reconsume_times: 0,
                    wait_store_ok: false,
                },
                Box::new(move |r| {
                    let _ = tx.send(r.status);
                }),
            );
            assert_eq!(rx.recv().unwrap(), PutMessageStatus::PutOk);
            let service = ScheduleService::new(DelayLevels::default(), store, profile, dir.path());
            // Level 1 is due 1 s after the store time: rounds until the first attempt.
            let failed = || service.stats.deliver_failed.load(Ordering::Relaxed);
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while failed() == 0 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{profile:?}: never due"
                );
                service.deliver_due();
                std::thread::sleep(DELIVER_PERIOD / 10);
            }
            for _ in 0..5 {
                service.deliver_due();
            }
            assert_eq!(failed(), attempts_after, "{profile:?}");
            assert_eq!(service.offset(1), 0, "{profile:?}: the message stays");
        }
    }
}
