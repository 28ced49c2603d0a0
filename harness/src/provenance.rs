//! Where and when a result was measured: the harness revision and whether its source tree had
//! uncommitted changes, a hash of the binaries that ran, the host, and UTC stamps. All of it
//! goes into `run.json` (and the stamp into the default result folder name): a revision alone
//! does not say what ran when the tree was dirty or the binary was built from another tree.

use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::fnv::Fnv1a;

/// The machine and source a run came from.
#[derive(Debug, Clone)]
pub struct Provenance {
    /// `git rev-parse HEAD` of the harness source, if it is a git checkout.
    pub harness_revision: Option<String>,
    /// Whether that checkout had uncommitted changes (`git status --porcelain`).
    pub harness_tree: SourceTree,
    /// FNV-1a 64 of the running harness executable, in hex.
    pub harness_bin_hash: Option<String>,
    pub host: String,
    pub kernel: String,
}

/// The state of the source tree a binary was built from, as `run.json` writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceTree {
    /// Every tracked and untracked (not ignored) file as committed.
    Clean,
    /// Uncommitted changes: the revision does not describe what was built.
    Dirty,
    /// Not a git checkout, or git is missing.
    Unknown,
}

impl SourceTree {
    /// `"clean"`, `"dirty"`, or `None` (JSON null) when unknown.
    pub fn as_json(self) -> Option<&'static str> {
        match self {
            SourceTree::Clean => Some("clean"),
            SourceTree::Dirty => Some("dirty"),
            SourceTree::Unknown => None,
        }
    }
}

impl Provenance {
    pub fn gather() -> Provenance {
        // The executable does not change while it runs: hash it once per process.
        static HARNESS_BIN: OnceLock<Option<String>> = OnceLock::new();
        let harness_bin_hash = HARNESS_BIN
            .get_or_init(|| std::env::current_exe().ok().and_then(|p| file_hash(&p)))
            .clone();
        Provenance {
            harness_revision: git_revision(),
            harness_tree: git_tree(),
            harness_bin_hash,
            host: read_trim("/proc/sys/kernel/hostname"),
            kernel: read_trim("/proc/sys/kernel/osrelease"),
        }
    }
}

/// FNV-1a 64 of a file's bytes, in hex (`None` if it cannot be read): which build of a binary
/// ran, compared across result folders.
pub fn file_hash(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut hash = Fnv1a::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hash.write(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(format!("{:016x}", hash.finish()))
}

fn git_tree() -> SourceTree {
    let out = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    match out {
        Ok(o) if o.status.success() && o.stdout.is_empty() => SourceTree::Clean,
        Ok(o) if o.status.success() => SourceTree::Dirty,
        _ => SourceTree::Unknown,
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
    fn a_file_hash_is_of_its_bytes_and_a_missing_file_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        // Longer than one read, so the streaming matters.
        std::fs::write(&a, vec![7u8; 200_000]).unwrap();
        std::fs::write(&b, vec![7u8; 200_001]).unwrap();
        let expected = format!("{:016x}", Fnv1a::new().write(&[7u8; 200_000]).finish());
        assert_eq!(file_hash(&a), Some(expected));
        assert_ne!(file_hash(&a), file_hash(&b));
        assert_eq!(file_hash(&dir.path().join("missing")), None);
        assert_eq!(SourceTree::Unknown.as_json(), None);
        assert_eq!(SourceTree::Dirty.as_json(), Some("dirty"));
    }

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
