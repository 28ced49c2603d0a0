//! One Apache RocketMQ JVM (name server or broker): started with the harness's flags, its
//! stdout and stderr in one log file, ready when its boot line appears, stopped with SIGTERM
//! and, after a deadline, SIGKILL.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::kind::StartError;
use crate::proc::pin::{pin_current_thread, pin_jvm, process_cpus, send_signal};

/// What to start.
pub struct JvmSpec<'a> {
    /// `java` (from `JAVA_HOME` when set).
    pub java: PathBuf,
    /// JVM flags, then `-cp`, the main class and its arguments.
    pub args: Vec<String>,
    /// stdout and stderr go here.
    pub log: &'a Path,
    /// The line that says the process is ready (`boot success`).
    pub ready_line: &'static str,
    pub cpus: Option<&'a [usize]>,
    pub ready: Duration,
    /// `broker` or `name server`, for messages.
    pub what: &'static str,
}

/// A running JVM the harness started.
pub struct Jvm {
    child: Child,
    pub pid: u32,
    pub log: PathBuf,
    stdout: Option<JoinHandle<()>>,
}

impl Jvm {
    /// Starts the JVM and waits for its ready line; on failure the JVM is gone and the error
    /// carries the log's last line.
    pub fn start(spec: &JvmSpec<'_>) -> Result<Jvm, StartError> {
        let log = std::fs::File::create(spec.log).map_err(|source| StartError::Conf {
            path: spec.log.to_owned(),
            source,
        })?;
        let err = log.try_clone().map_err(|source| StartError::Conf {
            path: spec.log.to_owned(),
            source,
        })?;
        let mut cmd = Command::new(&spec.java);
        // A pinned JVM boots on every CPU and is moved onto its own once ready, its JIT
        // compiler threads onto the harness's ([`pin_jvm`]): a 5.3.3 broker booted in
        // 2.2-2.8 s against 4.6-5.1 s pinned
        // to one core, its name server in 1.6-1.8 s against 3.1-3.4 s (idle, 2 cores). It is
        // told its CPU count, so that it sizes its GC and compiler threads and RocketMQ its
        // pools (`Runtime.availableProcessors()`) as it would have pinned from the start.
        if let Some(cpus) = spec.cpus {
            cmd.arg(format!("-XX:ActiveProcessorCount={}", cpus.len().max(1)));
            // The thread that starts it may be pinned to the generator's CPUs (the harness's
            // main thread is), and a child inherits that mask.
            let all = process_cpus().to_vec();
            // SAFETY: only sched_setaffinity (async-signal-safe) runs between fork and exec.
            unsafe {
                cmd.pre_exec(move || pin_current_thread(&all));
            }
        }
        cmd.args(&spec.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err));
        let mut child = cmd.spawn().map_err(|e| StartError::Failed {
            reason: format!(
                "starting {} for the Apache {}: {e} (install a JDK: apt-get install -y openjdk-17-jdk-headless, or set JAVA_HOME)",
                spec.java.display(),
                spec.what
            ),
            last_line: None,
        })?;
        let pid = child.id();
        let out = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = mpsc::sync_channel::<()>(1);
        let ready_line = spec.ready_line;
        let mut log_out = log;
        // Copies stdout into the log (the JVM never blocks on a full pipe) and says when the
        // ready line went by; ends when the JVM exits.
        let stdout = thread::Builder::new()
            .name("apache-stdout".into())
            .spawn(move || {
                let mut seen = false;
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    let _ = writeln!(log_out, "{line}");
                    if !seen && line.contains(ready_line) {
                        seen = tx.try_send(()).is_ok();
                    }
                }
            })
            .map_err(|e| StartError::Failed {
                reason: format!("spawning a log thread: {e}"),
                last_line: None,
            })?;
        let mut jvm = Jvm {
            child,
            pid,
            log: spec.log.to_owned(),
            stdout: Some(stdout),
        };
        let deadline = Instant::now() + spec.ready;
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(()) => {
                    if let Some(cpus) = spec.cpus {
                        if let Err(e) = pin_jvm(jvm.pid, cpus) {
                            jvm.kill9();
                            return Err(StartError::Failed {
                                reason: format!(
                                    "pinning the Apache {} to CPUs {cpus:?}: {e}",
                                    spec.what
                                ),
                                last_line: None,
                            });
                        }
                    }
                    return Ok(jvm);
                }
                Err(mpsc::RecvTimeoutError::Disconnected)
                | Err(mpsc::RecvTimeoutError::Timeout)
                    if jvm.exited().is_some() =>
                {
                    let status = jvm.exited().expect("exited");
                    jvm.join_stdout();
                    return Err(StartError::exited(
                        format!(
                            "the Apache {} exited before it was ready ({status})",
                            spec.what
                        ),
                        spec.log,
                    ));
                }
                Err(_) if Instant::now() >= deadline => {
                    jvm.kill9();
                    return Err(StartError::with_log(
                        format!(
                            "the Apache {} printed no {:?} within {:?}",
                            spec.what, ready_line, spec.ready
                        ),
                        spec.log,
                    ));
                }
                Err(_) => {}
            }
        }
    }

    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGKILL and wait until the process is gone.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.join_stdout();
    }

    pub fn signal(&self, signal: i32) -> std::io::Result<()> {
        send_signal(self.pid, signal)
    }

    /// SIGTERM (RocketMQ's shutdown hook runs: mqshutdown does the same), then SIGKILL at
    /// `grace`. The exit status, and whether SIGKILL was needed.
    pub fn stop(&mut self, grace: Duration) -> (Option<ExitStatus>, Stop) {
        self.terminate();
        self.wait_stopped(grace)
    }

    /// SIGTERM (after SIGCONT, for a paused JVM), returning at once: a JVM's shutdown hook
    /// takes seconds (see [`Jvm::wait_stopped`]), and two JVMs can run theirs side by side.
    pub fn terminate(&mut self) {
        if self.exited().is_none() {
            let _ = self.signal(libc::SIGCONT);
            let _ = self.signal(libc::SIGTERM);
        }
    }

    /// After [`Jvm::terminate`]: waits up to `grace` for the exit, then SIGKILL. A broker's
    /// shutdown hook took 12 s here (5.3.3): each service thread it joins ends only when its
    /// own wait times out (NettyEventExecutor polls 3 s), one after the other.
    pub fn wait_stopped(&mut self, grace: Duration) -> (Option<ExitStatus>, Stop) {
        if let Some(s) = self.exited() {
            self.join_stdout();
            return (Some(s), Stop::Clean);
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(s) = self.exited() {
                self.join_stdout();
                return (Some(s), Stop::Clean);
            }
            thread::sleep(Duration::from_millis(20));
        }
        self.kill9();
        let _ = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.log)
            .and_then(|mut f| {
                writeln!(f, "harness: no exit {grace:?} after SIGTERM; sent SIGKILL")
            });
        (self.exited(), Stop::Killed)
    }

    fn join_stdout(&mut self) {
        if let Some(h) = self.stdout.take() {
            let _ = h.join();
        }
    }
}

/// How a JVM ended when the harness stopped it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Clean,
    /// It did not exit within the deadline after SIGTERM and was killed.
    Killed,
}

impl Drop for Jvm {
    fn drop(&mut self) {
        // Never leave a JVM behind, whatever path dropped it.
        if self.exited().is_none() {
            self.kill9();
        }
        self.join_stdout();
    }
}
