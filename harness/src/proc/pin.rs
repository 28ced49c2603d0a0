//! Which CPUs the broker and the generator run on, and signals to a process by pid.

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

/// The CPUs the harness may use as a whole, read once, before any of its threads is pinned.
/// A run pins the harness's main thread to the generator's half; the next run in the same
/// process (the rows of `harness fidelity`) must split the whole set again, not that half:
/// reading [`allowed_cpus`] then gave one CPU, no split, and broker and generator on one core.
pub fn process_cpus() -> &'static [usize] {
    static CPUS: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    CPUS.get_or_init(allowed_cpus)
}

/// Pins the calling thread (and threads it spawns later) to `cpus`.
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    set_affinity(0, cpus)?;
    #[cfg(not(target_os = "linux"))]
    let _ = cpus;
    Ok(())
}

/// Pins every thread of process `pid` to `cpus`: a JVM that booted on every CPU, moved onto
/// the broker's once it is ready. Threads it makes later inherit the mask of the thread that
/// makes them, so passes repeat until one finds no thread left unpinned (a thread made by an
/// unpinned one during a pass is caught by the next).
pub fn pin_process(pid: u32, cpus: &[usize]) -> std::io::Result<()> {
    pin_threads(pid, &|_| cpus)
}

/// Whether a thread's name (`/proc/<pid>/task/<tid>/comm`, cut at 15 bytes) is one of a HotSpot
/// JVM's JIT compiler threads (`C1 CompilerThread0`, `C2 CompilerThread1`, ...).
pub fn is_jit_thread(comm: &str) -> bool {
    let comm = comm.trim_end();
    comm.starts_with("C1 CompilerThre") || comm.starts_with("C2 CompilerThre")
}

/// [`pin_process`] for a JVM broker, except its JIT compiler threads, which go to the CPUs of
/// the harness's own set that are not `cpus` (to `cpus` too when there are none). On the
/// broker's one core the JIT competed with the broker for that core: under a closed loop of 64,
/// Apache 5.3.3's compilers had work queued for 75-80 s and its rate was 20-24k/s at 100 s;
/// with them on the other core they were quiet (under 10% of a window) from 25 s and the rate
/// was 27-31k/s from 15 s (7 December). A broker in production compiles on cores it has
/// besides; compiler threads the JIT adds later are made by one of them and inherit its mask.
pub fn pin_jvm(pid: u32, cpus: &[usize]) -> std::io::Result<()> {
    let rest: Vec<usize> = process_cpus()
        .iter()
        .copied()
        .filter(|c| !cpus.contains(c))
        .collect();
    let jit: &[usize] = if rest.is_empty() { cpus } else { &rest };
    pin_threads(pid, &|comm| if is_jit_thread(comm) { jit } else { cpus })
}

/// Pins each thread of `pid` to the CPUs `to` gives for its name, pass after pass until a pass
/// finds no new thread.
fn pin_threads<'a>(pid: u32, to: &dyn Fn(&str) -> &'a [usize]) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let mut pinned = std::collections::HashSet::new();
        for _pass in 0..20 {
            let mut fresh = 0;
            for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
                let Some(tid) = entry?
                    .file_name()
                    .to_str()
                    .and_then(|t| t.parse::<i32>().ok())
                else {
                    continue;
                };
                if !pinned.insert(tid) {
                    continue;
                }
                fresh += 1;
                let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                    .unwrap_or_default();
                // A thread that ended since the listing is no error.
                if let Err(e) = set_affinity(tid, to(&comm)) {
                    if e.raw_os_error() != Some(libc::ESRCH) {
                        return Err(e);
                    }
                }
            }
            if fresh == 0 {
                return Ok(());
            }
        }
        Err(std::io::Error::other(format!(
            "process {pid} kept making threads faster than they could be pinned"
        )))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (pid, to);
        Ok(())
    }
}

#[cfg(target_os = "linux")]
fn set_affinity(tid: i32, cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: the set is initialised by CPU_ZERO/CPU_SET before use; a wrong tid is an error.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
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

/// Sends `signal` to process `pid` (a broker the harness started, or `--broker-pid`).
pub fn send_signal(pid: u32, signal: i32) -> std::io::Result<()> {
    // SAFETY: kill(2) has no memory preconditions; a wrong pid is reported as an error.
    if unsafe { libc::kill(pid as libc::pid_t, signal) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_set_outlives_a_pinned_thread() {
        let all = process_cpus().to_vec();
        if all.len() < 2 {
            eprintln!("skipped: one CPU allowed, nothing to narrow");
            return;
        }
        // On a thread of its own: the pin stays with it.
        std::thread::spawn(move || {
            pin_current_thread(&all[..1]).unwrap();
            assert_eq!(allowed_cpus(), all[..1], "the thread is narrowed");
            assert_eq!(process_cpus(), all, "the process set is not");
            let (_, harness) = split_cpus(process_cpus()).expect("split again");
            assert!(!harness.is_empty());
        })
        .join()
        .unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn every_thread_of_a_child_is_pinned() {
        let all = process_cpus().to_vec();
        if all.len() < 2 {
            eprintln!("skipped: one CPU allowed, nothing to pin apart");
            return;
        }
        // A child with threads of its own (python3 is on every machine that runs the checks).
        let mut child = std::process::Command::new("python3")
            .args([
                "-c",
                "import threading,time\n\
                 [threading.Thread(target=time.sleep,args=(30,),daemon=True).start() for _ in range(4)]\n\
                 time.sleep(30)",
            ])
            .spawn()
            .unwrap();
        let tasks = format!("/proc/{}/task", child.id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::fs::read_dir(&tasks).map_or(0, |d| d.count()) < 5 {
            assert!(
                std::time::Instant::now() < deadline,
                "the child made no threads"
            );
            std::thread::yield_now();
        }
        pin_process(child.id(), &all[..1]).unwrap();
        let lists: Vec<String> = std::fs::read_dir(&tasks)
            .unwrap()
            .map(|t| allowed_list(&t.unwrap().path()))
            .collect();
        let _ = child.kill();
        let _ = child.wait();
        assert!(lists.len() >= 5);
        assert!(lists.iter().all(|l| *l == all[0].to_string()), "{lists:?}");
    }

    #[test]
    fn jit_threads_are_told_by_hotspot_s_names() {
        // As /proc shows them: cut at 15 bytes, with the newline comm ends in.
        assert!(is_jit_thread("C2 CompilerThre\n"));
        assert!(is_jit_thread("C1 CompilerThre"));
        assert!(!is_jit_thread("NettyServerCode\n"));
        assert!(!is_jit_thread("CommitRealTimeS"));
        assert!(!is_jit_thread(""));
    }

    /// A child with threads named as HotSpot names its compilers (prctl PR_SET_NAME, 15) and
    /// others: the compilers go to the CPUs that are not the broker's, the rest to the broker's.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_jvm_s_compiler_threads_are_pinned_apart() {
        let all = process_cpus().to_vec();
        if all.len() < 2 {
            eprintln!("skipped: one CPU allowed, nothing to pin apart");
            return;
        }
        let script = "import ctypes,threading,time\n\
            libc=ctypes.CDLL(None)\n\
            def named(n):\n\
            \x20   libc.prctl(15, n, 0, 0, 0)\n\
            \x20   time.sleep(30)\n\
            [threading.Thread(target=named,args=(n,),daemon=True).start() for n in (b'C2 CompilerThread0', b'C1 CompilerThread0', b'SendMessageThre')]\n\
            time.sleep(30)";
        let mut child = std::process::Command::new("python3")
            .args(["-c", script])
            .spawn()
            .unwrap();
        let tasks = format!("/proc/{}/task", child.id());
        let names = |tasks: &str| -> Vec<(String, String)> {
            std::fs::read_dir(tasks)
                .map(|d| {
                    d.filter_map(Result::ok)
                        .map(|t| {
                            let comm = std::fs::read_to_string(t.path().join("comm"))
                                .unwrap_or_default()
                                .trim()
                                .to_owned();
                            (comm, allowed_list(&t.path()))
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while names(&tasks)
            .iter()
            .filter(|(c, _)| is_jit_thread(c))
            .count()
            < 2
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the child named no compiler threads: {:?}",
                names(&tasks)
            );
            std::thread::yield_now();
        }
        pin_jvm(child.id(), &all[..1]).unwrap();
        let seen = names(&tasks);
        let _ = child.kill();
        let _ = child.wait();
        let rest: Vec<String> = all[1..].iter().map(|c| c.to_string()).collect();
        for (comm, cpus) in &seen {
            if is_jit_thread(comm) {
                let listed: Vec<String> = expand(cpus);
                assert_eq!(listed, rest, "{comm}: {seen:?}");
            } else {
                assert_eq!(*cpus, all[0].to_string(), "{comm}: {seen:?}");
            }
        }
    }

    /// A thread's `Cpus_allowed_list` (`/proc/<pid>/task/<tid>/status`), empty if it is gone.
    fn allowed_list(task: &std::path::Path) -> String {
        let status = std::fs::read_to_string(task.join("status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap_or("")
            .trim()
            .to_owned()
    }

    /// `0-1,3` as `["0", "1", "3"]`.
    fn expand(list: &str) -> Vec<String> {
        list.split(',')
            .flat_map(|part| match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
                    (a..=b).map(|c| c.to_string()).collect::<Vec<_>>()
                }
                None => vec![part.to_owned()],
            })
            .collect()
    }
}
