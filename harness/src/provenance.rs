//! Where and when a result was measured: the harness revision and whether its source tree had
//! uncommitted changes, a hash of the binaries that ran, the host, and UTC stamps. All of it
//! goes into `run.json` (and the stamp into the default result folder name): a revision alone
//! does not say what ran when the tree was dirty or the binary was built from another tree.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use harness_model::fnv::Fnv1a;

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
        // Read once, when the process first asks (the start of a run): a long run (a whole
        // fidelity run is 35 min) must not name a commit made while it ran, as the 5 December
        // fidelity table did.
        static SOURCE: OnceLock<(Option<String>, SourceTree)> = OnceLock::new();
        let (harness_revision, harness_tree) =
            SOURCE.get_or_init(|| (git_revision(), git_tree())).clone();
        Provenance {
            harness_revision,
            harness_tree,
            harness_bin_hash,
            host: read_trim("/proc/sys/kernel/hostname"),
            kernel: read_trim("/proc/sys/kernel/osrelease"),
        }
    }
}

/// FNV-1a 64 of a file's bytes, in hex (`None` if it cannot be read): which build of a binary
/// ran, compared across result folders.
///
/// A release binary with debug info is tens of megabytes, and hashing one cost 0.1–0.25 s of
/// CPU at the start of every run (5% of a 5 s `make floor` run). So the hash is kept in a
/// per-user cache under the temporary folder, keyed by the file's identity as git's index keys
/// a file: device, inode, size, and modification and change times to the nanosecond. A rebuilt
/// or replaced binary has a new key. Like git's "racy" entries, a file changed in the last
/// [`CACHE_MIN_AGE`] is hashed but not cached: a second write within one timestamp tick would
/// keep the key.
pub fn file_hash(path: &Path) -> Option<String> {
    file_hash_cached(path, cache_dir().as_deref(), CACHE_MIN_AGE)
}

/// Files changed more recently than this are not cached (see [`file_hash`]).
const CACHE_MIN_AGE: Duration = Duration::from_secs(2);

fn file_hash_cached(path: &Path, cache: Option<&Path>, min_age: Duration) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    let key = format!(
        "{:x}-{:x}-{:x}-{}.{}-{}.{}",
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    );
    let entry = cache.map(|d| d.join(&key));
    if let Some(hex) = entry.as_ref().and_then(|e| std::fs::read_to_string(e).ok()) {
        if hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Some(hex);
        }
    }
    let hex = hash_bytes(path)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let settled = [meta.mtime(), meta.ctime()]
        .iter()
        .all(|&t| now - t as f64 > min_age.as_secs_f64());
    if let (Some(entry), true) = (entry, settled) {
        // Written whole and renamed, so a reader never sees half an entry; a failure only
        // costs the next run a hash.
        let tmp = entry.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, &hex).is_ok() && std::fs::rename(&tmp, &entry).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        if let Some(dir) = cache {
            prune(dir, CACHE_ENTRIES);
        }
    }
    Some(hex)
}

/// Entries kept: every rebuild of a binary adds one, so the oldest go.
const CACHE_ENTRIES: usize = 64;

/// Removes all but the `keep` most recently written entries of `dir`.
fn prune(dir: &Path, keep: usize) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(SystemTime, PathBuf)> = read
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if entries.len() <= keep {
        return;
    }
    entries.sort();
    for (_, path) in &entries[..entries.len() - keep] {
        let _ = std::fs::remove_file(path);
    }
}

/// `<temp>/rocketmq-busy-bin-hashes-<uid>`, created private to this user; `None` (no caching)
/// when it cannot be created or belongs to someone else.
fn cache_dir() -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let dir = std::env::temp_dir().join(format!("rocketmq-busy-bin-hashes-{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    (meta.is_dir() && meta.uid() == uid && meta.mode() & 0o022 == 0).then_some(dir)
}

fn hash_bytes(path: &Path) -> Option<String> {
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
        assert_eq!(
            file_hash_cached(&a, Some(dir.path()), Duration::ZERO).as_deref(),
            file_hash(&a).as_deref()
        );
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

    #[test]
    fn a_cached_hash_is_found_by_the_files_identity_and_a_rewrite_misses_it() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        let f = dir.path().join("bin");
        std::fs::write(&f, b"one build").unwrap();
        let real = file_hash_cached(&f, Some(&cache), Duration::ZERO).unwrap();
        let entries: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
        assert_eq!(entries.len(), 1);
        // The next run reads the entry, not the file: plant a different value to see it.
        let entry = entries[0].as_ref().unwrap().path();
        std::fs::write(&entry, "00000000deadbeef").unwrap();
        assert_eq!(
            file_hash_cached(&f, Some(&cache), Duration::ZERO).as_deref(),
            Some("00000000deadbeef")
        );
        // A damaged entry is ignored.
        std::fs::write(&entry, "not a hash").unwrap();
        assert_eq!(
            file_hash_cached(&f, Some(&cache), Duration::ZERO),
            Some(real.clone())
        );
        // A rebuild (another size here) has another key.
        std::fs::write(&f, b"another build").unwrap();
        let rebuilt = file_hash_cached(&f, Some(&cache), Duration::ZERO).unwrap();
        assert_ne!(rebuilt, real);
        assert_eq!(
            rebuilt,
            format!("{:016x}", Fnv1a::new().write(b"another build").finish())
        );
        // A file changed within the minimum age is hashed but not cached.
        let young = dir.path().join("young");
        std::fs::write(&young, b"just built").unwrap();
        let before = std::fs::read_dir(&cache).unwrap().count();
        assert!(file_hash_cached(&young, Some(&cache), Duration::from_secs(3600)).is_some());
        assert_eq!(std::fs::read_dir(&cache).unwrap().count(), before);
    }

    #[test]
    fn the_cache_keeps_its_newest_entries() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5u64 {
            let p = dir.path().join(format!("e{i}"));
            std::fs::write(&p, "0123456789abcdef").unwrap();
            let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + i);
            std::fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        prune(dir.path(), 3);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["e2", "e3", "e4"]);
    }
}
