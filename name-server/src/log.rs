//! Where the name server's log lines go: stderr (the binary), or a file (in-process in the
//! harness, whose own stderr is its progress display).

use std::io::Write;
use std::path::Path;

use parking_lot::Mutex;

/// A line-oriented log sink.
pub struct Log {
    // One writer at a time, so lines never interleave; no `.await` while held.
    file: Option<Mutex<std::fs::File>>,
}

impl Log {
    pub fn stderr() -> Log {
        Log { file: None }
    }

    pub fn file(path: &Path) -> std::io::Result<Log> {
        Ok(Log {
            file: Some(Mutex::new(std::fs::File::create(path)?)),
        })
    }

    pub fn line(&self, text: std::fmt::Arguments<'_>) {
        match &self.file {
            None => eprintln!("{text}"),
            Some(f) => {
                // A full disk must not stop the name server; the line is lost.
                let _ = writeln!(f.lock(), "{text}");
            }
        }
    }
}
