//! Progress output: bars on a terminal, plain lines otherwise, nothing when quiet.

use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// The overall matrix bar and one bar per running cell.
pub struct Progress {
    multi: Option<MultiProgress>,
    /// Advanced once per finished job.
    pub overall: Option<ProgressBar>,
    quiet: bool,
}

impl Progress {
    pub fn new(jobs: usize, quiet: bool) -> Progress {
        if quiet || !std::io::stdout().is_terminal() {
            return Progress {
                multi: None,
                overall: None,
                quiet,
            };
        }
        let multi = MultiProgress::new();
        let overall = multi.add(ProgressBar::new(jobs as u64));
        overall.set_style(
            ProgressStyle::with_template(
                "matrix [{bar:30}] {pos}/{len} cells  {elapsed_precise} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress {
            multi: Some(multi),
            overall: Some(overall),
            quiet,
        }
    }

    pub fn cell_bar(&self, label: &str, secs: u64) -> Option<ProgressBar> {
        let multi = self.multi.as_ref()?;
        let bar = multi.add(ProgressBar::new(secs.max(1)));
        bar.set_style(
            ProgressStyle::with_template("{prefix:.bold} [{bar:30}] {pos}/{len}s {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_prefix(label.to_owned());
        Some(bar)
    }

    pub fn line(&self, text: &str) {
        if self.quiet {
            return;
        }
        match &self.multi {
            Some(m) => {
                let _ = m.println(text);
            }
            None => println!("{text}"),
        }
    }
}
