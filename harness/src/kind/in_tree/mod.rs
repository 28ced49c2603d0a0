//! broker-under-test as a kind of broker: its processes ([`process::BrokerProcess`]), its key
//! checks (`--list-keys`, `--strict --check`) and the in-tree name server, run in-process on
//! its own one-thread runtime.

pub mod process;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use anyhow::Context;
use harness_model::matrix::Cell;
use harness_model::profile::Profile;
use name_server::{NamesrvConfig, RunningNameServer};

use self::process::{locate_or_build, BrokerError, BrokerProcess};
use super::{
    write_conf, BrokerKind, KindRecord, Lifecycle, Member, MemberSpec, NameServer, StartError,
};
use crate::broker_keys::{check_cells, BrokerKeys};
use crate::proc::pin::send_signal;

/// broker-under-test, started from `bin`.
pub struct InTree {
    bin: PathBuf,
}

impl InTree {
    /// The binary named with `--broker-bin`, else found (and built under cargo) as
    /// [`locate_or_build`] does.
    pub fn locate(explicit: Option<&Path>) -> Result<InTree, BrokerError> {
        Ok(InTree {
            bin: locate_or_build(explicit)?,
        })
    }

    pub fn new(bin: PathBuf) -> InTree {
        InTree { bin }
    }

    pub fn bin(&self) -> &Path {
        &self.bin
    }
}

impl BrokerKind for InTree {
    fn record(&self) -> KindRecord {
        KindRecord {
            kind: "in-tree",
            version: None,
            binary: Some(self.bin.clone()),
            checksum: crate::provenance::file_hash(&self.bin),
            runtime: None,
        }
    }

    fn lifecycle(&self) -> Lifecycle {
        Lifecycle::Owned
    }

    /// The profile's keys against the broker's key list, then every cell's effective
    /// configuration through the broker's own `--strict --check`. All problems at once, as
    /// invalid input (exit 3).
    fn check_cells(&self, profile: &Profile, cells: &[Cell]) -> anyhow::Result<()> {
        let bin = self.bin.as_path();
        let keys = BrokerKeys::from_binary(bin)?;
        let mut problems = keys.check_profile(profile);
        if problems.is_empty() {
            let scratch = tempfile::tempdir().context("creating a scratch folder for --check")?;
            let store = scratch.path().join("store");
            // Brokers 1.. of a cluster have their own keys: their configurations too.
            let most = cells.iter().filter_map(|c| c.brokers).max().unwrap_or(1);
            for i in 0..most.max(1) as usize {
                let confs: Vec<_> = cells
                    .iter()
                    .map(|c| crate::cluster::broker_conf(c, i, &store, None))
                    .collect();
                problems.extend(check_cells(bin, cells, &confs, scratch.path())?);
            }
        }
        super::refuse_cells(problems)
    }

    fn start_broker(&self, spec: &MemberSpec<'_>) -> Result<Box<dyn Member>, StartError> {
        let conf_path = spec.conf_path();
        write_conf(&conf_path, spec.conf).map_err(|source| StartError::Conf {
            path: conf_path.clone(),
            source,
        })?;
        let log = spec.log_path();
        match BrokerProcess::start(&self.bin, &conf_path, &log, spec.cpus, spec.ready) {
            Ok(p) => Ok(Box::new(p)),
            // The broker's last words are usually the reason (a config error).
            Err(e @ BrokerError::ExitedEarly(_)) => Err(StartError::exited(e, &log)),
            Err(e) => Err(StartError::with_log(e, &log)),
        }
    }

    fn start_namesrv(&self, dir: &Path) -> Result<Box<dyn NameServer>, StartError> {
        let failed = |reason: String| StartError::Failed {
            reason,
            last_line: None,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("harness-namesrv")
            .enable_all()
            .build()
            .map_err(|e| failed(format!("starting the name server's runtime: {e}")))?;
        let mut config = NamesrvConfig::load(None, &["listenPort=0".to_owned()])
            .map_err(|e| failed(format!("name server configuration: {e}")))?;
        config.log_file = Some(dir.join("namesrv.log"));
        let ns = runtime
            .block_on(RunningNameServer::start(config))
            .map_err(|e| failed(format!("starting the name server: {e:#}")))?;
        Ok(Box::new(InProcessNameServer {
            addr: ns.addr,
            runtime: Some(runtime),
            ns: Some(ns),
        }))
    }
}

impl Member for BrokerProcess {
    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn ha_addr(&self, wait: Duration) -> Option<SocketAddr> {
        BrokerProcess::ha_addr(self, wait)
    }

    fn pid(&self) -> Option<u32> {
        Some(self.pid)
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        BrokerProcess::exited(self)
    }

    fn kill9(&mut self) -> std::io::Result<()> {
        BrokerProcess::kill9(self);
        Ok(())
    }

    fn signal(&self, signal: i32) -> std::io::Result<()> {
        send_signal(self.pid, signal)
    }

    fn stop(self: Box<Self>, grace: Duration) -> Option<ExitStatus> {
        BrokerProcess::stop(*self, grace)
    }
}

/// The in-tree name server on its own one-thread runtime.
struct InProcessNameServer {
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
    ns: Option<RunningNameServer>,
}

impl InProcessNameServer {
    fn shutdown(&mut self) -> Option<String> {
        let mut reason = None;
        if let (Some(rt), Some(ns)) = (self.runtime.as_ref(), self.ns.take()) {
            if let Err(e) = rt.block_on(ns.stop()) {
                reason = Some(format!("name server: {e:#}"));
            }
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(2));
        }
        reason
    }
}

impl NameServer for InProcessNameServer {
    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn stop(mut self: Box<Self>) -> Option<String> {
        self.shutdown()
    }
}

impl Drop for InProcessNameServer {
    fn drop(&mut self) {
        if let Some(reason) = self.shutdown() {
            eprintln!("{reason}");
        }
    }
}
