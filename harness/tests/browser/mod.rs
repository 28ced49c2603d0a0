//! Headless Chromium for the report tests (`html_report.rs`, `html_stall_marks.rs`): where it
//! is, and a page loaded in it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The install hint a browser test fails with when it runs without Chromium (`--ignored`).
const NO_CHROMIUM: &str =
    "no chromium: install it (apt-get install chromium) to run the browser checks";

/// The system's Chromium; its absence fails the test that needs it, with the install hint.
pub fn chromium() -> PathBuf {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{NO_CHROMIUM}"))
}

/// Loads `page` in headless Chromium: (the DOM after scripts ran, console lines).
pub fn browse(bin: &Path, page: &Path) -> (String, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            "--window-size=1280,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_owned)
        .collect();
    (String::from_utf8(out.stdout).unwrap(), console)
}
