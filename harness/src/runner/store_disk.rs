//! The broker's store folder size, sampled from outside once a second (`store_disk_mb`): what
//! retention keeps bounded, measured the way `du` does (allocated blocks), so sparse files and
//! the unwritten tail of a CommitLog file count for what they occupy.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// MiB allocated under every `store*` folder of `job_dir` (one broker's `store`, a cluster's
/// `store-0`, `store-1`, …); None when there is none.
pub fn store_disk_mb(job_dir: &Path) -> Option<f64> {
    let mut found = false;
    let mut bytes = 0u64;
    for e in std::fs::read_dir(job_dir).ok()?.flatten() {
        if e.file_name().to_string_lossy().starts_with("store") && e.path().is_dir() {
            found = true;
            bytes += allocated(&e.path());
        }
    }
    found.then(|| bytes as f64 / (1024.0 * 1024.0))
}

fn allocated(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| Some((e.path(), e.metadata().ok()?)))
        .map(|(path, meta)| {
            if meta.is_dir() {
                allocated(&path)
            } else {
                meta.blocks() * 512
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_store_folder_counts_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(store_disk_mb(dir.path()), None);
        for (sub, mib) in [
            ("store-0/commitlog", 1usize),
            ("store-1/cq/a", 2),
            ("logs", 4),
        ] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
            std::fs::write(dir.path().join(sub).join("f"), vec![1u8; mib << 20]).unwrap();
        }
        let mb = store_disk_mb(dir.path()).unwrap();
        // Blocks hold at least the bytes written; allow a little file-system overhead.
        assert!((3.0..3.1).contains(&mb), "{mb}");
    }
}
