//! Class-data sharing for the Apache JVMs: each version's name server and broker map a dynamic
//! CDS archive of the classes their boot loads (`-XX:SharedArchiveFile`), written once per JDK
//! by a name server and a broker started with `-XX:ArchiveClassesAtExit` and stopped cleanly
//! (HotSpot writes the archive at a clean exit only; a SIGKILL writes nothing).
//!
//! Why: a whole fidelity run starts about 40 Apache JVMs. Measured on this machine (OpenJDK
//! 17.0.15, 2 cores, 7 December), from a cell's first line to its load, in two runs each of
//! `harness run profiles/fidelity/pool-throughput.toml --set broker.kind=apache`: the first
//! cell (name server and broker) took 6.7-7.0 s without the archives and 5.1-5.2 s with them,
//! the second (a broker) 3.8 s and 3.1-3.2 s. Only the loading and verifying of classes moves;
//! the JIT starts cold either way, so what a cell measures after its warm-up does not change.
//!
//! An archive belongs to one JDK build and one class path: it is kept under
//! `<cache>/<version>/cds/<key>/`, the key a hash of the `java` used, its `-version` line and
//! the jars' checksum. A JVM that cannot use an archive after all says so in its log and runs
//! without it (`-Xshare:auto`, the default). Writing one took 18-22 s here (a 5.3.3 broker's
//! clean stop takes 9); a failure is a warning, and the JVMs run without.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;

use harness_model::fnv::fnv1a64;

use super::conf::Cds;
use super::jars::{cache_dir, Jars};
use super::member;
use crate::kind::{Member, MemberSpec};

const NAMESRV_FILE: &str = "namesrv.jsa";
const BROKER_FILE: &str = "broker.jsa";

/// The archives for `jars`, written first when missing. `HARNESS_APACHE_CDS=0` turns them off.
pub fn ensure(jars: &Jars, version: &str) -> Cds {
    if std::env::var("HARNESS_APACHE_CDS").is_ok_and(|v| v == "0") {
        return Cds::Off;
    }
    let key = fnv1a64(
        format!(
            "{}\n{}\n{}",
            jars.java.display(),
            jars.runtime,
            jars.checksum
        )
        .as_bytes(),
    );
    let dir = cache_dir()
        .join(version)
        .join("cds")
        .join(format!("{key:016x}"));
    let using = Cds::Use {
        namesrv: dir.join(NAMESRV_FILE),
        broker: dir.join(BROKER_FILE),
    };
    let present = || dir.join(NAMESRV_FILE).exists() && dir.join(BROKER_FILE).exists();
    if present() {
        return using;
    }
    match write(jars, version, &dir, &present) {
        Ok(()) => using,
        Err(e) => {
            eprintln!(
                "warning: no class-data archive for Apache RocketMQ {version} ({e}); its JVMs boot without one, about 0.5 s slower each"
            );
            Cds::Off
        }
    }
}

/// Starts a name server and a broker that write their archives at exit, and stops them
/// cleanly. Another process writing the same archives is waited for (a lock file).
fn write(jars: &Jars, version: &str, dir: &Path, present: &dyn Fn() -> bool) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let lock = File::create(dir.join("lock"))?;
    // Held until `lock` drops (the end of this function); std's File::lock needs Rust 1.89,
    // above the workspace's MSRV.
    // SAFETY: flock on a file descriptor this function owns.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    if present() {
        return Ok(());
    }
    eprintln!(
        "writing a class-data archive for Apache RocketMQ {version} (once per JDK, about 20 s) into {}",
        dir.display()
    );
    let work = dir.join(format!("writing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let mut writing = jars.clone();
    writing.cds = Cds::Write {
        namesrv: work.join(NAMESRV_FILE),
        broker: work.join(BROKER_FILE),
    };
    let result = boot_and_stop(&writing, version, &work).and_then(|()| {
        for f in [NAMESRV_FILE, BROKER_FILE] {
            let from = work.join(f);
            if !from.exists() {
                anyhow::bail!(
                    "the JVM wrote no {f} at its exit (see the logs under {})",
                    work.display()
                );
            }
        }
        // The broker's first: `present` looks for both.
        for f in [BROKER_FILE, NAMESRV_FILE] {
            std::fs::rename(work.join(f), dir.join(f))?;
        }
        Ok(())
    });
    if result.is_ok() {
        let _ = std::fs::remove_dir_all(&work);
    }
    result
}

/// A name server and a broker of `jars`, booted to readiness (the broker's keys read back, its
/// stats sampled, as for a cell) and stopped with SIGTERM.
fn boot_and_stop(jars: &Jars, version: &str, work: &Path) -> anyhow::Result<()> {
    let namesrv = member::start_namesrv(jars, version, work, "namesrv", None)?;
    let addr = crate::kind::NameServer::addr(&namesrv);
    let conf = BTreeMap::new();
    let spec = MemberSpec::new("broker", work, &conf).ready_within(Duration::from_secs(60));
    let broker = member::start_broker(jars, version, &spec, || Ok(addr));
    let stopped = match broker {
        Ok(b) => {
            let status = Box::new(b).stop(Duration::from_secs(30));
            match status {
                Some(s) if s.success() => Ok(()),
                other => Err(anyhow::anyhow!(
                    "the broker did not stop cleanly ({other:?})"
                )),
            }
        }
        Err(e) => Err(anyhow::Error::new(e)),
    };
    let ns = crate::kind::NameServer::stop(Box::new(namesrv));
    stopped?;
    match ns {
        None => Ok(()),
        Some(why) => Err(anyhow::anyhow!(why)),
    }
}
