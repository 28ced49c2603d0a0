//! A broker's stop that runs beside the next job's start.
//!
//! Once a job's figures are taken and no part needs the stopped store, the broker is discarded
//! (`Member::discard`: an Apache JVM is killed, since its clean stop took 12-15 s under load,
//! its shutdown hook joining one service thread after another as each poll times out; the
//! in-tree broker stops cleanly and its exit status is checked). The discard is handed here:
//! it runs on a named thread while the next job starts its brokers, and that job waits for it
//! ([`Reaper::settle`]) before its load begins, so a stopping broker never shares the CPU with
//! a measured window. At most one stop is pending
//! (a second one first waits for the first), and dropping the reaper waits for it too, so no
//! JVM outlives the run.

use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::Mutex;

#[derive(Default)]
pub struct Reaper {
    pending: Mutex<Option<JoinHandle<()>>>,
}

impl Reaper {
    /// Runs `stop` on a thread of its own (named `stop-<what>`), after any stop still pending.
    /// When no thread can be made, `stop` runs here and now.
    pub fn defer(&self, what: &str, stop: impl FnOnce() + Send + 'static) {
        self.settle();
        // Shared, so that it can still run here if the thread is never made.
        let slot = Arc::new(Mutex::new(Some(stop)));
        let theirs = Arc::clone(&slot);
        let spawned = std::thread::Builder::new()
            .name(format!("stop-{what}"))
            .spawn(move || {
                if let Some(f) = theirs.lock().take() {
                    f();
                }
            });
        match spawned {
            Ok(handle) => *self.pending.lock() = Some(handle),
            Err(_) => {
                if let Some(f) = slot.lock().take() {
                    f();
                }
            }
        }
    }

    /// Waits for the pending stop, if any.
    pub fn settle(&self) {
        let handle = self.pending.lock().take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.settle();
    }
}

#[cfg(test)]
mod tests {
    use super::Reaper;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::sync::Arc;

    #[test]
    fn a_deferred_stop_runs_beside_the_caller_until_settled() {
        let reaper = Reaper::default();
        let (go, wait) = mpsc::channel::<()>();
        let done = Arc::new(AtomicUsize::new(0));
        let d = done.clone();
        reaper.defer("a", move || {
            // Blocks until the caller lets it go: defer must have returned by then.
            wait.recv().unwrap();
            d.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(
            done.load(Ordering::SeqCst),
            0,
            "defer returned before the stop ran"
        );
        go.send(()).unwrap();
        reaper.settle();
        assert_eq!(done.load(Ordering::SeqCst), 1, "settle waits for the stop");
    }

    #[test]
    fn a_second_stop_waits_for_the_first_and_drop_waits_for_the_last() {
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        {
            let reaper = Reaper::default();
            for i in 0..3 {
                let o = order.clone();
                reaper.defer("n", move || {
                    std::thread::yield_now();
                    o.lock().unwrap().push(i);
                });
            }
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2]);
    }
}
