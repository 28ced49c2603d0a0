//! How full the disk is (retention reference A3): `UtilAll.getDiskPartitionSpaceUsedPercent`
//! of the CommitLog, consume-queue and index paths, or our capped store folder.

use std::path::Path;

use super::config::DiskModel;
use crate::keys::VersionProfile;

/// The three ratios RocketMQ measures, 0–1 rounded up to 0.01 (4.9+), −1 when unknown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskRatios {
    pub commit_log: f64,
    pub consume_queue: f64,
    pub index: f64,
}

/// Measures the store under `root` as `model` says.
pub(crate) fn measure(root: &Path, model: DiskModel, profile: VersionProfile) -> DiskRatios {
    let paths = [
        root.join("commitlog"),
        root.join("consumequeue"),
        root.join("index"),
    ];
    let [commit_log, consume_queue, index] = match model {
        DiskModel::Real => paths.map(|p| partition_used_ratio(&p, profile)),
        DiskModel::Capped(cap) => {
            // One disk holds the whole store, as on a broker with one data disk: every path
            // that exists sees the same ratio.
            let ratio = ceil_percent(allocated_bytes(root) as u128, cap as u128);
            paths.map(|p| if p.exists() { ratio } else { -1.0 })
        }
    };
    DiskRatios {
        commit_log,
        consume_queue,
        index,
    }
}

/// `used / entire` rounded up to a whole percent, as a fraction.
fn ceil_percent(used: u128, entire: u128) -> f64 {
    if entire == 0 {
        return -1.0;
    }
    let round = u128::from(!(used * 100).is_multiple_of(entire));
    ((used * 100) / entire + round) as f64 / 100.0
}

/// 4.9+/5.x: `used / (used + usable)` rounded up to 0.01 (what `df` shows); 4.3:
/// `(total − free) / total` unrounded. −1 when the path is missing.
fn partition_used_ratio(path: &Path, profile: VersionProfile) -> f64 {
    use std::os::unix::ffi::OsStrExt;
    if !path.exists() {
        return -1.0;
    }
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return -1.0;
    };
    // SAFETY: statvfs is a plain C struct of integers, for which all-zero bytes are valid.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return -1.0;
    }
    let frsize = st.f_frsize as u128;
    let total = st.f_blocks as u128 * frsize;
    let free = st.f_bfree as u128 * frsize;
    let usable = st.f_bavail as u128 * frsize;
    let used = total.saturating_sub(free);
    if profile == VersionProfile::V4_3 {
        return if total == 0 {
            -1.0
        } else {
            used as f64 / total as f64
        };
    }
    ceil_percent(used, used + usable)
}

/// Bytes the files under `dir` occupy on disk (`du`): allocated blocks, so sparse consume-queue
/// files and the unwritten tail of a CommitLog file count for what they really use.
pub fn allocated_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut sum = 0;
    for e in entries.flatten() {
        let Ok(meta) = e.metadata() else { continue };
        if meta.is_dir() {
            sum += allocated_bytes(&e.path());
        } else {
            sum += meta.blocks() * 512;
        }
    }
    sum
}

/// Java's `String.valueOf(double)` for the ratios: always a fraction part (`1.0`, `-1.0`).
pub(crate) fn java_double(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_up_to_a_whole_percent() {
        assert_eq!(ceil_percent(9001, 10000), 0.91);
        assert_eq!(ceil_percent(9000, 10000), 0.90);
        assert_eq!(ceil_percent(0, 10000), 0.0);
        assert_eq!(ceil_percent(1, 0), -1.0);
        assert_eq!(java_double(1.0), "1.0");
        assert_eq!(java_double(-1.0), "-1.0");
        assert_eq!(java_double(0.45), "0.45");
    }

    #[test]
    fn a_capped_store_is_its_allocated_bytes_over_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("commitlog")).unwrap();
        std::fs::write(dir.path().join("commitlog").join("a"), vec![1u8; 64 * 1024]).unwrap();
        let r = measure(
            dir.path(),
            DiskModel::Capped(128 * 1024),
            VersionProfile::V5_3,
        );
        // Blocks are at least the bytes written; a file system may add a block or two.
        assert!((0.50..=0.60).contains(&r.commit_log), "{r:?}");
        assert_eq!(r.consume_queue, -1.0, "a missing path is -1");
        let real = measure(dir.path(), DiskModel::Real, VersionProfile::V5_3);
        assert!((0.0..=1.0).contains(&real.commit_log), "{real:?}");
    }
}
