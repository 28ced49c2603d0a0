//! Every broker key, once: RocketMQ's BrokerConfig, MessageStoreConfig and NettyServerConfig
//! keys of the send path with the defaults of each release (reference §4.1, §5, §9.1), and our
//! own keys. Defaults, `-p`, validation, `StoreConfig::default`, `--list-keys` and the README's
//! key table are all derived from [`KEYS`].

use super::{
    ha::HA,
    retention::RETENTION,
    spec::{
        concat, int, key, ours, DefaultEnv,
        DefaultRule::{Computed, Fixed, PerProfile},
        KeySpec, KeyType,
        KeyType::{Bool, Enum, Ip, Path, Str},
        Unit,
    },
    version::VersionProfile,
};
use crate::task::ExecutorKind;

const THREADS: KeyType = int(Unit::Threads, 1, 1024);
const QUEUE: KeyType = int(Unit::Count, 1, 10_000_000);
/// Up to a day: every wait, interval and stall.
const MILLIS: KeyType = int(Unit::Millis, 0, 86_400_000);
const INTERVAL: KeyType = int(Unit::Millis, 1, 86_400_000);
const PAGES: KeyType = int(Unit::Count, 0, 1_000_000);
/// The store's own bound: sizes travel as Java ints.
const I32_BYTES_MAX: i64 = i32::MAX as i64;

/// The key names of one executor, from [`ExecutorKind`].
const fn threads_key(kind: ExecutorKind) -> &'static str {
    kind.names().threads_key
}
const fn queue_key(kind: ExecutorKind) -> &'static str {
    kind.names().queue_key
}
const fn wait_key(kind: ExecutorKind) -> &'static str {
    match kind.names().wait_key {
        Some(k) => k,
        None => panic!("this executor has no wait limit"),
    }
}

pub fn cpus() -> usize {
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

fn store_root(_: &DefaultEnv) -> String {
    let home = std::env::var("HOME").unwrap_or_else(|_| ".".into());
    format!("{home}/store")
}

/// BrokerConfig.rocketmqHome: `-Drocketmq.home.dir`, else the environment's ROCKETMQ_HOME.
fn rocketmq_home(_: &DefaultEnv) -> String {
    std::env::var("ROCKETMQ_HOME").unwrap_or_default()
}

fn broker_name(_: &DefaultEnv) -> String {
    host_name()
}

/// 4.3: one send thread; 4.9.1+: `min(cpus, 4)`.
pub fn send_threads_default(env: &DefaultEnv) -> usize {
    if env.profile == VersionProfile::V4_3 {
        1
    } else {
        env.cpus.min(4)
    }
}

fn send_threads(env: &DefaultEnv) -> String {
    send_threads_default(env).to_string()
}

/// 4.9.1+ raised it to at least four per send thread.
fn end_transaction_threads(env: &DefaultEnv) -> String {
    let base = 8 + 2 * env.cpus;
    if env.profile == VersionProfile::V4_3 {
        return base.to_string();
    }
    let send = env
        .send_threads
        .unwrap_or_else(|| send_threads_default(env));
    base.max(4 * send).to_string()
}

fn pull_threads(env: &DefaultEnv) -> String {
    (16 + 2 * env.cpus).to_string()
}

fn heartbeat_threads(env: &DefaultEnv) -> String {
    env.cpus.min(32).to_string()
}

fn profile_name(env: &DefaultEnv) -> String {
    env.profile.to_string()
}

/// Every key, in the README's order: the send path's, then retention's (`retention.rs`), then
/// replication's (`ha.rs`), kept apart so that no file grows past a screenful of keys.
pub const KEYS: &[KeySpec] = &ALL;

const STORE: [KeySpec; SEND_PATH.len() + RETENTION.len()] = concat(SEND_PATH, &RETENTION);
const ALL: [KeySpec; STORE.len() + HA.len()] = concat(&STORE, &HA);

const SEND_PATH: &[KeySpec] = &[
    ours(
        "brokerVersionProfile",
        Enum(&["4.3", "4.9", "5.3"]),
        Computed {
            value: profile_name,
            formula: ["4.3", "4.9", "5.3"],
        },
        "ours: the release imitated where behaviour or defaults differ; 5.3 when unset",
    ),
    key(
        threads_key(ExecutorKind::Send),
        THREADS,
        Computed {
            value: send_threads,
            formula: ["1", "min(cpus, 4)", "min(cpus, 4)"],
        },
        "send executor threads",
    ),
    key(
        "useReentrantLockWhenPutMessage",
        Bool,
        PerProfile(["false", "true", "true"]),
        "put lock: false = spin lock (CAS busy loop), true = reentrant lock (waiters park)",
    ),
    key(
        "flushCommitLogTimed",
        Bool,
        PerProfile(["false", "true", "true"]),
        "flush thread: true = plain sleep, false = wake-able wait",
    ),
    key(
        threads_key(ExecutorKind::EndTransaction),
        int(Unit::Threads, 1, 4096),
        Computed {
            value: end_transaction_threads,
            formula: [
                "8 + 2·cpus",
                "max(8 + 2·cpus, 4·send threads)",
                "max(8 + 2·cpus, 4·send threads)",
            ],
        },
        "end-transaction executor threads; in 4.3 code 37 runs on the send pool",
    ),
    key(
        "listenPort",
        KeyType::Int {
            unit: None,
            min: 0,
            max: 65_535,
        },
        Fixed("10911"),
        "0 = ephemeral",
    ),
    key(
        "brokerIP1",
        Ip,
        Fixed("127.0.0.1"),
        "bind address and store host",
    ),
    key(
        "storePathRootDir",
        Path,
        Computed {
            value: store_root,
            formula: ["`$HOME/store`"; 3],
        },
        "store root: CommitLog and consume queues",
    ),
    key(
        "brokerName",
        Str,
        Computed {
            value: broker_name,
            formula: ["host name"; 3],
        },
        "the broker's name",
    ),
    key(
        "brokerClusterName",
        Str,
        Fixed("DefaultCluster"),
        "stored in every message's CLUSTER property",
    ),
    key(
        "namesrvAddr",
        Str,
        Fixed(""),
        "name servers to register with, `host:port;host:port`; empty = none",
    ),
    key(
        "registerNameServerPeriod",
        int(Unit::Millis, 1000, 60_000),
        Fixed("30000"),
        "period of the forced re-registration (RocketMQ clamps to 10000–60000; 1000 allowed here for tests)",
    ),
    key(
        "registerBrokerTimeoutMills",
        INTERVAL,
        PerProfile(["6000", "6000", "24000"]),
        "timeout of one REGISTER_BROKER call",
    ),
    key(
        "brokerRole",
        Enum(&["ASYNC_MASTER", "SYNC_MASTER", "SLAVE"]),
        Fixed("ASYNC_MASTER"),
        "SLAVE: 5.3 rejects sends (`[REJECTREQUEST]`), 4.x answers 14",
    ),
    key(
        "regionId",
        Str,
        Fixed("DefaultRegion"),
        "returned as MSG_REGION",
    ),
    key("traceOn", Bool, Fixed("true"), "returned as TRACE_ON"),
    key(
        "autoCreateTopicEnable",
        Bool,
        Fixed("true"),
        "create unknown topics on send from the TBW102 template",
    ),
    key(
        "defaultTopicQueueNums",
        int(Unit::Count, 1, 1024),
        Fixed("4"),
        "queues of the TBW102 template topic",
    ),
    key(
        queue_key(ExecutorKind::Send),
        QUEUE,
        Fixed("10000"),
        "send queue capacity; full = `[OVERLOAD]`",
    ),
    key(
        threads_key(ExecutorKind::Pull),
        THREADS,
        Computed {
            value: pull_threads,
            formula: ["16 + 2·cpus"; 3],
        },
        "pull executor threads",
    ),
    key(
        queue_key(ExecutorKind::Pull),
        QUEUE,
        Fixed("100000"),
        "pull queue capacity",
    ),
    key(
        threads_key(ExecutorKind::Heartbeat),
        THREADS,
        Computed {
            value: heartbeat_threads,
            formula: ["min(32, cpus)"; 3],
        },
        "heartbeat executor threads",
    ),
    key(
        queue_key(ExecutorKind::Heartbeat),
        QUEUE,
        Fixed("50000"),
        "heartbeat queue capacity",
    ),
    key(
        queue_key(ExecutorKind::EndTransaction),
        QUEUE,
        Fixed("100000"),
        "end-transaction queue capacity",
    ),
    key(
        threads_key(ExecutorKind::Admin),
        THREADS,
        Fixed("16"),
        "admin executor threads (also consumer offsets)",
    ),
    key(
        queue_key(ExecutorKind::Admin),
        QUEUE,
        Fixed("10000"),
        "admin queue capacity; 4.x's is unbounded, we keep 5.x's bound for every profile",
    ),
    key(
        "brokerFastFailureEnable",
        Bool,
        Fixed("true"),
        "BrokerFastFailure: `[PCBUSY_CLEAN_QUEUE]` and `[TIMEOUT_CLEAN_QUEUE]`",
    ),
    key(
        wait_key(ExecutorKind::Send),
        MILLIS,
        Fixed("200"),
        "send queue wait limit before `[TIMEOUT_CLEAN_QUEUE]`",
    ),
    key(
        wait_key(ExecutorKind::Pull),
        MILLIS,
        Fixed("5000"),
        "pull queue wait limit",
    ),
    key(
        wait_key(ExecutorKind::Heartbeat),
        MILLIS,
        Fixed("31000"),
        "heartbeat queue wait limit",
    ),
    key(
        wait_key(ExecutorKind::EndTransaction),
        MILLIS,
        Fixed("3000"),
        "end-transaction queue wait limit",
    ),
    key(
        "serverChannelMaxIdleTimeSeconds",
        int(Unit::Seconds, 1, 86_400),
        Fixed("120"),
        "idle connections are closed after this long",
    ),
    key(
        "flushConsumerOffsetInterval",
        INTERVAL,
        Fixed("5000"),
        "period of the `config/consumerOffset.json` write (first after min(10 s, this))",
    ),
    key(
        "messageDelayLevel",
        Str,
        Fixed(crate::schedule::levels::DEFAULT_MESSAGE_DELAY_LEVEL),
        "delay of each level (space-separated, unit s/m/h/d as RocketMQ parses it); SCHEDULE_TOPIC_XXXX has one queue per level",
    ),
    key(
        "flushDelayOffsetInterval",
        INTERVAL,
        Fixed("10000"),
        "period of the `config/delayOffset.json` write (also written at a clean stop, not by 4.3)",
    ),
    key(
        "autoCreateSubscriptionGroup",
        Bool,
        Fixed("true"),
        "create an unknown consumer group on its first pull, heartbeat or unregister",
    ),
    key(
        "accessMessageInMemoryMaxRatio",
        int(Unit::Count, 0, 100),
        Fixed("40"),
        "% of RAM behind the CommitLog head that counts as \"in memory\" (pull limits, 4.x offset query)",
    ),
    key(
        "longPollingEnable",
        Bool,
        Fixed("true"),
        "hold a pull that finds nothing for its `suspendTimeoutMillis`; checked every 5 s",
    ),
    key(
        "shortPollingTimeMills",
        INTERVAL,
        Fixed("1000"),
        "longPollingEnable=false: hold time and check period of such a pull",
    ),
    key(
        "maxTransferCountOnMessageInMemory",
        int(Unit::Count, 1, 100_000),
        Fixed("32"),
        "messages per pull when the data is in memory",
    ),
    key(
        "maxTransferBytesOnMessageInMemory",
        int(Unit::Bytes, 1, I32_BYTES_MAX),
        Fixed("262144"),
        "bytes per pull when the data is in memory",
    ),
    key(
        "maxTransferCountOnMessageInDisk",
        int(Unit::Count, 1, 100_000),
        Fixed("8"),
        "messages per pull when the data is on disk",
    ),
    key(
        "maxTransferBytesOnMessageInDisk",
        int(Unit::Bytes, 1, I32_BYTES_MAX),
        Fixed("65536"),
        "bytes per pull when the data is on disk",
    ),
    key(
        "channelExpiredTimeout",
        int(Unit::Millis, 1, 86_400_000),
        Fixed("120000"),
        "a consumer without a heartbeat this long is dropped (scan every 10 s), its connection closed",
    ),
    ours(
        "rebalanceLockMaxLiveTime",
        int(Unit::Millis, 1, 86_400_000),
        Fixed("60000"),
        "ours (RocketMQ: JVM property rocketmq.broker.rebalance.lockMaxLiveTime): queue lock lifetime",
    ),
    key(
        "aclEnable",
        Bool,
        Fixed("false"),
        "ACL 1.0 as 4.9.8: check every request against `${rocketmqHome}/conf/plain_acl.yml` (accounts, white addresses, signature, topic and group permissions); `true` is refused with `brokerVersionProfile` 4.3 (no ACL before 4.4.0) and 5.3 (5.3.3 removed ACL 1.0 and ignores the key)",
    ),
    key(
        "rocketmqHome",
        Path,
        Computed {
            value: rocketmq_home,
            formula: ["`$ROCKETMQ_HOME`"; 3],
        },
        "RocketMQ's home: `aclEnable` reads `conf/plain_acl.yml` under it",
    ),
    ours(
        "maxConnections",
        int(Unit::Count, 1, 1_000_000),
        Fixed("1024"),
        "ours: connections beyond this are refused",
    ),
    key(
        "flushDiskType",
        Enum(&["ASYNC_FLUSH", "SYNC_FLUSH"]),
        Fixed("ASYNC_FLUSH"),
        "SYNC_FLUSH: a put waiting for the store is answered after group commit",
    ),
    key(
        "mappedFileSizeCommitLog",
        int(Unit::Bytes, 4096, I32_BYTES_MAX),
        Fixed("1073741824"),
        "CommitLog file size (1 GiB)",
    ),
    key(
        "maxMessageSize",
        int(Unit::Bytes, 1, I32_BYTES_MAX),
        Fixed("4194304"),
        "largest message body (4 MiB); must fit in one CommitLog file",
    ),
    key(
        "flushIntervalCommitLog",
        INTERVAL,
        Fixed("500"),
        "ASYNC_FLUSH: period of the flush thread",
    ),
    key(
        "flushCommitLogLeastPages",
        PAGES,
        Fixed("4"),
        "4 KiB pages a flush waits for",
    ),
    key(
        "flushCommitLogThoroughInterval",
        MILLIS,
        Fixed("10000"),
        "a flush of every dirty page at least this often",
    ),
    key(
        "commitIntervalCommitLog",
        INTERVAL,
        Fixed("200"),
        "transient store pool: period of the commit thread",
    ),
    key(
        "commitCommitLogLeastPages",
        PAGES,
        Fixed("4"),
        "4 KiB pages a commit waits for",
    ),
    key(
        "commitCommitLogThoroughInterval",
        MILLIS,
        Fixed("200"),
        "a commit of every written page at least this often",
    ),
    key(
        "syncFlushTimeout",
        MILLIS,
        Fixed("5000"),
        "SYNC_FLUSH: wait for group commit before FLUSH_DISK_TIMEOUT",
    ),
    key(
        "osPageCacheBusyTimeOutMills",
        int(Unit::Millis, 0, i64::MAX),
        Fixed("1000"),
        "a put-lock hold longer than this makes the page cache busy; 10000000 or more disables the check",
    ),
    key(
        "transientStorePoolEnable",
        Bool,
        Fixed("false"),
        "in effect: 4.x `ASYNC_FLUSH` and not SLAVE; 5.3 not SLAVE",
    ),
    key(
        "transientStorePoolSize",
        int(Unit::Count, 0, 1024),
        Fixed("5"),
        "transient store pool buffers, one CommitLog file each",
    ),
    key(
        "fastFailIfNoBufferInStorePool",
        Bool,
        Fixed("false"),
        "with the pool on and no free buffer, a master maps no new CommitLog file (the put fails CREATE_MAPEDFILE_FAILED); `[REJECTREQUEST]` for a deficient pool comes either way",
    ),
    ours(
        "injectPutStallMillis",
        MILLIS,
        Fixed("0"),
        "ours: once per interval an append holds the put lock this long",
    ),
    ours(
        "injectPutStallIntervalMillis",
        MILLIS,
        Fixed("0"),
        "ours: minimum time between two put stalls (0 = every append)",
    ),
    ours(
        "injectAppendDelayMicros",
        int(Unit::Micros, 0, 60_000_000),
        Fixed("0"),
        "ours: every append holds the put lock at least this long (a slower disk)",
    ),
    ours(
        "injectAppendSpinMicros",
        int(Unit::Micros, 0, 1_000_000),
        Fixed("0"),
        "ours: every append burns this much CPU time inside the put lock (a compute regression; `harness ab`)",
    ),
    ours(
        "injectAppendSpinNanos",
        int(Unit::Nanos, 0, 1_000_000_000),
        Fixed("0"),
        "ours: as injectAppendSpinMicros, in nanoseconds, added to it (a regression smaller than 1 us per append)",
    ),
    ours(
        "injectFlushStallMillis",
        MILLIS,
        Fixed("0"),
        "ours: every force takes this much longer",
    ),
    ours(
        "injectPageCacheStallMillis",
        MILLIS,
        Fixed("0"),
        "ours: once per interval the next write into file-backed pages blocks this long: the append (pool off, inside the put lock) or the commit thread's write (pool on)",
    ),
    ours(
        "injectPageCacheStallIntervalMillis",
        MILLIS,
        Fixed("0"),
        "ours: minimum time between two page-cache stalls (0 = every write into file-backed pages)",
    ),
    ours(
        "injectWritebackStallMillis",
        MILLIS,
        Fixed("0"),
        "ours: every force takes this much longer and writes into the pages being forced wait for it (stable pages)",
    ),
    ours(
        "injectReputStallMillis",
        MILLIS,
        Fixed("0"),
        "ours: whenever ReputMessageService finds undispatched data it waits this long first: consumers see messages later, `dispatchBehindBytes` shows the backlog",
    ),
];
