//! The seam for kinds of broker: everything the runner, the cluster, the faults and the
//! reconciliation do to a broker goes through [`BrokerKind`] (start a broker or a name server
//! for a cell with RocketMQ keys, check those keys before the run) and [`Member`] (where one
//! listens, its pid for sampling, stop, kill -9, pause and resume by signal). A restart is a
//! new [`BrokerKind::start_broker`] on the same store and port.
//!
//! Implementations: [`in_tree::InTree`] (broker-under-test processes and the in-process name
//! server), [`apache::Apache`] (Apache RocketMQ's released JVMs) and [`target::Target`]
//! (`--target`: a broker the harness did not start). [`select`] picks each cell's kind; a new
//! kind is a module here plus one arm there.

pub mod apache;
pub mod in_tree;
pub mod select;
pub mod target;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use harness_model::matrix::Cell;
use harness_model::profile::Profile;

/// A kind of broker, shared by every job of a run.
pub type Kind = Arc<dyn BrokerKind>;

/// Who owns a kind's processes, which decides what a job may do with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    /// The harness starts each cell's brokers on fresh stores, may restart them, and reads
    /// their stores back after a fault.
    Owned,
    /// The broker runs already (`--target`): the harness neither starts, restarts nor stops
    /// it, and its keys are not applied.
    External,
}

/// What run.json records about the kind of broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindRecord {
    /// `in-tree`, `target`, `apache`.
    pub kind: &'static str,
    /// The broker's version where the kind has one.
    pub version: Option<String>,
    /// The program that was started (broker-under-test's binary).
    pub binary: Option<PathBuf>,
    /// A checksum of that program (FNV-1a 64 of broker-under-test's binary, sha256 over
    /// Apache's jars).
    pub checksum: Option<String>,
    /// The runtime it runs on (`java -version` for Apache).
    pub runtime: Option<String>,
}

/// One member to start: its broker.conf keys (RocketMQ names), where its files go
/// (`<dir>/<stem>.conf`, `<dir>/<stem>.log`), its CPUs and how long it may take to be ready.
#[derive(Debug, Clone, Copy)]
pub struct MemberSpec<'a> {
    pub stem: &'a str,
    pub dir: &'a Path,
    pub conf: &'a BTreeMap<String, String>,
    pub cpus: Option<&'a [usize]>,
    pub ready: Duration,
}

impl<'a> MemberSpec<'a> {
    /// A member with files `<dir>/<stem>.*`, unpinned, 20 s to be ready.
    pub fn new(stem: &'a str, dir: &'a Path, conf: &'a BTreeMap<String, String>) -> Self {
        MemberSpec {
            stem,
            dir,
            conf,
            cpus: None,
            ready: Duration::from_secs(20),
        }
    }

    pub fn pinned(mut self, cpus: Option<&'a [usize]>) -> Self {
        self.cpus = cpus;
        self
    }

    pub fn ready_within(mut self, ready: Duration) -> Self {
        self.ready = ready;
        self
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join(format!("{}.log", self.stem))
    }

    pub fn conf_path(&self) -> PathBuf {
        self.dir.join(format!("{}.conf", self.stem))
    }
}

/// Why a member did not start. Each makes the cell invalid with this text as its reason.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("writing {path}: {source}")]
    Conf {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The member did not come up; `last_line` is its log's last words (usually the reason).
    #[error("{reason}{}", last_line.as_deref().map(|l| format!(": {l}")).unwrap_or_default())]
    Failed {
        reason: String,
        last_line: Option<String>,
    },
    /// The member's process exited before it was ready; `last_line` as in `Failed`. Apart
    /// from `Failed` so that the rows say, as a value, that a broker exited (the advice of
    /// `InvalidKind::BrokerExited`: read its log).
    #[error("{reason}{}", last_line.as_deref().map(|l| format!(": {l}")).unwrap_or_default())]
    Exited {
        reason: String,
        last_line: Option<String>,
    },
    /// The kind cannot do this (start a name server for `--target`, say).
    #[error("{0}")]
    Unsupported(String),
}

impl StartError {
    /// A failure with the log's telling line appended: the last non-empty line, or, when the
    /// log ends in a Java stack trace, the exception line above its frames (the frames'
    /// last line, `at ...main(BrokerStartup.java:52)`, says nothing about why).
    pub fn with_log(reason: impl ToString, log: &Path) -> StartError {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        StartError::Failed {
            reason: reason.to_string(),
            last_line: telling_line(&text),
        }
    }

    /// [`StartError::with_log`] of a member whose process exited before it was ready.
    pub fn exited(reason: impl ToString, log: &Path) -> StartError {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        StartError::Exited {
            reason: reason.to_string(),
            last_line: telling_line(&text),
        }
    }

    /// Whether the member lost a race for its port (another process bound it between the
    /// harness choosing it and the JVM binding it): worth one more try on other ports.
    pub fn lost_a_port(&self) -> bool {
        matches!(self, StartError::Failed { last_line: Some(l), .. } | StartError::Exited { last_line: Some(l), .. }
            if l.contains("Address already in use") || l.contains("Failed to bind"))
    }

    /// The kind of invalid row a broker's failed start makes, when the advice knows it.
    pub fn kind(&self) -> Option<harness_results::InvalidKind> {
        matches!(self, StartError::Exited { .. })
            .then_some(harness_results::InvalidKind::BrokerExited)
    }
}

/// The last non-empty line of `text`, skipping a stack trace's frames (`at ...`, `... 3 more`).
fn telling_line(text: &str) -> Option<String> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty()).rev();
    let last = lines.next()?;
    let is_frame =
        |l: &str| l.starts_with("at ") || (l.starts_with("... ") && l.ends_with(" more"));
    if !is_frame(last) {
        return Some(last.to_owned());
    }
    Some(lines.find(|l| !is_frame(l)).unwrap_or(last).to_owned())
}

/// A kind of broker.
pub trait BrokerKind: Send + Sync {
    fn record(&self) -> KindRecord;

    fn lifecycle(&self) -> Lifecycle;

    /// Whether a job may leave its broker stopping beside the next job's start (see
    /// `runner::reaper`): for a broker whose clean stop takes long and whose exit status
    /// at that point says nothing the job's figures need.
    fn stops_in_background(&self) -> bool {
        false
    }

    /// Refuses the run before cell 1 when a cell sets a key this kind does not take (an
    /// invalid-input error: exit 3, naming the key and the fix).
    fn check_cells(&self, profile: &Profile, cells: &[Cell]) -> anyhow::Result<()>;

    /// Starts one broker with `spec.conf` and waits until it is ready.
    fn start_broker(&self, spec: &MemberSpec<'_>) -> Result<Box<dyn Member>, StartError>;

    /// Starts a name server for a cell's cluster, its log in `dir`.
    fn start_namesrv(&self, dir: &Path) -> Result<Box<dyn NameServer>, StartError>;
}

/// One running broker.
pub trait Member: Send {
    /// Where it answers requests.
    fn addr(&self) -> SocketAddr;

    /// Its replication port, waiting up to `wait` to learn it; None for a broker that does
    /// not replicate.
    fn ha_addr(&self, wait: Duration) -> Option<SocketAddr>;

    /// Its process, for sampling and signals; None for a broker whose pid is not known.
    fn pid(&self) -> Option<u32>;

    /// Whether a slave has connected to this master and made its first offset report, for a
    /// broker that tells it only outside its protocol (Apache: no version has HA figures in
    /// GET_BROKER_RUNTIME_INFO). None: ask its runtime info (broker-under-test's
    /// `haSlaveConnections` and `haSlaveRequestOffset`).
    fn slave_reported(&self) -> Option<bool> {
        None
    }

    /// The exit status once it has exited (never for a broker the harness does not own).
    fn exited(&mut self) -> Option<ExitStatus>;

    /// SIGKILL, returning once the process is gone (its files are what the kernel holds).
    fn kill9(&mut self) -> std::io::Result<()>;

    /// Sends a signal (SIGSTOP, SIGCONT) to it.
    fn signal(&self, signal: i32) -> std::io::Result<()>;

    /// SIGTERM, then SIGKILL after `grace`; the exit status. A broker the harness does not
    /// own is left running (None).
    fn stop(self: Box<Self>, grace: Duration) -> Option<ExitStatus>;

    /// Ends a broker whose store nobody reads again, once its job's figures are taken: the
    /// kind's quickest end. By default its [`Member::stop`]; a kind whose clean stop is slow
    /// and says nothing then (a JVM) may kill it. The exit status, when there is one to judge.
    fn discard(self: Box<Self>, grace: Duration) -> Option<ExitStatus> {
        self.stop(grace)
    }
}

/// A running name server.
pub trait NameServer: Send {
    fn addr(&self) -> SocketAddr;

    /// Stops it; the reason when it did not stop cleanly.
    fn stop(self: Box<Self>) -> Option<String>;

    /// Ends a name server whose cluster is being discarded ([`Member::discard`]): by default
    /// its [`NameServer::stop`].
    fn discard(self: Box<Self>) {
        if let Some(reason) = self.stop() {
            eprintln!("{reason}");
        }
    }
}

/// Writes `broker.conf` style `key=value` lines (sorted) to `path` and returns the text.
pub fn write_conf(path: &Path, conf: &BTreeMap<String, String>) -> std::io::Result<String> {
    let text: String = conf.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    std::fs::write(path, &text)?;
    Ok(text)
}

/// [`BrokerKind::check_cells`]'s verdict: Ok with no problems, else every problem at once as
/// invalid input (exit 3).
pub fn refuse_cells(problems: Vec<String>) -> anyhow::Result<()> {
    if problems.is_empty() {
        return Ok(());
    }
    Err(crate::exit::invalid(anyhow::anyhow!(
        "{} problem{} with the broker configuration, nothing was run:\n{}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" },
        problems.join("\n")
    )))
}

/// Waits until the name server's cluster table lists a broker on `addr`'s port (§7.4: a broker
/// registers on start, then every 30 s; a slow first registration must not be mistaken for a
/// ready broker), or `stop()` says to give up. Loopback only, so the port names the broker
/// whatever address string it registered with.
pub fn registered(
    namesrv: SocketAddr,
    addr: SocketAddr,
    within: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<(), String> {
    let end = std::time::Instant::now() + within;
    let port = addr.port();
    loop {
        let last = match rmq_client::name_server::cluster_info(namesrv) {
            Ok(info) => {
                let listed = info.broker_addr_table.values().any(|b| {
                    b.broker_addrs
                        .values()
                        .any(|a| a.parse::<SocketAddr>().is_ok_and(|a| a.port() == port))
                });
                if listed {
                    return Ok(());
                }
                "not in the cluster table".to_owned()
            }
            Err(e) => e.to_string(),
        };
        if std::time::Instant::now() >= end || stop() {
            return Err(format!(
                "the broker {addr} is not registered with the name server {namesrv} after {within:?} ({last})"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_trace_is_told_by_its_exception_line() {
        // The shape of 5.3.3's BrokerStartup failing in start() (printStackTrace, exit -1).
        let log = "\
java.lang.IllegalStateException: Failed to bind to 0.0.0.0:30912
\tat org.apache.rocketmq.remoting.netty.NettyRemotingServer.start(NettyRemotingServer.java:236)
Caused by: java.net.BindException: Address already in use
\tat java.base/sun.nio.ch.Net.bind0(Native Method)
\t... 5 more
";
        assert_eq!(
            telling_line(log).as_deref(),
            Some("Caused by: java.net.BindException: Address already in use")
        );
        let e = StartError::Failed {
            reason: "exited".into(),
            last_line: telling_line(log),
        };
        assert!(e.lost_a_port());
        assert_eq!(
            telling_line("boot failed\n\n").as_deref(),
            Some("boot failed")
        );
        assert_eq!(
            telling_line("\tat a.b(C.java:1)\n").as_deref(),
            Some("at a.b(C.java:1)")
        );
        assert_eq!(telling_line(""), None);
        assert!(!StartError::Failed {
            reason: "x".into(),
            last_line: Some("OutOfMemoryError".into())
        }
        .lost_a_port());
    }
}
