//! A version's fetched jars: where they are, the broker's own key list, their checksum and
//! the java that runs them. `scripts/apache-jars.sh` fetches them; this only reads the cache.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use super::conf::Cds;

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
    /// The class-data archives its JVMs map ([`super::cds::ensure`] sets them).
    pub cds: Cds,
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
            cds: Cds::Off,
        })
    }
}
