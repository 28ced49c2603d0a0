//! `consumer.log` of a job: the consumers' events with RocketMQ's texts (flow control on its
//! 1st and every 1000th occurrence, rebalance changes, lock refusals, pull errors), one line
//! each with the time since the job started and the instance.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use parking_lot::Mutex;

/// Lines written at most; a run that would write more says so once and stops logging.
const MAX_LINES: u64 = 100_000;

pub struct EventLog {
    out: Mutex<(Option<BufWriter<File>>, u64)>,
    start: Instant,
}

impl EventLog {
    /// Logs to `path`; `None` logs nowhere (tests).
    pub fn create(path: Option<&Path>) -> std::io::Result<EventLog> {
        let file = match path {
            Some(p) => Some(BufWriter::new(File::create(p)?)),
            None => None,
        };
        Ok(EventLog {
            out: Mutex::new((file, 0)),
            start: Instant::now(),
        })
    }

    /// One line: `[  12.345s] <who> <level> <text>`.
    pub fn line(&self, who: &str, level: &str, text: &str) {
        let mut g = self.out.lock();
        let (file, n) = &mut *g;
        let Some(f) = file.as_mut() else { return };
        *n += 1;
        let t = self.start.elapsed().as_secs_f64();
        let _ = if *n < MAX_LINES {
            writeln!(f, "[{t:9.3}s] {who} {level} {text}")
        } else if *n == MAX_LINES {
            writeln!(
                f,
                "[{t:9.3}s] log limit of {MAX_LINES} lines reached; later events are counted only"
            )
        } else {
            Ok(())
        };
    }

    pub fn flush(&self) {
        if let Some(f) = self.out.lock().0.as_mut() {
            let _ = f.flush();
        }
    }
}
