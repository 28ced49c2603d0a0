//! How the pacer waits for a due instant: a coarse sleep, then a spin for the last
//! [`SPIN`], with 1 µs timer slack so the sleeps end when asked.

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::runner::common::us;

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

/// 1 µs timer slack for the pacer: the default 50 µs would be added to every coarse sleep.
pub fn set_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument and affects only the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}
