//! Apache RocketMQ itself as a kind of broker: the released name server and broker JVMs of a
//! pinned version (`apache/<version>/pom.xml`, fetched from Maven Central into
//! `target/apache/<version>` by `scripts/apache-jars.sh`, on first use or by `make apache`),
//! started per cell with the cell's RocketMQ keys. Reference: `apache-rocketmq-java.md`.
//!
//! * conf.rs   — broker.conf, ports, logging files and the JVM's command line
//! * jvm.rs    — one JVM: start, boot line, SIGTERM then SIGKILL
//! * member.rs — a broker (and its own name server) as a [`Member`]; readiness; key check

mod conf;
mod jvm;
mod member;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use harness_model::matrix::Cell;
use harness_model::profile::{bare_key, did_you_mean, Profile};

use super::{BrokerKind, KindRecord, Lifecycle, Member, MemberSpec, NameServer, StartError};

/// One version's fetched jars.
#[derive(Debug, Clone)]
pub struct Jars {
    pub lib: PathBuf,
    /// Every broker key with its default, as `BrokerStartup -p` printed it.
    pub keys: BTreeMap<String, String>,
    /// sha256 over the jars.
    pub checksum: String,
    pub java: PathBuf,
    /// `java -version`'s first line.
    pub runtime: String,
}

/// The repository's root (where `apache/` and `scripts/` are).
fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_owned)
        .unwrap_or_default()
}

/// The cache of fetched versions: `APACHE_CACHE`, else `target/apache` in the repository.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("APACHE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target").join("apache"))
}

impl Jars {
    /// The jars of `version`, fetched first when the cache lacks them (the only step that
    /// needs the network; a missing JDK or Maven is named with its Debian package).
    pub fn ensure(version: &str) -> anyhow::Result<Jars> {
        let dir = cache_dir().join(version);
        if !dir.join("complete").exists() {
            let script = repo_root().join("scripts").join("apache-jars.sh");
            let status = Command::new("bash")
                .arg(&script)
                .arg(version)
                .env("APACHE_CACHE", cache_dir())
                .status()
                .with_context(|| format!("running {}", script.display()))?;
            if !status.success() {
                anyhow::bail!(
                    "fetching Apache RocketMQ {version} failed ({status}); the message above names the fix (or run `make apache`)"
                );
            }
        }
        let read = |f: &str| {
            std::fs::read_to_string(dir.join(f))
                .with_context(|| format!("reading {}", dir.join(f).display()))
        };
        let keys = read("keys.txt")?
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let java = std::env::var_os("JAVA_HOME")
            .map(|h| PathBuf::from(h).join("bin").join("java"))
            .unwrap_or_else(|| PathBuf::from("java"));
        Ok(Jars {
            lib: dir.join("lib"),
            keys,
            checksum: read("checksum")?.trim().to_owned(),
            java,
            runtime: read("java")?.trim().to_owned(),
        })
    }
}

/// Apache RocketMQ `version`.
pub struct Apache {
    pub version: String,
    pub jars: Jars,
}

impl Apache {
    pub fn new(version: &str) -> anyhow::Result<Apache> {
        Ok(Apache {
            version: version.to_owned(),
            jars: Jars::ensure(version)?,
        })
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
                if harness_model::profile::is_choice_key(key) {
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
        if problems.is_empty() {
            return Ok(());
        }
        Err(crate::exit::invalid(anyhow::anyhow!(
            "{} problem{} with the broker configuration, nothing was run:\n{}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            problems.into_iter().collect::<Vec<_>>().join("\n")
        )))
    }

    fn start_broker(&self, spec: &MemberSpec<'_>) -> Result<Box<dyn Member>, StartError> {
        Ok(Box::new(member::start_broker(self, spec)?))
    }

    fn start_namesrv(&self, dir: &Path) -> Result<Box<dyn NameServer>, StartError> {
        Ok(Box::new(member::start_namesrv(self, dir, "namesrv", None)?))
    }
}
