//! A running Apache broker and its readiness: the boot line, then the broker in the name
//! server's cluster table, then every key of its broker.conf read back with GET_BROKER_CONFIG
//! (26), because Apache ignores an unknown key or a bad value in silence (§1.2). A name server
//! runs beside it: the one its keys name, else the run's (`super::Apache::shared_namesrv`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use rmq_client::admin::AdminConn;

use super::conf::{self, BrokerPorts, Role};
use super::jars::Jars;
use super::jvm::{Jvm, JvmSpec, Stop};
use crate::kind::registered;
use crate::kind::{write_conf, Member, MemberSpec, NameServer, StartError};

/// The name server's and the broker's boot lines (stdout; 4.9 NamesrvStartup/BrokerStartup
/// `start`, the same words in 5.3).
const NAMESRV_READY: &str = "The Name Server boot success";
const BROKER_READY: &str = "boot success";
/// At least this long for a JVM to boot (5.3.3 took 4.5-13.9 s on 2 busy cores here).
const MIN_READY: Duration = Duration::from_secs(60);
/// 5.3's store shutdown alone sleeps 3 s and waits up to 2 x 3 s (§7.5).
const MIN_GRACE: Duration = Duration::from_secs(15);

fn failed(reason: String) -> StartError {
    StartError::Failed {
        reason,
        last_line: None,
    }
}

fn conf_error(path: &Path) -> impl FnOnce(std::io::Error) -> StartError + '_ {
    move |source| StartError::Conf {
        path: path.to_owned(),
        source,
    }
}

/// Starts an Apache name server with its files `<dir>/<stem>.*`.
pub(super) fn start_namesrv(
    jars: &Jars,
    version: &str,
    dir: &Path,
    stem: &str,
    cpus: Option<&[usize]>,
) -> Result<ApacheNameServer, StartError> {
    let conf_path = dir.join(format!("{stem}.conf"));
    let home = dir.join(format!("{stem}-home"));
    let log = dir.join(format!("{stem}.log"));
    let started = on_free_ports(&log, true, || {
        let port = conf::free_port().map_err(|e| failed(format!("choosing a port: {e}")))?;
        std::fs::write(&conf_path, format!("listenPort={port}\n"))
            .map_err(conf_error(&conf_path))?;
        let args = conf::jvm_args(
            Role::NameServer,
            version,
            &jars.lib,
            &home,
            &conf_path,
            128,
            &jars.cds,
        )
        .map_err(conf_error(&home))?;
        let jvm = Jvm::start(&JvmSpec {
            java: jars.java.clone(),
            args,
            log: &log,
            ready_line: NAMESRV_READY,
            cpus,
            ready: MIN_READY,
            what: "name server",
        })?;
        Ok((jvm, port))
    });
    let (jvm, port) = started?;
    Ok(ApacheNameServer {
        jvm,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
    })
}

/// Tries a JVM gets when its port, chosen free, was taken before the JVM bound it.
const PORT_ATTEMPTS: u32 = 3;

/// Runs `start` (choose ports, write the config, start the JVM) again, up to [`PORT_ATTEMPTS`]
/// times, while the JVM loses its port to another process (`may_retry`: the harness chose the
/// ports). The log of each lost try is kept beside the next one's (`<log>.lost-port-N`).
fn on_free_ports<T>(
    log: &Path,
    may_retry: bool,
    mut start: impl FnMut() -> Result<T, StartError>,
) -> Result<T, StartError> {
    let mut attempt = 1;
    loop {
        match start() {
            Err(e) if may_retry && e.lost_a_port() && attempt < PORT_ATTEMPTS => {
                let mut kept = log.as_os_str().to_owned();
                kept.push(format!(".lost-port-{attempt}"));
                let _ = std::fs::rename(log, kept);
                attempt += 1;
            }
            done => return done,
        }
    }
}

/// Starts a broker for `spec`; a broker whose keys name no name server registers with the
/// one `shared` gives.
pub(super) fn start_broker(
    jars: &Jars,
    version: &str,
    spec: &MemberSpec<'_>,
    shared: impl FnOnce() -> Result<SocketAddr, StartError>,
) -> Result<ApacheBroker, StartError> {
    let namesrv = match spec.conf.get("namesrvAddr").filter(|a| !a.is_empty()) {
        Some(a) => rmq_client::name_server::resolve(a)
            .map_err(|e| failed(format!("namesrvAddr {a}: {e}")))?,
        None => shared()?,
    };
    let given = spec
        .conf
        .get("listenPort")
        .and_then(|p| p.parse::<u16>().ok())
        .filter(|&p| p > 0);
    let home = spec.dir.join(format!("{}-home", spec.stem));
    let conf_path = spec.conf_path();
    let log = spec.log_path();
    // Ports the cell named are the cell's: no other ports behind its back.
    let (jvm, ports, keys) = on_free_ports(&log, given.is_none(), || {
        let ports = match given {
            Some(p) => BrokerPorts { listen: p },
            None => BrokerPorts::pick().map_err(|e| failed(format!("choosing ports: {e}")))?,
        };
        let mut keys = conf::broker_conf(spec.conf, version, ports, namesrv);
        keys.entry("storePathRootDir".into())
            .or_insert_with(|| home.join("store").display().to_string());
        write_conf(&conf_path, &keys).map_err(conf_error(&conf_path))?;
        let direct = conf::direct_memory_mb(&keys);
        let args = conf::jvm_args(
            Role::Broker,
            version,
            &jars.lib,
            &home,
            &conf_path,
            direct,
            &jars.cds,
        )
        .map_err(conf_error(&home))?;
        let jvm = Jvm::start(&JvmSpec {
            java: jars.java.clone(),
            args,
            log: &log,
            ready_line: BROKER_READY,
            cpus: spec.cpus,
            ready: spec.ready.max(MIN_READY),
            what: "broker",
        })?;
        Ok((jvm, ports, keys))
    })?;
    let broker = ApacheBroker {
        broker: jvm,
        addr: SocketAddr::from(([127, 0, 0, 1], ports.listen)),
        ports,
        store_log: store_log(&home, version),
    };
    let ready = registered_or_nudged(namesrv, broker.addr, version)
        .and_then(|()| keys_took(broker.addr, &keys, version))
        .and_then(|()| stats_sampled(broker.addr, Duration::from_secs(30)));
    if let Err(reason) = ready {
        let why = StartError::with_log(reason, &log);
        Box::new(broker).stop(Duration::from_secs(5));
        return Err(why);
    }
    Ok(broker)
}

/// The topics whose creation makes a broker that missed its start registration register now
/// ([`registered_or_nudged`]): two, because a name server refuses an increment of one topic
/// from a broker it does not list (5.3.3 RouteInfoManager.registerBroker, "Can't register
/// topicConfigWrapper ... has not registered"). One read-write queue each; nothing is sent to
/// them.
const NUDGE_TOPICS: [&str; 2] = ["HARNESS_REGISTER_NUDGE_1", "HARNESS_REGISTER_NUDGE_2"];

/// Waits until the broker is in the name server's cluster table. A broker registers inside
/// `BrokerController.start()`, before its boot line, so one that is not listed at the boot
/// line missed that registration, and its next comes from the periodic task whose first run
/// is 10 s after the start (5.3.3 BrokerController.java, `scheduleAtFixedRate(.., 1000 * 10,
/// ..)`). 5.3.3 misses it when the remoting client's first scan of the name servers has not
/// connected yet: `BrokerOuterAPI.registerBrokerAll` sends only to
/// `getAvailableNameSrvList()`, which that asynchronous scan fills (NettyRemotingClient
/// `scanAvailableNameSrv`); 4.9 sends to every configured address. It missed in 10 of 34
/// 5.3.3 starts of the whole fidelity run of 6 December 21:28, 10 s each. Creating topics
/// makes the broker register at once (`updateAndCreateTopicList` →
/// `registerIncrementBrokerData`), through the scan that has connected by then; 4.9 has no
/// UPDATE_AND_CREATE_TOPIC_LIST, and never needs it.
fn registered_or_nudged(
    namesrv: SocketAddr,
    addr: SocketAddr,
    version: &str,
) -> Result<(), String> {
    if registered(namesrv, addr, Duration::ZERO, &|| false).is_ok() {
        return Ok(());
    }
    if !version.starts_with('4') {
        let timeout = Duration::from_secs(5);
        // A nudge that fails leaves the periodic registration, which the wait below meets.
        let _ = AdminConn::connect(addr, timeout)
            .and_then(|mut c| c.create_topic_list(&NUDGE_TOPICS, 1, timeout));
    }
    registered(namesrv, addr, Duration::from_secs(30), &|| false)
}

/// 5.3's ACL 2.0 keys (AuthConfig's fields, rocketmq-all-5.3.3 auth/config/AuthConfig.java:21-80).
/// BrokerStartup reads them from the same `-c` file (BrokerStartup.java:118), but GET_BROKER_CONFIG
/// prints only BrokerController's Configuration of broker, netty server, netty client and store
/// config (BrokerController.java:421-425), so they cannot be read back; a typo among them is not
/// caught. (An authenticating broker also refuses the unsigned 26 and 28 unless
/// `authenticationWhitelist` names them.)
const AUTH_KEYS: &[&str] = &[
    "authenticationEnabled",
    "authenticationProvider",
    "authenticationMetadataProvider",
    "authenticationStrategy",
    "authenticationWhitelist",
    "initAuthenticationUser",
    "innerClientAuthenticationCredentials",
    "authorizationEnabled",
    "authorizationProvider",
    "authorizationMetadataProvider",
    "authorizationStrategy",
    "authorizationWhitelist",
    "migrateAuthFromV1Enabled",
    "userCacheMaxNum",
    "userCacheExpiredSecond",
    "userCacheRefreshSecond",
    "aclCacheMaxNum",
    "aclCacheExpiredSecond",
    "aclCacheRefreshSecond",
    "statefulAuthenticationCacheMaxNum",
    "statefulAuthenticationCacheExpiredSecond",
    "statefulAuthorizationCacheMaxNum",
    "statefulAuthorizationCacheExpiredSecond",
];

/// A key `version` takes from broker.conf but GET_BROKER_CONFIG does not print: AuthConfig's
/// (5.3.0 and later; 4.9 has no AuthConfig, so there they stay "no such key").
fn unreadable(version: &str, key: &str) -> bool {
    version.starts_with("5.") && AUTH_KEYS.contains(&key)
}

/// Every key written into broker.conf, read back: the cell is refused when one did not take.
fn keys_took(
    addr: SocketAddr,
    keys: &BTreeMap<String, String>,
    version: &str,
) -> Result<(), String> {
    let timeout = Duration::from_secs(5);
    let effective = AdminConn::connect(addr, timeout)
        .and_then(|mut c| c.broker_config(timeout))
        .map_err(|e| format!("GET_BROKER_CONFIG (26): {e}"))?;
    let wrong: Vec<String> = keys
        .iter()
        .filter(|(k, _)| !unreadable(version, k))
        .filter_map(|(k, want)| match effective.get(k) {
            Some(got) if same_value(want, got) => None,
            Some(got) => Some(format!("{k}={want} (the broker runs with {got})")),
            None => Some(format!("{k}={want} (the broker has no such key)")),
        })
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "broker.conf keys that did not take (Apache ignores bad keys and values in silence): {}",
            wrong.join(", ")
        ))
    }
}

/// Waits until GET_BROKER_RUNTIME_INFO (28) answers. StoreStatsService takes its first sample
/// one second after it starts (`FREQUENCY_OF_SAMPLING`), and until then the broker answers 28
/// with code 1 and `java.util.NoSuchElementException` (`putTimesList.getLast()` on an empty
/// list): a cell's first per-second sample, or anyone else's, must not meet that.
fn stats_sampled(addr: SocketAddr, within: Duration) -> Result<(), String> {
    let end = Instant::now() + within;
    let timeout = Duration::from_secs(5);
    let mut conn = None;
    loop {
        let last = match conn
            .take()
            .map_or_else(|| AdminConn::connect(addr, timeout), Ok)
        {
            Ok(mut c) => match c.runtime_info(timeout) {
                Ok(_) => return Ok(()),
                Err(e) => {
                    conn = Some(c);
                    e.to_string()
                }
            },
            Err(e) => e.to_string(),
        };
        if Instant::now() >= end {
            return Err(format!(
                "GET_BROKER_RUNTIME_INFO (28) did not answer within {within:?} of the broker's start ({last})"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A value written against the one RocketMQ prints back: the same text, the same up to case
/// (`True` / `true`), or the same number.
pub(super) fn same_value(want: &str, got: &str) -> bool {
    let (w, g) = (want.trim(), got.trim());
    w == g
        || w.eq_ignore_ascii_case(g)
        || matches!((w.parse::<f64>(), g.parse::<f64>()), (Ok(a), Ok(b)) if a == b)
}

/// Where `version`'s broker under `home` logs an HA connection's first report. The line is
/// written by the connection's ReadSocketService through the logger it inherits from
/// ServiceThread (`RocketmqCommon`, which shadows the connection's own store logger): 4.9
/// into the one file of the harness's logging file ([`conf::jvm_args`]), 5.3 by its own
/// `rmq.broker.logback.xml` into `${user.home}/logs/rocketmqlogs/broker.log`.
fn store_log(home: &Path, version: &str) -> PathBuf {
    let logs = home.join("logs");
    if version.starts_with('4') {
        logs.join("rocketmq.log")
    } else {
        logs.join("rocketmqlogs").join("broker.log")
    }
}

/// Whether a store log shows a slave's first offset report: the master logs
/// `slave[<addr>] request offset <n>` when a connection's first 8-byte report arrives
/// (4.9.7 HAConnection.java:179, 5.3.3 DefaultHAConnection.java:233). Neither version
/// answers anything about its slaves in GET_BROKER_RUNTIME_INFO, and 4.9 has no
/// GET_BROKER_HA_STATUS (907).
fn reports_a_slave(log: &str) -> bool {
    log.lines()
        .any(|l| l.contains("slave[") && l.contains("] request offset "))
}

/// A running Apache broker.
pub struct ApacheBroker {
    broker: Jvm,
    addr: SocketAddr,
    ports: BrokerPorts,
    /// The log an HA connection's first report shows in ([`store_log`]).
    store_log: PathBuf,
}

impl Member for ApacheBroker {
    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn ha_addr(&self, _wait: Duration) -> Option<SocketAddr> {
        Some(SocketAddr::from(([127, 0, 0, 1], self.ports.ha())))
    }

    fn pid(&self) -> Option<u32> {
        Some(self.broker.pid)
    }

    fn slave_reported(&self) -> Option<bool> {
        let log = std::fs::read_to_string(&self.store_log).unwrap_or_default();
        Some(reports_a_slave(&log))
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.broker.exited()
    }

    fn kill9(&mut self) -> std::io::Result<()> {
        self.broker.kill9();
        Ok(())
    }

    fn signal(&self, signal: i32) -> std::io::Result<()> {
        self.broker.signal(signal)
    }

    /// SIGKILL. A clean stop took a 5.3.3 broker 8.7 s
    /// idle and 12-15 s under load (its store's shutdown sleeps 3 s, then waits for each service
    /// thread's poll to time out), longer than the next cell's start that hid it; its store is
    /// thrown away, so the flush it would do buys nothing.
    fn discard(mut self: Box<Self>, _grace: Duration) -> Option<ExitStatus> {
        self.broker.kill9();
        None
    }

    fn stop(mut self: Box<Self>, grace: Duration) -> Option<ExitStatus> {
        self.broker.terminate();
        let (status, how) = self.broker.wait_stopped(grace.max(MIN_GRACE));
        // A JVM whose shutdown hooks ran after SIGTERM exits with 143 (128 + 15): for a stop
        // the harness asked for, that is a clean exit.
        let status = status.map(|s| {
            if how == Stop::Clean && s.code() == Some(128 + libc::SIGTERM) {
                ExitStatus::from_raw(0)
            } else {
                s
            }
        });
        if how == Stop::Killed {
            eprintln!(
                "warning: the Apache broker {} did not exit within {:?} of SIGTERM and was killed (see {})",
                self.addr,
                grace.max(MIN_GRACE),
                self.broker.log.display()
            );
        }
        status
    }
}

/// A running Apache name server.
pub struct ApacheNameServer {
    jvm: Jvm,
    addr: SocketAddr,
}

impl ApacheNameServer {
    /// Whether its JVM still runs.
    pub(super) fn running(&mut self) -> bool {
        self.jvm.exited().is_none()
    }
}

impl NameServer for ApacheNameServer {
    fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// SIGKILL: its tables go with the cluster, and its clean stop takes 3 s.
    fn discard(mut self: Box<Self>) {
        self.jvm.kill9();
    }

    fn stop(mut self: Box<Self>) -> Option<String> {
        match self.jvm.stop(Duration::from_secs(10)) {
            (_, Stop::Clean) => None,
            (_, Stop::Killed) => Some(format!(
                "the Apache name server {} did not exit within 10 s of SIGTERM and was killed",
                self.addr
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{reports_a_slave, same_value, store_log, unreadable};
    use std::path::Path;

    #[test]
    fn a_slave_s_first_report_is_read_from_the_store_log() {
        // 4.9.7's line through the harness's pattern; 5.3.3's through RocketMQ's own.
        let v4 = "08:01:02.345 INFO  HAConnection - slave[/127.0.0.1:41234] request offset 0\n";
        let v5 = "2026-12-05 15:58:26 INFO ReadSocketService - slave[/127.0.0.1:48364] request offset 0\n";
        assert!(reports_a_slave(v4));
        assert!(reports_a_slave(v5));
        let accepted =
            "INFO AcceptSocketService - HAService receive new connection, /127.0.0.1:41234\n";
        assert!(
            !reports_a_slave(accepted),
            "a connection is not yet a report"
        );
        assert!(!reports_a_slave(""));
        let home = Path::new("/j/broker-0-home");
        assert_eq!(
            store_log(home, "4.9.7"),
            Path::new("/j/broker-0-home/logs/rocketmq.log")
        );
        assert_eq!(
            store_log(home, "5.3.3"),
            Path::new("/j/broker-0-home/logs/rocketmqlogs/broker.log")
        );
    }

    #[test]
    fn only_5x_auth_keys_escape_the_read_back() {
        assert!(unreadable("5.3.3", "authenticationEnabled"));
        assert!(unreadable("5.3.3", "initAuthenticationUser"));
        assert!(!unreadable("4.9.7", "authenticationEnabled"));
        assert!(!unreadable("5.3.3", "aclEnable"));
        assert!(!unreadable("5.3.3", "waitTimeMillsInSendQueue"));
    }

    #[test]
    fn values_compare_as_rocketmq_prints_them() {
        assert!(same_value("true", "true"));
        assert!(same_value("True", "true"));
        assert!(same_value("200", "200"));
        assert!(same_value(" 200", "200"));
        assert!(!same_value("200", "2000"));
        assert!(!same_value("SYNC_FLUSH", "ASYNC_FLUSH"));
    }
}
