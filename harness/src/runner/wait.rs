//! How the pacer waits for a due instant: a coarse sleep, then a spin for the last
//! [`SPIN`], with 1 µs timer slack so the sleeps end when asked.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::thread;
use std::time::{Duration, Instant};

use crate::runner::common::us;

/// The longest the pacer waits for answers at once before it looks at cancellation, retries
/// and the schedule again (the socket's read timeout, and the poll's).
pub const READ_WAIT: Duration = Duration::from_millis(1);

/// How long before a due time the pacer stops sleeping and spins.
pub const SPIN: Duration = Duration::from_micros(150);

/// Sleeps coarsely, then spins the last [`SPIN`], adding the spin to `spin_ns`. Returns early
/// after a coarse sleep (at most 1 ms) so the caller can look at retries and cancellation.
pub fn wait_until(t: Instant, spin_ns: &AtomicU64) {
    let now = Instant::now();
    if now >= t {
        return;
    }
    let rem = t - now;
    if rem > SPIN {
        thread::sleep((rem - SPIN).min(Duration::from_millis(1)));
        return;
    }
    let s = Instant::now();
    while Instant::now() < t {
        std::hint::spin_loop();
    }
    spin_ns.fetch_add(us(s.elapsed()) * 1000, Ordering::Relaxed);
}

/// The longest a phase without sends sleeps before the pacer looks at `stop` again.
pub const QUIET_STEP: Duration = Duration::from_millis(20);

/// A phase without sends: nothing is due before `due` but a retry of an earlier phase's send,
/// which ends the wait at once and is returned. [`wait_until`]'s 1 ms steps woke the pacer
/// 1,000 times a second on the consumers' core (`make floor`'s consume run: 2,400 context
/// switches in 2.5 s); [`QUIET_STEP`] bounds how late a stop is seen.
pub fn wait_for_retry<T>(retries: &Receiver<T>, due: Instant) -> Option<T> {
    let left = due.saturating_duration_since(Instant::now());
    retries.recv_timeout(left.min(QUIET_STEP)).ok()
}

/// 1 µs timer slack for the pacer: the default 50 µs would be added to every coarse sleep.
pub fn set_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument and affects only the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    #[test]
    fn a_quiet_wait_returns_a_retry_at_once_and_looks_up_within_a_step() {
        let (tx, rx) = sync_channel(4);
        let far = Instant::now() + Duration::from_secs(3600);
        // Nothing comes: back long before `due`, so that a stop is seen.
        assert_eq!(wait_for_retry::<u32>(&rx, far), None);
        assert!(Instant::now() < far - Duration::from_secs(3000));
        // A retry sent meanwhile ends the wait and is handed back, not lost.
        let sender = thread::spawn(move || tx.send(7u32).unwrap());
        let mut got = None;
        while got.is_none() {
            got = wait_for_retry(&rx, far);
        }
        assert_eq!(got, Some(7));
        sender.join().unwrap();
        // A due time already past does not wait at all.
        assert_eq!(wait_for_retry::<u32>(&rx, Instant::now()), None);
    }
}
