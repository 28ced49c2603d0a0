//! CPU and memory of processes. A process's CPU time comes from `/proc/<pid>/stat`: what the
//! broker spent, to the clock tick, whatever the sampling. A per-second CPU % from a sampler misses the first interval and
//! rounds; CPU-seconds over a window divided by the messages of that window does not.

use std::time::Duration;

use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

/// User + system CPU seconds `pid` has used so far; None where /proc is not readable.
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat, clock_ticks()?)
}

fn clock_ticks() -> Option<f64> {
    // SAFETY: sysconf has no preconditions; it only reads a system constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (t > 0).then_some(t as f64)
}

/// utime + stime (fields 14 and 15) of a `stat` line, in seconds. The command name (field 2)
/// may hold spaces and parentheses, so fields are counted from its closing parenthesis.
fn parse_stat(stat: &str, ticks: f64) -> Option<f64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: f64 = f.next()?.parse().ok()?;
    let stime: f64 = f.next()?.parse().ok()?;
    Some((utime + stime) / ticks)
}

/// CPU-seconds the whole machine has used so far, summed over its CPUs (`/proc/stat`'s first
/// line).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineCpu {
    /// user + nice + system + irq + softirq: what this machine's processes and kernel ran
    /// (idle and iowait left out; guest time is in user already).
    pub busy_s: f64,
    /// steal: time a virtual machine's CPUs were ready to run and the hypervisor ran something
    /// else. No process of this machine is charged for it.
    pub steal_s: f64,
}

/// None where /proc is not readable.
pub fn machine_cpu_seconds() -> Option<MachineCpu> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_machine_cpu(stat.lines().next()?, clock_ticks()?)
}

fn parse_machine_cpu(line: &str, ticks: f64) -> Option<MachineCpu> {
    let mut f = line.split_whitespace();
    if f.next()? != "cpu" {
        return None;
    }
    let v: Vec<f64> = f.take(8).map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let [user, nice, system, _idle, _iowait, irq, softirq, steal] = v[..] else {
        return None;
    };
    Some(MachineCpu {
        busy_s: (user + nice + system + irq + softirq) / ticks,
        steal_s: steal / ticks,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A line as Linux 6.x writes it: busy is every field but idle (4th), iowait (5th) and
    /// steal (8th), which is apart.
    #[test]
    fn the_machine_is_busy_for_all_but_idle_iowait_and_steal() {
        let line = "cpu  1000 20 300 90000 400 5 6 7 0 0";
        let m = parse_machine_cpu(line, 100.0).unwrap();
        assert!((m.busy_s - 13.31).abs() < 1e-9, "{m:?}");
        assert!((m.steal_s - 0.07).abs() < 1e-9, "{m:?}");
        assert_eq!(parse_machine_cpu("cpu0 1 2 3 4 5 6 7 8", 100.0), None);
        assert_eq!(parse_machine_cpu("cpu 1 2", 100.0), None);
        assert!(machine_cpu_seconds().is_some_and(|m| m.busy_s > 0.0 && m.steal_s >= 0.0));
    }

    #[test]
    fn parses_utime_and_stime_after_a_tricky_name() {
        let line = "42 (a) b (c)) S 1 42 42 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 1 0 0 0";
        assert_eq!(parse_stat(line, 100.0), Some(3.0));
        assert_eq!(parse_stat("garbage", 100.0), None);
    }

    #[test]
    fn this_process_has_used_some_cpu() {
        let t = process_cpu_seconds(std::process::id());
        assert!(t.is_some_and(|s| s >= 0.0), "{t:?}");
    }
}
