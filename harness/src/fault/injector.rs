//! The fault schedule of one job. The job's sampling loop calls [`Injector::tick`] every few
//! milliseconds; the injector sends the signals that are due and, after a kill with `restart`,
//! starts the broker again on the same store and port, so the load's connections (which
//! reconnect every 100 ms) find it again. A pause is two signals and a kill one, sent from the
//! loop. A restart runs on a thread of its own (`fault-restart`): a JVM takes 5-7 s to be ready
//! again, and the loop must go on writing a row every second meanwhile (the seconds of the
//! outage are the ones a fault experiment is about). The first tick after the broker is up puts
//! it in place of the killed one; events due meanwhile wait for it. The thread is joined by
//! then, by [`Injector::finish_restart`] at the end of the load, or by [`Drop`], which also
//! continues a stopped broker whatever happened.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::fault::inject_error::InjectError;
use crate::fault::outcomes::{OutcomeLog, Recovery};
use crate::fault::port_hold::PortHold;
use crate::kind::{Kind, Member, MemberSpec};
use crate::proc::pin::send_signal;
use harness_model::profile::FaultPlan;
use rmq_client::uniq_key::KeySpace;

/// What the injector does at one point of the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Kill,
    /// The restart of a kill with `restart_after` (at once otherwise: part of the kill).
    Restart,
    Stop,
    Cont,
}

/// How to start the broker again after a kill: the job's kind of broker, configuration and
/// folder.
#[derive(Clone)]
pub struct Restarter {
    /// The file-name stem of the restarts' conf and log: `broker` (one broker) or `broker-1`
    /// (broker 1 of a cluster) → `broker-1-restart-<n>.log`.
    pub name: String,
    pub kind: Kind,
    pub conf: BTreeMap<String, String>,
    pub dir: PathBuf,
    pub cpus: Option<Vec<usize>>,
}

/// The faults of one job and what came of them.
pub struct Injector {
    plan: FaultPlan,
    /// Every send's final outcome; handed to the load through its `LoadConfig`.
    pub log: Arc<OutcomeLog>,
    events: Vec<(Instant, Action)>,
    next: usize,
    restarter: Option<Restarter>,
    /// The pid of a broker the harness did not start: `--broker-pid PID` with `--target`
    /// (pause only), or `--broker-pid NAME=PID` with `--namesrv` (pause and kill).
    target_pid: Option<u32>,
    /// The pid a SIGSTOP went to and no SIGCONT yet.
    stopped: Option<u32>,
    /// Killed and not (yet) restarted: its death is expected, not a crash.
    dead: bool,
    pub kills: u32,
    pub pauses: u32,
    recoveries: Vec<Recovery>,
    /// (kill, restarted broker ready) of each restart, for the consumers' recovery.
    restarts: Vec<(Instant, Instant)>,
    /// The load's UNIQ_KEY space, set when the load starts.
    pub keys: Option<KeySpace>,
    /// On a cluster, the faulted broker's router index, once the route is known.
    faulted: Option<usize>,
    /// When the last kill happened (its restart's pair in `restarts`).
    killed_at: Option<Instant>,
    /// What was done since the last [`Injector::take_events`] (timeseries.csv's `event`).
    done: Vec<&'static str>,
    /// The killed broker's port, kept from other processes until its restart is up.
    /// Its fast port (`listenPort − 2`) too: a restart on an explicit port must bind it, and
    /// in CI a connection's local port took it while the broker was down.
    held: Vec<PortHold>,
    /// The restart under way on its own thread.
    pending: Option<JoinHandle<Result<Box<dyn Member>, InjectError>>>,
}

impl Injector {
    /// An injector for `plan` over a schedule of `sends` sends; `cluster`: the broker it hits
    /// is `plan.broker` of a cluster (its recovery is told from the application's).
    pub fn new(
        plan: &FaultPlan,
        sends: u64,
        restarter: Option<Restarter>,
        target_pid: Option<u32>,
        cluster: bool,
    ) -> Injector {
        Injector {
            plan: plan.clone(),
            log: Arc::new(OutcomeLog::on_cluster(
                sends,
                cluster.then_some(plan.broker),
            )),
            events: Vec::new(),
            next: 0,
            restarter,
            target_pid,
            stopped: None,
            dead: false,
            kills: 0,
            pauses: 0,
            recoveries: Vec::new(),
            restarts: Vec::new(),
            keys: None,
            faulted: None,
            killed_at: None,
            done: Vec::new(),
            held: Vec::new(),
            pending: None,
        }
    }

    /// On a cluster: the faulted broker is `index` of the router. Called before the load
    /// starts (the outcome log is made again, to tell that broker's answers from the others').
    pub fn set_faulted(&mut self, index: usize) {
        self.faulted = Some(index);
        self.log = Arc::new(OutcomeLog::on_cluster(self.log.len(), Some(index)));
    }

    /// The faulted broker's router index, once the route named it (clusters only).
    pub fn faulted(&self) -> Option<usize> {
        self.faulted
    }

    /// The faulted broker's name among `names` (router order); empty with one broker.
    pub fn faulted_name(&self, names: &[String]) -> String {
        self.faulted
            .and_then(|i| names.get(i).cloned())
            .unwrap_or_default()
    }

    /// The actions done since the last call, space-separated (`kill restart`), for the
    /// second's `event` cell; empty when nothing happened.
    pub fn take_events(&mut self) -> String {
        let text = self.done.join(" ");
        self.done.clear();
        text
    }

    /// Lays out the schedule once the load has started: offsets count from `measured_start`,
    /// faults repeat `every` so often until `measured_end`.
    pub fn arm(&mut self, measured_start: Instant, measured_end: Instant) {
        let mut events = Vec::new();
        let mut add = |first: Duration, actions: &[(Duration, Action)]| {
            let mut k = 0u32;
            loop {
                let base = measured_start + first + self.plan.every.unwrap_or_default() * k;
                if base >= measured_end {
                    break;
                }
                for &(after, a) in actions {
                    events.push((base + after, a));
                }
                if self.plan.every.is_none() {
                    break;
                }
                k += 1;
            }
        };
        if let Some(kill) = self.plan.kill {
            let later = self.plan.restart && !self.plan.restart_after.is_zero();
            if later {
                add(
                    kill,
                    &[
                        (Duration::ZERO, Action::Kill),
                        (self.plan.restart_after, Action::Restart),
                    ],
                );
            } else {
                add(kill, &[(Duration::ZERO, Action::Kill)]);
            }
        }
        if let Some(p) = self.plan.pause {
            add(
                p.at,
                &[(Duration::ZERO, Action::Stop), (p.length, Action::Cont)],
            );
        }
        events.sort_by_key(|(t, _)| *t);
        self.events = events;
        self.next = 0;
    }

    /// The pid of the faulted broker when the harness did not start it (`--namesrv`), known
    /// once the route names the broker.
    pub fn set_target_pid(&mut self, pid: u32) {
        self.target_pid = Some(pid);
    }

    /// The plan's broker index (0 with one broker).
    pub fn broker_index(&self) -> usize {
        self.plan.broker
    }

    /// `fault.role`: which member of a replicating pair the faults hit.
    pub fn role(&self) -> Option<harness_model::profile::FaultRole> {
        self.plan.role
    }

    /// `fault.read_back`: whether the stores are read back after the job.
    pub fn reads_back(&self) -> bool {
        self.plan.read_back == harness_model::profile::ReadBack::Stores
    }

    /// When the next signal is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.events.get(self.next).map(|(t, _)| *t)
    }

    /// Whether the broker was killed and not restarted: then its exit is the experiment, not
    /// a crash.
    /// (kill, restarted broker ready) of each restart so far.
    pub fn restarts(&self) -> &[(Instant, Instant)] {
        &self.restarts
    }

    /// A restart is under way: its thread still runs. (A finished one not yet put in place
    /// is not: the job must not wait on a tick that has no broker to put it in.)
    pub fn restarting(&self) -> bool {
        self.pending.as_ref().is_some_and(|h| !h.is_finished())
    }

    pub fn broker_dead(&self) -> bool {
        self.dead
    }

    /// Whether the broker process the job started was replaced or killed, so its counters
    /// started again from zero.
    pub fn killed(&self) -> bool {
        self.kills > 0
    }

    /// Does what is due at `now`. `process` is the broker the harness started (None with
    /// `--target`); a restart replaces it.
    pub fn tick(
        &mut self,
        now: Instant,
        mut process: Option<&mut Box<dyn Member>>,
    ) -> Result<(), InjectError> {
        self.install_restart(process.as_deref_mut(), false)?;
        while let Some(&(at, action)) = self.events.get(self.next) {
            // What is due while the broker restarts waits until it is up.
            if at > now || self.pending.is_some() {
                break;
            }
            self.next += 1;
            match action {
                Action::Kill => self.kill(process.as_deref_mut())?,
                Action::Restart => self.restart_now(process.as_deref_mut())?,
                Action::Stop => {
                    let pid = self.pid(process.as_deref().map(|p| p.as_ref()))?;
                    if !self.dead {
                        send_signal(pid, libc::SIGSTOP).map_err(|error| InjectError::Signal {
                            signal: "SIGSTOP",
                            pid,
                            error,
                        })?;
                        self.stopped = Some(pid);
                        self.pauses += 1;
                        self.done.push("pause");
                    }
                }
                Action::Cont => self.resume()?,
            }
        }
        Ok(())
    }

    fn pid(&self, process: Option<&dyn Member>) -> Result<u32, InjectError> {
        process
            .and_then(|p| p.pid())
            .or(self.target_pid)
            .ok_or(InjectError::PauseNeedsPid)
    }

    fn resume(&mut self) -> Result<(), InjectError> {
        if let Some(pid) = self.stopped.take() {
            send_signal(pid, libc::SIGCONT).map_err(|error| InjectError::Signal {
                signal: "SIGCONT",
                pid,
                error,
            })?;
            self.done.push("resume");
        }
        Ok(())
    }

    fn kill(&mut self, process: Option<&mut Box<dyn Member>>) -> Result<(), InjectError> {
        if self.dead {
            return Ok(());
        }
        let Some(p) = process else {
            return self.kill_by_pid();
        };
        // A stopped broker dies of SIGKILL as well; it must not be continued afterwards.
        self.stopped = None;
        p.kill9().map_err(InjectError::Kill)?;
        let at = Instant::now();
        // Only if it will be started again; should the hold fail, the restart says why.
        if self.plan.restart && self.restarter.is_some() {
            let addr = p.addr();
            let fast = addr
                .port()
                .checked_sub(2)
                .filter(|&port| port > 0)
                .map(|port| {
                    let mut a = addr;
                    a.set_port(port);
                    a
                });
            self.held = std::iter::once(addr)
                .chain(fast)
                .filter_map(|a| PortHold::bind(a).ok())
                .collect();
        }
        self.mark_kill(at);
        self.dead = true;
        self.killed_at = Some(at);
        self.done.push("kill");
        if self.plan.restart && self.plan.restart_after.is_zero() {
            self.restart_now(Some(p))?;
        }
        Ok(())
    }

    /// Starts the killed broker again (on its store and port) on the `fault-restart` thread; a
    /// later tick puts it in place of `process` ([`Injector::install_restart`]).
    fn restart_now(&mut self, process: Option<&mut Box<dyn Member>>) -> Result<(), InjectError> {
        let (Some(p), Some(_)) = (process, self.killed_at) else {
            return Ok(());
        };
        if !self.dead || self.pending.is_some() {
            return Ok(());
        }
        let r = self.restarter.clone().ok_or(InjectError::NoRestarter)?;
        let (port, n) = (p.addr().port(), self.kills);
        let handle = std::thread::Builder::new()
            .name("fault-restart".into())
            .spawn(move || start_again(&r, n, port))
            .map_err(InjectError::RestartThread)?;
        self.pending = Some(handle);
        Ok(())
    }

    /// Puts the restarted broker in place of `process` once it is up (at once when `wait`,
    /// joining the restart's thread). A restart that failed is the job's error.
    fn install_restart(
        &mut self,
        process: Option<&mut Box<dyn Member>>,
        wait: bool,
    ) -> Result<(), InjectError> {
        let Some(p) = process else { return Ok(()) };
        if !self
            .pending
            .as_ref()
            .is_some_and(|h| wait || h.is_finished())
        {
            return Ok(());
        }
        let Some(handle) = self.pending.take() else {
            return Ok(());
        };
        // Up or failed for good: the port is the broker's again, or nobody's.
        self.held.clear();
        let restarted = handle.join().unwrap_or(Err(InjectError::RestartPanicked))?;
        *p = restarted;
        self.dead = false;
        if let Some(at) = self.killed_at {
            self.restarts.push((at, Instant::now()));
        }
        self.done.push("restart");
        Ok(())
    }

    /// At the end of the load: waits for a restart still under way and puts the broker in
    /// place of `process`, so the job reads and stops the broker that runs.
    pub fn finish_restart(
        &mut self,
        process: Option<&mut Box<dyn Member>>,
    ) -> Result<(), InjectError> {
        self.install_restart(process, true)
    }

    fn mark_kill(&mut self, at: Instant) {
        let previous = self.log.mark_kill(at);
        if self.kills > 0 {
            self.recoveries.push(previous);
        }
        self.kills += 1;
    }

    /// SIGKILL to a broker of a cluster the harness did not start (`--namesrv` with
    /// `--broker-pid NAME=PID`). It is not started again: its command line is not ours.
    fn kill_by_pid(&mut self) -> Result<(), InjectError> {
        let pid = self.target_pid.ok_or(InjectError::KillNeedsPid)?;
        if self.plan.restart {
            return Err(InjectError::RestartByPid);
        }
        self.stopped = None;
        send_signal(pid, libc::SIGKILL).map_err(|error| InjectError::Signal {
            signal: "SIGKILL",
            pid,
            error,
        })?;
        self.mark_kill(Instant::now());
        self.dead = true;
        self.done.push("kill");
        Ok(())
    }

    fn all_recoveries(&self) -> impl Iterator<Item = Recovery> + '_ {
        let last = (self.kills > 0).then(|| self.log.recoveries());
        self.recoveries.iter().copied().chain(last)
    }

    /// The largest time from a kill to the first success from the faulted broker of a send
    /// written after it, over all kills; None when no kill recovered (no restart, or nothing
    /// succeeded afterwards).
    pub fn recovery(&self) -> Option<Duration> {
        self.all_recoveries().filter_map(|r| r.broker).max()
    }

    /// The same for the application: the first final success of any broker (on one broker,
    /// the broker's recovery).
    pub fn app_recovery(&self) -> Option<Duration> {
        self.all_recoveries().filter_map(|r| r.app).max()
    }

    /// Kills that never saw a success afterwards (with `restart`, a broker that did not come
    /// back in time for the load).
    pub fn unrecovered(&self) -> u32 {
        let recovered = self.all_recoveries().filter(|r| r.broker.is_some()).count() as u32;
        self.kills.saturating_sub(recovered)
    }
}

/// Starts `r`'s broker again on the same store and port (held since the kill, [`PortHold`])
/// for the `n`-th kill; a few tries, then a clear error.
fn start_again(r: &Restarter, n: u32, port: u16) -> Result<Box<dyn Member>, InjectError> {
    let mut conf = r.conf.clone();
    conf.insert("listenPort".into(), port.to_string());
    let stem = format!("{}-restart-{n}", r.name);
    let spec = MemberSpec::new(&stem, &r.dir, &conf).pinned(r.cpus.as_deref());
    let mut attempt = 1;
    loop {
        match r.kind.start_broker(&spec) {
            Ok(p) => return Ok(p),
            Err(last) => {
                // A pause after every failed start, the third one included.
                std::thread::sleep(Duration::from_millis(100));
                if attempt == 3 {
                    return Err(InjectError::Restart { port, last, stem });
                }
                attempt += 1;
            }
        }
    }
}

impl Drop for Injector {
    fn drop(&mut self) {
        // A broker left stopped would hang the job's shutdown (and a --target broker forever).
        let _ = self.resume();
        // A restart nobody took (the job ended early): joined, and its broker not left running.
        if let Some(handle) = self.pending.take() {
            if let Ok(Ok(broker)) = handle.join() {
                broker.discard(Duration::from_secs(10));
            }
        }
    }
}

#[cfg(test)]
#[path = "injector_tests.rs"]
mod tests;
