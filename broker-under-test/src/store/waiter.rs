//! `ServiceThread.waitForRunning` / `wakeup` / `shutdown` for the store's OS threads. The put path
//! wakes the flush and commit services through it; shutdown stops them through it.

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

pub(crate) struct Waiter {
    state: Mutex<WaitState>,
    cv: Condvar,
}

#[derive(Default)]
struct WaitState {
    notified: bool,
    stopped: bool,
}

impl Waiter {
    pub(crate) fn new() -> Self {
        Waiter {
            state: Mutex::new(WaitState::default()),
            cv: Condvar::new(),
        }
    }

    pub(crate) fn wakeup(&self) {
        let mut s = self.state.lock();
        if !s.notified {
            s.notified = true;
            self.cv.notify_all();
        }
    }

    pub(crate) fn stop(&self) {
        let mut s = self.state.lock();
        s.stopped = true;
        self.cv.notify_all();
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.state.lock().stopped
    }

    /// Waits up to `timeout`. When `wakeable`, a pending or new `wakeup` ends the wait early
    /// (and is consumed); otherwise only `stop` does, like a plain `Thread.sleep`.
    pub(crate) fn wait(&self, timeout: Duration, wakeable: bool) {
        let deadline = Instant::now() + timeout;
        let mut s = self.state.lock();
        loop {
            if s.stopped {
                return;
            }
            if wakeable && s.notified {
                s.notified = false;
                return;
            }
            let now = Instant::now();
            if now >= deadline {
                if wakeable {
                    s.notified = false;
                }
                return;
            }
            // Timed out or not, the loop re-reads the state and the clock: a spurious wake-up or
            // an unrelated notify just waits again for the rest of the time.
            self.cv.wait_for(&mut s, deadline - now);
        }
    }
}
