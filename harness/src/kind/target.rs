//! Brokers the harness did not start: `--target HOST:PORT` (one broker) and `--namesrv
//! HOST:PORT` (a cluster found through its name server's routes). Their keys are not applied,
//! they are never stopped or restarted, and they are signalled (pause, kill) only through
//! `--broker-pid`.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use harness_model::matrix::Cell;
use harness_model::profile::Profile;

use super::{BrokerKind, KindRecord, Lifecycle, Member, MemberSpec, NameServer, StartError};
use crate::proc::pin::send_signal;

/// Brokers that run already.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// `--target`: one broker, its pid when given with `--broker-pid`.
    Broker(Existing),
    /// `--namesrv`: the cluster behind this name server (`cluster::JobCluster` reads it).
    Cluster(SocketAddr),
}

/// A broker that runs already, at `addr`.
#[derive(Debug, Clone, Copy)]
pub struct Existing {
    pub addr: SocketAddr,
    pub pid: Option<u32>,
}

impl BrokerKind for Target {
    fn record(&self) -> KindRecord {
        KindRecord {
            kind: "target",
            version: None,
            binary: None,
            checksum: None,
            runtime: None,
        }
    }

    fn lifecycle(&self) -> Lifecycle {
        Lifecycle::External
    }

    /// Nothing to check: the broker runs with its own configuration (run.rs warns that the
    /// profile's keys are recorded, not applied).
    fn check_cells(&self, _profile: &Profile, _cells: &[Cell]) -> anyhow::Result<()> {
        Ok(())
    }

    /// "Starts" the broker that runs already: every job drives the same one.
    fn start_broker(&self, _spec: &MemberSpec<'_>) -> Result<Box<dyn Member>, StartError> {
        match self {
            Target::Broker(b) => Ok(Box::new(*b)),
            Target::Cluster(ns) => Err(StartError::Unsupported(format!(
                "the brokers behind --namesrv {ns} run already; they are found through its routes"
            ))),
        }
    }

    fn start_namesrv(&self, _dir: &Path) -> Result<Box<dyn NameServer>, StartError> {
        Err(StartError::Unsupported(
            "brokers that run already have their own name server: use --namesrv HOST:PORT".into(),
        ))
    }
}

impl Member for Existing {
    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn ha_addr(&self, _wait: Duration) -> Option<SocketAddr> {
        None
    }

    fn pid(&self) -> Option<u32> {
        self.pid
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        None
    }

    fn kill9(&mut self) -> std::io::Result<()> {
        let pid = self.pid.ok_or_else(|| {
            std::io::Error::other(
                "kill needs the broker's pid: pass --broker-pid PID with --target",
            )
        })?;
        send_signal(pid, libc::SIGKILL)
    }

    fn signal(&self, signal: i32) -> std::io::Result<()> {
        let pid = self.pid.ok_or_else(|| {
            std::io::Error::other(
                "a signal needs the broker's pid: pass --broker-pid PID with --target",
            )
        })?;
        send_signal(pid, signal)
    }

    /// Not ours to stop.
    fn stop(self: Box<Self>, _grace: Duration) -> Option<ExitStatus> {
        None
    }
}
