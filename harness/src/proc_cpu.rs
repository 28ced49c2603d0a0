//! A process's CPU time from `/proc/<pid>/stat`: what the broker spent, to the clock tick,
//! whatever the sampling. A per-second CPU % from a sampler misses the first interval and
//! rounds; CPU-seconds over a window divided by the messages of that window does not.

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

#[cfg(test)]
mod tests {
    use super::*;

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
