//! Starting and stopping `broker-under-test` for a cell, CPU pinning, and process sampling.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

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

/// CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most size_of::<cpu_set_t>().
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            return (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect();
        }
    }
    (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
}

/// Pins the calling thread (and threads it spawns later) to `cpus`.
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    // SAFETY: the set is initialised by CPU_ZERO/CPU_SET before use.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Splits the allowed CPUs: the broker gets the first half, the generator the rest.
pub fn split_cpus(cpus: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
    if cpus.len() < 2 {
        return None;
    }
    let half = cpus.len() / 2;
    Some((cpus[..half].to_vec(), cpus[half..].to_vec()))
}

/// Writes `broker.conf` (key=value lines, sorted) and returns its text.
pub fn write_conf(path: &Path, conf: &BTreeMap<String, String>) -> std::io::Result<String> {
    let text: String = conf.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    std::fs::write(path, &text)?;
    Ok(text)
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

/// Sends `signal` to process `pid` (a broker the harness started, or `--broker-pid`).
pub fn send_signal(pid: u32, signal: i32) -> std::io::Result<()> {
    // SAFETY: kill(2) has no memory preconditions; a wrong pid is reported as an error.
    if unsafe { libc::kill(pid as libc::pid_t, signal) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// CPU% (of one core) and RSS of a process, via sysinfo.
pub struct ProcSampler {
    sys: System,
    pid: Pid,
}

impl ProcSampler {
    pub fn new(pid: u32) -> ProcSampler {
        let mut s = ProcSampler {
            sys: System::new(),
            pid: Pid::from_u32(pid),
        };
        s.sample();
        s
    }

    /// `(cpu %, rss MiB)` since the previous call; None when the process is gone.
    pub fn sample(&mut self) -> Option<(f64, f64)> {
        self.sys.refresh_processes_specifics(
            ProcessesToUpdate::Some(&[self.pid]),
            true,
            ProcessRefreshKind::nothing().with_cpu().with_memory(),
        );
        let p = self.sys.process(self.pid)?;
        Some((
            f64::from(p.cpu_usage()),
            p.memory() as f64 / (1024.0 * 1024.0),
        ))
    }
}

/// This process's resident memory in MiB, from `/proc/self/statm` (resident pages × page
/// size); `None` where that file does not exist.
pub fn self_rss_mb() -> Option<f64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let resident: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions; it only reads a system constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (page > 0).then(|| (resident * page as u64) as f64 / (1024.0 * 1024.0))
}

/// This process's CPU time (user + system).
pub fn self_cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct we pass.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut ru) != 0 {
            return Duration::ZERO;
        }
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
        tv(ru.ru_utime) + tv(ru.ru_stime)
    }
}
