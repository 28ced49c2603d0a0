//! The broker processes one job samples every second (CPU and RSS from /proc, and a JVM's JIT
//! from its HotSpot perf data), kept apart from the sampling loop (`sampler.rs`) that reads them.

use crate::proc::cpu::ProcSampler;
use crate::proc::cpu::{machine_cpu_seconds, process_cpu_seconds, MachineCpu};
use crate::proc::hsperf::Jit;

/// The broker processes a job samples every second: its one broker, or every broker of a
/// cluster, summed (a cluster's CPU and memory are the cluster's, not broker 0's).
pub struct BrokerSampler {
    procs: Vec<SampledProcess>,
    /// The machine's CPU-seconds at the previous sample.
    last_machine: Option<MachineCpu>,
}

struct SampledProcess {
    pid: u32,
    sampler: ProcSampler,
    /// CPU-seconds at the previous sample, from /proc.
    last_cpu_s: Option<f64>,
    /// The JIT's compile time at the previous sample; None for a process without perf data.
    last_jit: Option<Jit>,
}

impl SampledProcess {
    fn new(pid: u32) -> Self {
        SampledProcess {
            pid,
            sampler: ProcSampler::new(pid),
            last_cpu_s: process_cpu_seconds(pid),
            last_jit: Jit::of(pid),
        }
    }
}

impl BrokerSampler {
    pub fn new(pids: &[u32]) -> Self {
        BrokerSampler {
            procs: pids.iter().map(|&p| SampledProcess::new(p)).collect(),
            last_machine: machine_cpu_seconds(),
        }
    }

    /// A lone broker restarted by a fault: sample the new process from now on.
    pub fn follow(&mut self, pid: u32) {
        if self.procs.len() <= 1 && self.procs.first().map(|p| p.pid) != Some(pid) {
            self.procs = vec![SampledProcess::new(pid)];
        }
    }

    /// Broker `i` of a cluster, restarted by a fault: sample its new process from now on.
    pub fn follow_at(&mut self, i: usize, pid: u32) {
        if let Some(p) = self.procs.get_mut(i).filter(|p| p.pid != pid) {
            *p = SampledProcess::new(pid);
        }
    }

    /// What the brokers did since the previous call, summed over the processes that are alive.
    pub fn sample(&mut self) -> BrokerSecond {
        let (mut usage, mut cpu_s, mut jit_s) = (None, None, None);
        for p in &mut self.procs {
            if let Some((cpu, rss)) = p.sampler.sample() {
                let sum: &mut (f64, f64) = usage.get_or_insert((0.0, 0.0));
                sum.0 += cpu;
                sum.1 += rss;
            }
            let now = process_cpu_seconds(p.pid);
            if let Some(spent) = now.zip(p.last_cpu_s).map(|(n, l)| (n - l).max(0.0)) {
                *cpu_s.get_or_insert(0.0) += spent;
            }
            p.last_cpu_s = now.or(p.last_cpu_s);
            let jit = Jit::of(p.pid);
            if let Some((now, last)) = jit.zip(p.last_jit) {
                *jit_s.get_or_insert(0.0) += (now.compile_s - last.compile_s).max(0.0);
            }
            p.last_jit = jit.or(p.last_jit);
        }
        let machine = machine_cpu_seconds();
        let spent = machine.zip(self.last_machine).map(|(n, l)| {
            (
                (n.busy_s - l.busy_s).max(0.0),
                (n.steal_s - l.steal_s).max(0.0),
            )
        });
        self.last_machine = machine.or(self.last_machine);
        BrokerSecond {
            usage,
            cpu_s,
            jit_s,
            machine_s: spent.map(|s| s.0),
            steal_s: spent.map(|s| s.1),
        }
    }
}

/// One sample of a job's brokers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BrokerSecond {
    /// `(cpu %, rss MiB)`; None when no process answered.
    pub usage: Option<(f64, f64)>,
    /// CPU-seconds since the previous sample, from /proc.
    pub cpu_s: Option<f64>,
    /// Seconds the JIT compiled since the previous sample, summed over the compiler threads
    /// ([`Jit::compile_s`]); None for a broker that is no JVM (no perf data).
    pub jit_s: Option<f64>,
    /// CPU-seconds the whole machine was busy since the previous sample, every CPU summed,
    /// steal left out.
    pub machine_s: Option<f64>,
    /// CPU-seconds the hypervisor took from this machine's CPUs since the previous sample.
    pub steal_s: Option<f64>,
}

impl BrokerSecond {
    /// What the rest of the machine used over `wall_s`, % of one core: its busy time less the
    /// brokers' and the harness's own (`harness_s`, spin-waiting included). Other processes,
    /// and the kernel's threads (page-cache writeback among them). None without the brokers'
    /// CPU (a broker the harness did not start would count as "other").
    pub fn other_cpu(&self, harness_s: f64, wall_s: f64) -> Option<f64> {
        let (machine, broker) = (self.machine_s?, self.cpu_s?);
        (wall_s > 0.0).then(|| ((machine - broker - harness_s) / wall_s * 100.0).max(0.0))
    }

    /// What the hypervisor took from the machine's CPUs over `wall_s`, % of one core: on a
    /// virtual machine, time the broker or the harness was ready to run and did not.
    pub fn steal_cpu(&self, wall_s: f64) -> Option<f64> {
        let steal = self.steal_s?;
        (wall_s > 0.0).then(|| steal / wall_s * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Sampling this process once and "twice" (as two brokers of a cluster) must give twice the
    /// memory and at least twice the CPU burnt in between: a cluster's figures are sums.
    #[test]
    fn a_cluster_is_sampled_as_the_sum_of_its_brokers() {
        let none = BrokerSampler::new(&[]).sample();
        assert_eq!((none.usage, none.cpu_s, none.jit_s), (None, None, None));
        // No broker CPU: what the rest of the machine used cannot be told apart from it.
        assert_eq!(none.other_cpu(0.0, 1.0), None);
        let me = std::process::id();
        let mut one = BrokerSampler::new(&[me]);
        let mut two = BrokerSampler::new(&[me, me]);
        let burn = Duration::from_millis(300);
        let begin = crate::proc::cpu::self_cpu_time();
        while crate::proc::cpu::self_cpu_time().saturating_sub(begin) < burn {
            std::hint::black_box((0..1000u64).sum::<u64>());
        }
        let (a, b) = (one.sample(), two.sample());
        // This test's process is no JVM.
        assert_eq!((a.jit_s, b.jit_s), (None, None));
        let (usage_one, cpu_one, usage_two, cpu_two) = (a.usage, a.cpu_s, b.usage, b.cpu_s);
        // The other tests of this binary allocate on their threads between two readings of this
        // process's RSS (the in-flight table's and the frame buffer's proptests churn hundreds
        // of KB): read again until two readings in a row agree, a few times at most.
        let mut rss = (usage_one.unwrap().1, usage_two.unwrap().1);
        for _ in 0..20 {
            if (rss.1 / rss.0 - 2.0).abs() < 0.2 {
                break;
            }
            rss = (one.sample().usage.unwrap().1, two.sample().usage.unwrap().1);
        }
        let (rss_one, rss_two) = rss;
        assert!(
            (rss_two / rss_one - 2.0).abs() < 0.2,
            "{rss_one} MiB vs {rss_two} MiB"
        );
        // /proc counts in clock ticks: allow one tick (10 ms) per process.
        let (cpu_one, cpu_two) = (cpu_one.unwrap(), cpu_two.unwrap());
        assert!(cpu_one >= 0.29, "{cpu_one}");
        assert!(cpu_two >= 0.58, "{cpu_two}");
    }
}
