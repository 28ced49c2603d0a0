//! What the harness writes for an Apache RocketMQ JVM: broker.conf (the cell's keys under
//! their RocketMQ names plus what one host and a small machine need), the name server's
//! config, the logging files and the JVM's command line.
//! Reference: `apache-rocketmq-java.md` §2 (flags, logging) and §3 (store sizes).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};

/// Sizes the harness sets unless the cell sets them (§3, "sizing sketch"): 1 GiB commit-log
/// files would put 5 GiB of direct memory behind a transient store pool, and the index file
/// would map 420 MB. Both change how often a file is created, never a send's code.
const SMALL_MACHINE: &[(&str, &str)] = &[
    ("mappedFileSizeCommitLog", "134217728"),
    ("maxHashSlotNum", "500000"),
    ("maxIndexNum", "2000000"),
];

/// The broker's heap: small, not pre-touched (the scripts' 8 GiB with AlwaysPreTouch would
/// take the machine).
const BROKER_HEAP: &str = "1g";
const NAMESRV_HEAP: &str = "256m";
/// Direct memory beside the transient store pool: Netty's pools and the store's buffers.
const DIRECT_BASE_MB: u64 = 768;

/// The JDK 17 module flags RocketMQ's scripts leave out (§2.4): without them the transient
/// pool's `DirectBuffer` cast and 4.9's unmapping at shutdown fail.
const MODULE_FLAGS: &[&str] = &[
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
];

/// Ports a broker takes: `listenPort`, the "fast" port `listenPort - 2` and the HA port
/// `listenPort + 1` (§7.1). All three must be free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerPorts {
    pub listen: u16,
}

impl BrokerPorts {
    pub fn ha(self) -> u16 {
        self.listen + 1
    }

    /// Three free ports `p - 2`, `p`, `p + 1` on every address (4.9 binds 0.0.0.0), chosen
    /// at random below the kernel's ephemeral range (see [`chosen_range`]).
    pub fn pick() -> std::io::Result<BrokerPorts> {
        let range = chosen_range();
        for _ in 0..64 {
            let p = fastrand::u16(range.start + 2..range.end - 1);
            if free_now(&[p - 2, p, p + 1]) {
                return Ok(BrokerPorts { listen: p });
            }
        }
        Err(std::io::Error::other(format!(
            "no three free ports p-2, p, p+1 in {range:?} in 64 tries"
        )))
    }
}

/// Where the harness chooses a JVM's ports: below `ip_local_port_range`, where the kernel
/// never hands out a port by itself. A port the harness chose by binding port 0 was an
/// ephemeral port: in the seconds before the JVM bound it, any test binding `127.0.0.1:0`
/// or any outgoing connection could take it (CI lost 5.3.3's broker to that race once).
/// Here only another explicit choice can, and the start is tried again on other ports
/// ([`super::member`]).
pub fn chosen_range() -> std::ops::Range<u16> {
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    // 10000 and up: clear of the well-known ports and of most services' defaults (RocketMQ's
    // own 9876 and 10911 are left to a real cluster on the same host).
    if low > 12000 {
        11000..low
    } else {
        // A kernel whose ephemeral range starts low: above its top instead.
        let high = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u16>().ok())
            .unwrap_or(60999);
        high.saturating_add(1).max(11000)..u16::MAX
    }
}

fn free_now(ports: &[u16]) -> bool {
    let held: Vec<_> = ports
        .iter()
        .map(|&q| TcpListener::bind((Ipv4Addr::UNSPECIFIED, q)))
        .collect();
    held.iter().all(Result::is_ok)
}

/// A free port for a name server, from the same range as a broker's.
pub fn free_port() -> std::io::Result<u16> {
    let range = chosen_range();
    for _ in 0..64 {
        let p = fastrand::u16(range.clone());
        if free_now(&[p]) {
            return Ok(p);
        }
    }
    Err(std::io::Error::other(format!(
        "no free port in {range:?} in 64 tries"
    )))
}

/// broker.conf for Apache: the cell's keys (a `listenPort` of 0 means "choose"), then what
/// the harness must set: ports, `brokerIP1=127.0.0.1` (else the name server hands out the
/// host's first non-loopback address, §7.2), a broker name, the name server, small files.
pub fn broker_conf(
    cell: &BTreeMap<String, String>,
    version: &str,
    ports: BrokerPorts,
    namesrv: SocketAddr,
) -> BTreeMap<String, String> {
    let mut conf = cell.clone();
    conf.insert("listenPort".into(), ports.listen.to_string());
    // 4.x derives the HA port from listenPort whatever the key says; 5.x honours the key.
    conf.insert("haListenPort".into(), ports.ha().to_string());
    conf.entry("brokerIP1".into())
        .or_insert_with(|| "127.0.0.1".into());
    // The HA address a master registers (`brokerIP2:haListenPort`), which a slave learns from
    // the name server: else the host's first non-loopback address, as for brokerIP1.
    conf.entry("brokerIP2".into())
        .or_insert_with(|| "127.0.0.1".into());
    if version.starts_with('5') && conf.get("brokerRole").is_some_and(|r| r == "SLAVE") {
        // A 5.3.3 slave never uses a configured haMasterAddress: BrokerController.initialize
        // hands it to the store (BrokerController.java:716-719) before the store's start
        // creates the HA client (DefaultMessageStore.java:395-397, DefaultHAService.java:68-74),
        // so it is dropped (:86-90), and the same branch stops taking the master's address from
        // the name server (`updateMasterHAServerAddrPeriodically = false`, :719 and :2033).
        // Measured: such a slave logged `HAClient connect to master null failed` every 5 s.
        // Without the key it takes the address from its registration, as RocketMQ's own
        // 2m-2s-sync configurations do.
        conf.remove("haMasterAddress");
    }
    conf.entry("brokerName".into())
        .or_insert_with(|| "broker-a".into());
    conf.insert("namesrvAddr".into(), namesrv.to_string());
    for (k, v) in SMALL_MACHINE {
        conf.entry((*k).into()).or_insert_with(|| (*v).into());
    }
    if version.starts_with('5') {
        // The timer wheel maps 38.7 MB and its direct twin; the harness sends no timer
        // messages (§3).
        conf.entry("timerWheelEnable".into())
            .or_insert_with(|| "false".into());
    }
    conf
}

/// `-XX:MaxDirectMemorySize` in MiB: the transient store pool (`transientStorePoolSize` ×
/// `mappedFileSizeCommitLog`, when enabled) plus Netty's share (§3).
pub fn direct_memory_mb(conf: &BTreeMap<String, String>) -> u64 {
    let on = conf
        .get("transientStorePoolEnable")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if !on {
        return DIRECT_BASE_MB;
    }
    let num = |k: &str, d: u64| conf.get(k).and_then(|v| v.trim().parse().ok()).unwrap_or(d);
    let pool = num("transientStorePoolSize", 5) * num("mappedFileSizeCommitLog", 1 << 30);
    DIRECT_BASE_MB + pool.div_ceil(1 << 20)
}

/// What the JVMs of a version do with class-data sharing (`super::cds`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Cds {
    /// No archive of our own (the JDK's default archive of its own classes still maps).
    #[default]
    Off,
    /// Map these archives.
    Use { namesrv: PathBuf, broker: PathBuf },
    /// Write these archives at exit.
    Write { namesrv: PathBuf, broker: PathBuf },
}

impl Cds {
    /// The JVM flag for `role`, if any.
    pub fn flag(&self, role: Role) -> Option<String> {
        let pick = |namesrv: &Path, broker: &Path| match role {
            Role::NameServer => namesrv.display().to_string(),
            Role::Broker => broker.display().to_string(),
        };
        match self {
            Cds::Off => None,
            Cds::Use { namesrv, broker } => {
                Some(format!("-XX:SharedArchiveFile={}", pick(namesrv, broker)))
            }
            Cds::Write { namesrv, broker } => Some(format!(
                "-XX:ArchiveClassesAtExit={}",
                pick(namesrv, broker)
            )),
        }
    }
}

/// Which process a command line is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    NameServer,
    Broker,
}

impl Role {
    fn main_class(self) -> &'static str {
        match self {
            Role::NameServer => "org.apache.rocketmq.namesrv.NamesrvStartup",
            Role::Broker => "org.apache.rocketmq.broker.BrokerStartup",
        }
    }

    fn logback(self) -> (&'static str, &'static str) {
        match self {
            // 4.9 reads $ROCKETMQ_HOME/conf/<file>; 5.3 takes a classpath resource by name.
            Role::NameServer => ("logback_namesrv.xml", "rmq.namesrv.logback.xml"),
            Role::Broker => ("logback_broker.xml", "rmq.broker.logback.xml"),
        }
    }
}

/// The JVM's arguments: heap, G1, the module flags, a home of its own (`user.home` moves
/// RocketMQ's logs and default store into the cell's folder), logging, the class path and
/// `-c <conf>`. For 4.9 the logging file is written into `home/conf` first.
pub fn jvm_args(
    role: Role,
    version: &str,
    lib: &Path,
    home: &Path,
    conf: &Path,
    direct_mb: u64,
    cds: &Cds,
) -> std::io::Result<Vec<String>> {
    let heap = match role {
        Role::NameServer => NAMESRV_HEAP,
        Role::Broker => BROKER_HEAP,
    };
    let mut args: Vec<String> = vec![
        "-server".into(),
        format!("-Xms{heap}"),
        format!("-Xmx{heap}"),
        "-XX:+UseG1GC".into(),
        "-XX:-OmitStackTraceInFastThrow".into(),
        format!("-XX:MaxDirectMemorySize={direct_mb}m"),
    ];
    args.extend(MODULE_FLAGS.iter().map(|s| (*s).to_owned()));
    args.extend(cds.flag(role));
    args.push(format!("-Duser.home={}", home.display()));
    // 5.3.3's remoting servers make a self-signed certificate at every start (Netty's
    // `SelfSignedCertificate`, TLS mode permissive) and write it into java.io.tmpdir; a JVM
    // stopped with SIGKILL never deletes it. 650 such files had piled up in /tmp after two
    // days of fidelity runs: in the cell's home they go with the cell's folder.
    let tmp = home.join("tmp");
    std::fs::create_dir_all(&tmp)?;
    args.push(format!("-Djava.io.tmpdir={}", tmp.display()));
    args.push(format!("-Drocketmq.home.dir={}", home.display()));
    let (v4_file, v5_resource) = role.logback();
    if version.starts_with('4') {
        let dir = home.join("conf");
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(v4_file), logback_v4(home))?;
    } else {
        args.push(format!("-Drmq.logback.configurationFile={v5_resource}"));
    }
    args.push("-cp".into());
    args.push(format!("{}/*", lib.display()));
    args.push(role.main_class().into());
    args.push("-c".into());
    args.push(conf.display().to_string());
    Ok(args)
}

/// 4.9's logging (no jar carries one, §2.3): RocketMQ's console logger to stdout, where the
/// harness reads the boot line; everything else into `home/logs/rocketmq.log`.
fn logback_v4(home: &Path) -> String {
    let file = home.join("logs").join("rocketmq.log");
    format!(
        r#"<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{}</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} %-5level %logger{{0}} - %msg%n</pattern></encoder>
  </appender>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%msg%n</pattern></encoder>
  </appender>
  <logger name="RocketmqConsole" additivity="false"><level value="INFO"/><appender-ref ref="STDOUT"/></logger>
  <logger name="RocketmqNamesrvConsole" additivity="false"><level value="INFO"/><appender-ref ref="STDOUT"/></logger>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"#,
        file.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_archive_flag_names_the_role_s_file_and_comes_before_the_class_path() {
        // jvm_args makes the JVM's tmp folder in its home: a folder removed when the test ends.
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let (ns, br) = (
            PathBuf::from("/a/namesrv.jsa"),
            PathBuf::from("/a/broker.jsa"),
        );
        let args = |role, cds: &Cds| {
            jvm_args(
                role,
                "5.3.3",
                Path::new("/lib"),
                &home,
                Path::new("/c"),
                128,
                cds,
            )
            .expect("args")
        };
        let using = Cds::Use {
            namesrv: ns.clone(),
            broker: br.clone(),
        };
        let a = args(Role::Broker, &using);
        let at = a
            .iter()
            .position(|f| f == "-XX:SharedArchiveFile=/a/broker.jsa")
            .expect("the broker's archive");
        assert!(at < a.iter().position(|f| f == "-cp").expect("-cp"));
        let a = args(
            Role::NameServer,
            &Cds::Write {
                namesrv: ns,
                broker: br,
            },
        );
        assert!(a.contains(&"-XX:ArchiveClassesAtExit=/a/namesrv.jsa".to_owned()));
        let a = args(Role::Broker, &Cds::Off);
        assert!(!a.iter().any(|f| f.contains("Archive")), "{a:?}");
    }

    #[test]
    fn the_jvm_s_temporary_files_stay_in_its_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let a = jvm_args(
            Role::Broker,
            "5.3.3",
            Path::new("/lib"),
            &home,
            Path::new("/c"),
            128,
            &Cds::Off,
        )
        .expect("args");
        let tmp = home.join("tmp");
        assert!(
            a.contains(&format!("-Djava.io.tmpdir={}", tmp.display())),
            "{a:?}"
        );
        assert!(tmp.is_dir(), "the JVM needs the folder to exist");
    }

    #[test]
    fn direct_memory_covers_the_pool_only_when_it_is_on() {
        let mut c = BTreeMap::new();
        assert_eq!(direct_memory_mb(&c), DIRECT_BASE_MB);
        c.insert("transientStorePoolEnable".to_owned(), "true".to_owned());
        c.insert("mappedFileSizeCommitLog".to_owned(), "134217728".to_owned());
        // 5 buffers of 128 MiB (RocketMQ's default pool size).
        assert_eq!(direct_memory_mb(&c), DIRECT_BASE_MB + 640);
    }

    #[test]
    fn the_cell_keys_win_but_ports_address_and_name_server_are_the_harness_s() {
        let cell: BTreeMap<String, String> = [
            ("listenPort", "0"),
            ("mappedFileSizeCommitLog", "1073741824"),
            ("brokerName", "b1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let ns = SocketAddr::from(([127, 0, 0, 1], 9));
        let c = broker_conf(&cell, "5.3.3", BrokerPorts { listen: 20000 }, ns);
        assert_eq!(c["listenPort"], "20000");
        assert_eq!(c["haListenPort"], "20001");
        assert_eq!(c["brokerIP1"], "127.0.0.1");
        assert_eq!(c["brokerName"], "b1");
        assert_eq!(c["mappedFileSizeCommitLog"], "1073741824");
        assert_eq!(c["timerWheelEnable"], "false");
        assert_eq!(c["namesrvAddr"], "127.0.0.1:9");
        let c4 = broker_conf(&cell, "4.9.7", BrokerPorts { listen: 20000 }, ns);
        assert!(!c4.contains_key("timerWheelEnable"), "not a 4.9 key");
    }

    #[test]
    fn a_slave_keeps_its_id_role_name_and_master_and_gets_ports_of_its_own() {
        // What `cluster::slaves::slave_conf` hands the kind: the master's keys made a slave.
        let slave: BTreeMap<String, String> = [
            ("brokerRole", "SLAVE"),
            ("brokerId", "1"),
            ("brokerName", "broker-0"),
            ("namesrvAddr", "127.0.0.1:9"),
            ("haMasterAddress", "127.0.0.1:20001"),
            ("listenPort", "0"),
            ("haListenPort", "0"),
            ("slaveTimeout", "1000"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let ns = SocketAddr::from(([127, 0, 0, 1], 9));
        for version in ["4.9.7", "5.3.3"] {
            let c = broker_conf(&slave, version, BrokerPorts { listen: 30000 }, ns);
            assert_eq!(c["brokerRole"], "SLAVE");
            assert_eq!(c["brokerId"], "1");
            // The master's name (not the harness's default), so the route pairs them.
            assert_eq!(c["brokerName"], "broker-0");
            assert_eq!(c["namesrvAddr"], "127.0.0.1:9");
            // 4.9 connects to the address given; 5.3.3 would ignore it, and learns it from the
            // name server only without it.
            assert_eq!(
                c.get("haMasterAddress").map(String::as_str),
                version.starts_with('4').then_some("127.0.0.1:20001"),
                "{version}"
            );
            assert_eq!(c["brokerIP2"], "127.0.0.1");
            assert_eq!(c["slaveTimeout"], "1000");
            // Its own ports: 4.9 binds listenPort + 1 whatever the key says, 5.3 the key.
            assert_eq!(c["listenPort"], "30000");
            assert_eq!(c["haListenPort"], "30001");
        }
    }

    #[test]
    fn picked_ports_are_free_around_the_listen_port() {
        let p = BrokerPorts::pick().unwrap();
        for q in [p.listen - 2, p.listen, p.ha()] {
            TcpListener::bind((Ipv4Addr::UNSPECIFIED, q)).unwrap();
            assert!(
                chosen_range().contains(&q),
                "{q} outside {:?}",
                chosen_range()
            );
        }
    }
}
