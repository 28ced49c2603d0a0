//! Apache RocketMQ itself as a kind of broker: the released name server and broker JVMs of a
//! pinned version (`apache/<version>/pom.xml`, fetched from Maven Central into
//! `target/apache/<version>` by `scripts/apache-jars.sh`, on first use or by `make apache`),
//! started per cell with the cell's RocketMQ keys. Reference: `apache-rocketmq-java.md`.
//!
//! * conf.rs   — broker.conf, ports, logging files and the JVM's command line
//! * cds.rs    — class-data archives that shorten each JVM's boot
//! * jars.rs   — a version's fetched jars, key list and checksum
//! * jvm.rs    — one JVM: start, boot line, SIGTERM then SIGKILL
//! * member.rs — a broker as a [`Member`], a name server; readiness; key check

mod cds;
mod conf;
mod jars;
mod jvm;
mod member;

pub use jars::{cache_dir, Jars};

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use harness_model::matrix::Cell;
use harness_model::profile::{bare_key, did_you_mean, Profile};

use super::{BrokerKind, KindRecord, Lifecycle, Member, MemberSpec, NameServer, StartError};

/// Apache RocketMQ `version`.
pub struct Apache {
    pub version: String,
    pub jars: Jars,
    /// The run's name server for brokers whose keys name none, started by the first of them
    /// ([`Apache::shared_namesrv`]); killed when the run drops the kind.
    namesrv: Mutex<SharedNamesrv>,
    /// Where that name server's files go; None: beside the first broker's cell folder.
    namesrv_dir: Option<PathBuf>,
}

/// The run's name server and how many were started (a second only if the first died).
#[derive(Default)]
struct SharedNamesrv {
    running: Option<member::ApacheNameServer>,
    started: u32,
}

impl Apache {
    /// `namesrv_dir`: where the shared name server's files go (a kind kept across runs,
    /// [`super::select::KindCache`]); None puts them in the run's folder.
    pub fn new(version: &str, namesrv_dir: Option<PathBuf>) -> anyhow::Result<Apache> {
        let mut jars = Jars::ensure(version)?;
        jars.cds = cds::ensure(&jars, version);
        Ok(Apache {
            version: version.to_owned(),
            jars,
            namesrv: Mutex::default(),
            namesrv_dir,
        })
    }

    /// The name server of every broker of the run whose keys name none, started for the first
    /// of them with its files `apache-<version>-namesrv.*` beside that broker's cell folder
    /// (the run's folder), or in `namesrv_dir` for a kind kept across runs (then it serves
    /// them all). It runs on the harness's CPUs (it inherits their mask), not on the
    /// core of the broker under test, where each cell's own name server used to idle.
    ///
    /// One per run, not one per cell: a name server's boot took 1.6-1.8 s on about 40 Apache
    /// starts of the whole fidelity run. The cells of a run follow each other, so a broker
    /// under the name `broker-a` replaces the last one's address in the route: a killed
    /// broker's entry goes when its connection closes, and 5.3.3's stateVersion stays 0
    /// outside controller mode, so a later registration is never refused as older.
    fn shared_namesrv(&self, spec: &MemberSpec<'_>) -> Result<SocketAddr, StartError> {
        let mut shared = self.namesrv.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(ns) = shared.running.as_mut() {
            if ns.running() {
                return Ok(ns.addr());
            }
        }
        shared.started += 1;
        let stem = match shared.started {
            1 => format!("apache-{}-namesrv", self.version),
            n => format!("apache-{}-namesrv-{n}", self.version),
        };
        let dir = match &self.namesrv_dir {
            Some(d) => d.as_path(),
            None => spec.dir.parent().unwrap_or(spec.dir),
        };
        let ns = member::start_namesrv(&self.jars, &self.version, dir, &stem, None)?;
        let addr = ns.addr();
        shared.running = Some(ns);
        Ok(addr)
    }

    /// Why `key` cannot go into this version's broker.conf, if it cannot.
    fn refuse(&self, key: &str, in_tree: &BTreeSet<String>) -> Option<String> {
        let bare = bare_key(key);
        if self.jars.keys.contains_key(bare) {
            return None;
        }
        let why = if in_tree.contains(bare) {
            "a key of broker-under-test only (the model's injection and switches have no counterpart in RocketMQ)".to_owned()
        } else {
            let names: Vec<&str> = self.jars.keys.keys().map(String::as_str).collect();
            match did_you_mean(bare, &names) {
                Some(k) => format!("no such key; did you mean `{k}`?"),
                None => "no such key".to_owned(),
            }
        };
        Some(format!(
            "broker key `{key}` cannot run on Apache RocketMQ {}: {why} (Apache would ignore it in silence; `BrokerStartup -p` lists {} keys in {})",
            self.version,
            self.jars.keys.len(),
            cache_dir().join(&self.version).join("keys.txt").display()
        ))
    }
}

impl BrokerKind for Apache {
    fn record(&self) -> KindRecord {
        KindRecord {
            kind: "apache",
            version: Some(self.version.clone()),
            binary: Some(self.jars.lib.clone()),
            checksum: Some(self.jars.checksum.clone()),
            runtime: Some(self.jars.runtime.clone()),
        }
    }

    fn lifecycle(&self) -> Lifecycle {
        Lifecycle::Owned
    }

    /// A JVM's shutdown hook takes 12-15 s; broker-under-test stops in well under a second,
    /// and its exit status at shutdown is checked (a model that fails at stop is a bug).
    fn stops_in_background(&self) -> bool {
        true
    }

    /// Every key a cell sets must be one of this version's (Apache ignores the others).
    fn check_cells(&self, profile: &Profile, cells: &[Cell]) -> anyhow::Result<()> {
        // broker-under-test's own keys, to say why one of them is refused here.
        let in_tree: BTreeSet<String> = super::in_tree::InTree::locate(None)
            .ok()
            .and_then(|k| crate::broker_keys::BrokerKeys::from_binary(k.bin()).ok())
            .map(|k| k.names().map(str::to_owned).collect())
            .unwrap_or_default();
        let mut problems = BTreeSet::new();
        for cell in cells {
            for key in cell.broker.keys() {
                if harness_model::profile::is_harness_key(key) {
                    continue;
                }
                if let Some(why) = self.refuse(key, &in_tree) {
                    let at = profile
                        .broker_origins
                        .get(key)
                        .cloned()
                        .unwrap_or_else(|| profile.path.display().to_string());
                    problems.insert(format!("{at}: {why}"));
                }
            }
        }
        super::refuse_cells(problems.into_iter().collect())
    }

    fn start_broker(&self, spec: &MemberSpec<'_>) -> Result<Box<dyn Member>, StartError> {
        Ok(Box::new(member::start_broker(
            &self.jars,
            &self.version,
            spec,
            || self.shared_namesrv(spec),
        )?))
    }

    fn start_namesrv(&self, dir: &Path) -> Result<Box<dyn NameServer>, StartError> {
        Ok(Box::new(member::start_namesrv(
            &self.jars,
            &self.version,
            dir,
            "namesrv",
            None,
        )?))
    }
}
