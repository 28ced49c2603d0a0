//! "Is this message in memory?" — the two tests RocketMQ uses on the consumer path: 4.x's
//! distance heuristic (consumer §4: within `accessMessageInMemoryMaxRatio` % of physical RAM
//! from the CommitLog head) and 5.3.3's page-cache probe (`MappedByteBuffer.isLoaded`, i.e.
//! mincore(2) on the record's pages).

use std::{fs::File, os::fd::AsRawFd, path::Path};

/// Total physical memory in bytes; RocketMQ assumes 24 GiB when it cannot tell.
pub fn total_physical_memory() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && size > 0 {
        pages as u64 * size as u64
    } else {
        24 << 30
    }
}

/// 4.x `checkInDiskByCommitOffset` negated: the record at `phy_offset` counts as in memory when
/// it is within `ratio` % of RAM behind the CommitLog's max offset.
pub fn in_memory_by_distance(commit_log_max_offset: i64, phy_offset: i64, ratio: u64) -> bool {
    let budget = total_physical_memory() / 100 * ratio;
    (commit_log_max_offset - phy_offset).max(0) as u64 <= budget
}

/// Whether every page of `len` bytes at CommitLog offset `phy_offset` is resident in the page
/// cache. `None` when the file cannot be mapped.
pub fn resident(commitlog_dir: &Path, file_size: i64, phy_offset: i64, len: usize) -> Option<bool> {
    if file_size <= 0 || phy_offset < 0 {
        return None;
    }
    let base = phy_offset / file_size * file_size;
    let file = File::open(commitlog_dir.join(format!("{base:020}"))).ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let in_file = (phy_offset - base) as usize;
    let start = in_file / page * page;
    let map_len = (in_file + len.max(1)).div_ceil(page) * page - start;
    // SAFETY: a fresh read-only shared mapping of an open file, unmapped below; mincore only
    // writes `map_len / page` bytes into `vec`, which is that long.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            map_len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            start as libc::off_t,
        );
        if addr == libc::MAP_FAILED {
            return None;
        }
        let mut vec = vec![0u8; map_len / page];
        let rc = libc::mincore(addr, map_len, vec.as_mut_ptr());
        libc::munmap(addr, map_len);
        if rc != 0 {
            return None;
        }
        Some(vec.iter().all(|b| b & 1 == 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_test_and_probe() {
        assert!(in_memory_by_distance(1000, 0, 40));
        assert!(!in_memory_by_distance(i64::MAX, 0, 40));
        let dir = tempfile::tempdir().unwrap();
        let data = vec![7u8; 8192];
        std::fs::write(dir.path().join(format!("{:020}", 0)), &data).unwrap();
        // Just written: in the page cache.
        assert_eq!(resident(dir.path(), 8192, 100, 200), Some(true));
        assert_eq!(resident(dir.path(), 8192, 9000, 10), None);
    }
}
