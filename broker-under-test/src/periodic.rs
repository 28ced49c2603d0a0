//! A named thread that runs a job at a fixed period and stops promptly when its owner stops it
//! or is dropped (`recv_timeout` on a stop channel, then join).

use std::{
    io,
    sync::mpsc,
    thread::JoinHandle,
    time::{Duration, Instant},
};

/// A named thread its owner stops: the thread watches a stop channel (a message or the
/// owner's drop closes it), and `stop` joins it.
pub struct Stoppable {
    name: String,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Stoppable {
    /// Starts `body` on a thread named `name`; `body` returns once its receiver says stop.
    pub fn spawn(
        name: &str,
        body: impl FnOnce(mpsc::Receiver<()>) + Send + 'static,
    ) -> io::Result<Self> {
        let (tx, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || body(rx))?;
        Ok(Stoppable {
            name: name.to_owned(),
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    pub fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                eprintln!("{} ended by a panic", self.name);
            }
        }
    }
}

impl Drop for Stoppable {
    fn drop(&mut self) {
        self.stop();
    }
}

pub struct Periodic {
    thread: Stoppable,
}

impl Periodic {
    /// Runs `job` after `first`, then every `period` (fixed rate; a late round does not burst).
    pub fn start(
        name: &str,
        first: Duration,
        period: Duration,
        mut job: impl FnMut() + Send + 'static,
    ) -> io::Result<Self> {
        let thread = Stoppable::spawn(name, move |rx| {
            let mut next = Instant::now() + first;
            loop {
                let wait = next.saturating_duration_since(Instant::now());
                match rx.recv_timeout(wait) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
                job();
                next += period;
                next = next.max(Instant::now());
            }
        })?;
        Ok(Periodic { thread })
    }

    pub fn stop(&mut self) {
        self.thread.stop();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    };

    use super::*;

    #[test]
    fn runs_periodically_and_stops_at_once() {
        let n = Arc::new(AtomicUsize::new(0));
        let c = n.clone();
        let mut p = Periodic::start(
            "test-periodic",
            Duration::ZERO,
            Duration::from_millis(10),
            move || {
                c.fetch_add(1, Ordering::Relaxed);
            },
        )
        .unwrap();
        while n.load(Ordering::Relaxed) < 3 {
            std::thread::sleep(Duration::from_millis(5));
        }
        let t = Instant::now();
        let mut slow = Periodic::start(
            "test-slow",
            Duration::from_secs(3600),
            Duration::from_secs(3600),
            || {},
        )
        .unwrap();
        slow.stop();
        p.stop();
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
