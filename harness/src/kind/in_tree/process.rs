//! One `broker-under-test` process: finding the binary, starting it with a broker.conf, its
//! `listening on` line, stopping and killing it.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::proc::pin::{pin_current_thread, send_signal};

/// Broker lifecycle failures; each makes the cell invalid with this text as the reason.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("broker-under-test binary not found (looked at {0}); build it with `cargo build --release -p broker-under-test` or pass --broker-bin")]
    NotFound(String),
    #[error("cannot start {bin}: {source}")]
    Spawn {
        bin: PathBuf,
        source: std::io::Error,
    },
    #[error("broker exited before it was ready ({0}); see broker.log")]
    ExitedEarly(String),
    #[error("broker printed no `listening on` line within {0:?}; see broker.log")]
    NotReady(Duration),
    #[error("bad `listening on` line: {0}")]
    BadAddress(String),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// Finds the broker binary: explicit path, `BROKER_UNDER_TEST_BIN`, next to the running
/// executable (same target dir; also from `target/<profile>/deps` for tests), then the
/// workspace's `target/{release,debug}`.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, BrokerError> {
    if let Some(p) = explicit {
        if !p.is_file() {
            return Err(BrokerError::NotFound(format!(
                "{} (given with --broker-bin)",
                p.display()
            )));
        }
        return Ok(p.to_owned());
    }
    if let Some(p) = std::env::var_os("BROKER_UNDER_TEST_BIN") {
        return Ok(PathBuf::from(p));
    }
    let name = "broker-under-test";
    let mut tried = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(2) {
            tried.push(dir.join(name));
        }
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."));
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        tried.push(PathBuf::from(&t).join("release").join(name));
        tried.push(PathBuf::from(&t).join("debug").join(name));
    }
    tried.push(workspace.join("target/release").join(name));
    tried.push(workspace.join("target/debug").join(name));
    tried.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        BrokerError::NotFound(
            tried
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        )
    })
}

/// Like [`locate`], but when the harness runs under cargo (`cargo run -p harness`, which sets
/// `$CARGO`) and no binary was named, first runs `cargo build -p broker-under-test` for the same
/// target dir and profile: a no-op when the binary is fresh, and no stale broker is ever used.
pub fn locate_or_build(explicit: Option<&Path>) -> Result<PathBuf, BrokerError> {
    if explicit.is_some() || std::env::var_os("BROKER_UNDER_TEST_BIN").is_some() {
        return locate(explicit);
    }
    let (Some(cargo), Ok(exe)) = (std::env::var_os("CARGO"), std::env::current_exe()) else {
        return locate(None);
    };
    // <target>/<profile>/harness
    let (Some(profile_dir), Some(target)) = (exe.parent(), exe.parent().and_then(Path::parent))
    else {
        return locate(None);
    };
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", "broker-under-test"])
        .env("CARGO_TARGET_DIR", target);
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."));
    match cmd.current_dir(workspace).status() {
        Ok(st) if st.success() => {
            let bin = profile_dir.join("broker-under-test");
            if bin.is_file() {
                return Ok(bin);
            }
            locate(None)
        }
        _ => locate(None),
    }
}

/// A running broker child process.
pub struct BrokerProcess {
    child: Child,
    pub addr: SocketAddr,
    pub pid: u32,
    stdout: Option<JoinHandle<()>>,
    /// The HA port from the second stdout line, `ha listening on IP:PORT` (set by the stdout
    /// reader; never for a broker that does not print it).
    ha: Arc<OnceLock<SocketAddr>>,
}

impl BrokerProcess {
    /// Starts `bin -c conf`, stderr into `log`, pinned to `cpus`; waits for `listening on`.
    pub fn start(
        bin: &Path,
        conf: &Path,
        log: &Path,
        cpus: Option<&[usize]>,
        ready_timeout: Duration,
    ) -> Result<BrokerProcess, BrokerError> {
        let log_file = std::fs::File::create(log)?;
        let mut cmd = Command::new(bin);
        // Unknown keys were refused before the run; --strict keeps any that slip through from
        // being ignored in silence.
        cmd.arg("--strict")
            .arg("-c")
            .arg(conf)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file));
        if let Some(cpus) = cpus {
            let cpus = cpus.to_vec();
            // SAFETY: only sched_setaffinity (async-signal-safe) runs between fork and exec.
            unsafe {
                cmd.pre_exec(move || pin_current_thread(&cpus));
            }
        }
        let mut child = cmd.spawn().map_err(|source| BrokerError::Spawn {
            bin: bin.to_owned(),
            source,
        })?;
        let pid = child.id();
        let out = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout pipe"))?;
        let (tx, rx) = mpsc::sync_channel::<String>(1);
        let ha = Arc::new(OnceLock::new());
        let ha_line = ha.clone();
        // Keeps reading so the broker never blocks on a full pipe; ends at the child's exit.
        let stdout = thread::Builder::new()
            .name("broker-stdout".into())
            .spawn(move || {
                let mut sent = false;
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if !sent && line.starts_with("listening on ") {
                        sent = tx.try_send(line).is_ok();
                    } else if let Some(a) = line.strip_prefix("ha listening on ") {
                        if let Ok(a) = a.trim().parse::<SocketAddr>() {
                            let _ = ha_line.set(a);
                        }
                    }
                }
            })?;
        let mut bp = BrokerProcess {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            pid,
            stdout: Some(stdout),
            ha,
        };
        let deadline = Instant::now() + ready_timeout;
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(line) => {
                    let text = line.trim_start_matches("listening on ").trim();
                    match text.parse::<SocketAddr>() {
                        Ok(a) => {
                            bp.addr = a;
                            return Ok(bp);
                        }
                        Err(_) => {
                            bp.kill();
                            return Err(BrokerError::BadAddress(line));
                        }
                    }
                }
                Err(_) => {
                    if let Some(status) = bp.exited() {
                        bp.kill();
                        return Err(BrokerError::ExitedEarly(status.to_string()));
                    }
                    if Instant::now() >= deadline {
                        bp.kill();
                        return Err(BrokerError::NotReady(ready_timeout));
                    }
                }
            }
        }
    }

    /// The bound HA port (`ha listening on`, printed right after `listening on`), waiting up to
    /// `wait` for the line; None for a broker that does not print it.
    pub fn ha_addr(&self, wait: Duration) -> Option<SocketAddr> {
        let end = Instant::now() + wait;
        loop {
            if let Some(a) = self.ha.get() {
                return Some(*a);
            }
            if Instant::now() >= end {
                return None;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// The exit status if the broker has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL. Returns the exit status.
    pub fn stop(mut self, grace: Duration) -> Option<ExitStatus> {
        if self.exited().is_none() {
            // SAFETY: signalling our own child by pid.
            unsafe {
                libc::kill(self.pid as libc::pid_t, libc::SIGTERM);
            }
            let deadline = Instant::now() + grace;
            while self.exited().is_none() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(20));
            }
        }
        let status = self.exited();
        if status.is_none() {
            self.kill();
        }
        if let Some(h) = self.stdout.take() {
            let _ = h.join();
        }
        status.or_else(|| self.child.wait().ok())
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `kill -9` for a fault experiment: SIGKILL, and wait until the process is gone (its
    /// store files are then exactly what the kernel holds).
    pub fn kill9(&mut self) -> Option<ExitStatus> {
        self.kill();
        self.exited()
    }

    /// Sends `signal` (SIGSTOP, SIGCONT) to the broker.
    pub fn signal(&self, signal: i32) -> std::io::Result<()> {
        send_signal(self.pid, signal)
    }
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        if self.exited().is_none() {
            self.kill();
        }
        if let Some(h) = self.stdout.take() {
            let _ = h.join();
        }
    }
}
