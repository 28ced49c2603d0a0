//! Where and when a result was measured: the harness revision, the host, and UTC stamps. All
//! of it goes into `run.json` (and the stamp into the default result folder name).

use std::time::{SystemTime, UNIX_EPOCH};

/// The machine and source a run came from.
#[derive(Debug, Clone)]
pub struct Provenance {
    /// `git rev-parse HEAD` of the harness source, if it is a git checkout.
    pub harness_revision: Option<String>,
    pub host: String,
    pub kernel: String,
}

impl Provenance {
    pub fn gather() -> Provenance {
        Provenance {
            harness_revision: git_revision(),
            host: read_trim("/proc/sys/kernel/hostname"),
            kernel: read_trim("/proc/sys/kernel/osrelease"),
        }
    }
}

fn git_revision() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// UTC `YYYYMMDDTHHMMSSZ` (for folder names) and ISO 8601 forms of a time, whole seconds.
/// Times before 1970 (a broken clock) read as the epoch.
pub fn utc(t: SystemTime) -> (String, String) {
    let iso = humantime::format_rfc3339_seconds(t.max(UNIX_EPOCH)).to_string();
    let compact = iso.chars().filter(|c| !matches!(c, '-' | ':')).collect();
    (compact, iso)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn utc_stamps_in_both_forms() {
        let t = UNIX_EPOCH + Duration::from_secs(1_796_037_429) + Duration::from_millis(900);
        assert_eq!(
            utc(t),
            (
                "20261130T111709Z".to_owned(),
                "2026-11-30T11:17:09Z".to_owned()
            )
        );
        assert_eq!(
            utc(UNIX_EPOCH - Duration::from_secs(5)).1,
            "1970-01-01T00:00:00Z"
        );
        // A leap day, where hand-written civil-date code usually slips.
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(utc(leap).1, "2000-02-29T00:00:00Z");
    }
}
