//! `[broker] store_tmpfs = "64MiB"`: a cell's store on a real small disk. RocketMQ decides that
//! its disk is full from `statvfs` of the store's partition (retention reference A3), which a
//! tmpfs of its own gives it; broker-under-test reads the same (`DiskModel::Real`). So both
//! kinds of broker fill the same kind of disk, and Apache, which has no
//! `injectStoreSizeCapBytes`, can be driven into code 14 at all.
//!
//! The harness mounts the tmpfs on the job's `store` folder before the broker starts and
//! unmounts it when the job ends: [`TmpfsMount`] unmounts on drop, so a job that ends early
//! (an error, Ctrl-C or SIGTERM, which end the job through its normal path, or a panic, which
//! unwinds through it) leaves no mount behind. Only SIGKILL of the harness does; `mount | grep
//! tmpfs` then shows it under the result folder. Mounting needs root (CAP_SYS_ADMIN): the run
//! refuses before cell 1 (exit 4) when it is not root or a trial mount fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use harness_model::matrix::Cell;
use harness_model::profile::{parse_store_tmpfs, Model, Profile, STORE_TMPFS_KEY};

/// Why a tmpfs store cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum TmpfsError {
    #[error("`{STORE_TMPFS_KEY}` mounts a tmpfs for the store, which needs root (CAP_SYS_ADMIN); this harness runs as uid {euid}: run it as root (CI does), or drop `{STORE_TMPFS_KEY}` and use broker-under-test's injectStoreSizeCapBytes (profiles/disk-full.toml)")]
    NotRoot { euid: u32 },
    #[error("{program} {}: {source}", args.join(" "))]
    Spawn {
        program: &'static str,
        args: Vec<String>,
        source: std::io::Error,
    },
    #[error("{program} {} failed ({status}): {stderr}", args.join(" "))]
    Failed {
        program: &'static str,
        args: Vec<String>,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("creating the mount point {path}: {source}")]
    MountPoint {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// `mount`'s arguments for a tmpfs of `bytes` on `dir`: private to the broker (mode 0755 as a
/// fresh folder), and `size` in bytes, which is what `statvfs` then reports as the disk.
pub fn mount_args(dir: &Path, bytes: u64) -> Vec<String> {
    vec![
        "-t".into(),
        "tmpfs".into(),
        "-o".into(),
        format!("size={bytes},mode=0755"),
        "tmpfs".into(),
        dir.display().to_string(),
    ]
}

/// The two ways to unmount `dir`, in order: a plain `umount`, then a lazy one (`-l`: detached
/// now, freed when the last process lets go) for a mount something still holds, such as a
/// broker that outlived its SIGKILL.
pub fn umount_args(dir: &Path) -> [Vec<String>; 2] {
    let d = dir.display().to_string();
    [vec![d.clone()], vec!["-l".into(), d]]
}

/// Refuses a tmpfs store unless the harness runs as root.
pub fn require_root(euid: u32) -> Result<(), TmpfsError> {
    if euid == 0 {
        Ok(())
    } else {
        Err(TmpfsError::NotRoot { euid })
    }
}

fn run(program: &'static str, args: Vec<String>) -> Result<(), TmpfsError> {
    let out = Command::new(program)
        .args(&args)
        .output()
        .map_err(|source| TmpfsError::Spawn {
            program,
            args: args.clone(),
            source,
        })?;
    if out.status.success() {
        return Ok(());
    }
    Err(TmpfsError::Failed {
        program,
        args,
        status: out.status,
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
    })
}

/// A tmpfs mounted on a folder, unmounted (and the emptied mount point removed) on drop.
#[derive(Debug)]
pub struct TmpfsMount {
    dir: PathBuf,
    bytes: u64,
}

impl TmpfsMount {
    /// Mounts a tmpfs of `bytes` on `dir` (created if missing; it must be empty).
    pub fn mount(dir: &Path, bytes: u64) -> Result<TmpfsMount, TmpfsError> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        require_root(unsafe { libc::geteuid() })?;
        std::fs::create_dir_all(dir).map_err(|source| TmpfsError::MountPoint {
            path: dir.to_owned(),
            source,
        })?;
        run("mount", mount_args(dir, bytes))?;
        Ok(TmpfsMount {
            dir: dir.to_owned(),
            bytes,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Unmounts now; what went wrong, if anything (the lazy unmount's error when both failed).
    fn unmount(&self) -> Result<(), TmpfsError> {
        let [plain, lazy] = umount_args(&self.dir);
        run("umount", plain).or_else(|_| run("umount", lazy))
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        match self.unmount() {
            // The mount point is the job's empty `store` folder again.
            Ok(()) => {
                let _ = std::fs::remove_dir(&self.dir);
            }
            Err(e) => eprintln!(
                "warning: the store tmpfs on {} is still mounted: {e}",
                self.dir.display()
            ),
        }
    }
}

/// The tmpfs size a cell asks for, if any (checked by [`check_cells`] before the run).
pub fn cell_tmpfs(cell: &Cell) -> Option<u64> {
    cell.broker
        .get(STORE_TMPFS_KEY)
        .and_then(|v| parse_store_tmpfs(v).ok())
}

/// Before cell 1: every `store_tmpfs` value parses and is asked for where the harness starts
/// one broker per job (exit 3 otherwise, naming where it was written); then the harness must be
/// root and a trial mount must work (exit 4 otherwise), so that no cell fails for it later.
/// `external`: the run drives brokers it did not start (`--target`, `--namesrv`).
pub fn check_cells(profile: &Profile, cells: &[Cell], external: bool) -> anyhow::Result<()> {
    let wanted: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.broker.contains_key(STORE_TMPFS_KEY))
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let at = profile
        .broker_origins
        .get(STORE_TMPFS_KEY)
        .cloned()
        .unwrap_or_else(|| profile.path.display().to_string());
    let invalid =
        |why: &dyn std::fmt::Display| crate::exit::invalid(anyhow::anyhow!("{at}: {why}"));
    for cell in &wanted {
        parse_store_tmpfs(&cell.broker[STORE_TMPFS_KEY]).map_err(|e| invalid(&e))?;
    }
    let unsupported = if external {
        Some("--target / --namesrv drive brokers the harness did not start, whose store it cannot move")
    } else if profile.cluster.is_some() {
        Some("[cluster] is not supported yet: the tmpfs is mounted on a lone broker's store")
    } else if wanted.iter().any(|c| c.workload.model == Model::Knee) {
        Some("model = \"knee\" is not supported: its probes share one broker and store")
    } else {
        None
    };
    if let Some(why) = unsupported {
        return Err(invalid(&format!("`{STORE_TMPFS_KEY}`: {why}")));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    require_root(unsafe { libc::geteuid() })?;
    let scratch = tempfile::Builder::new()
        .prefix("harness-tmpfs-check")
        .tempdir()?;
    let trial = TmpfsMount::mount(&scratch.path().join("store"), 1 << 20).map_err(|e| {
        anyhow::anyhow!("`{STORE_TMPFS_KEY}`: a trial tmpfs mount failed, so no cell could have its store on one: {e}")
    })?;
    drop(trial);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(broker: &str, extra: &str) -> (Profile, Vec<Cell>) {
        let text = format!(
            "name = \"t\"\n{extra}\n[workload]\nrate = 10\nduration = \"1s\"\n[broker]\n{broker}\n"
        );
        let p = Profile::parse(&text, "t.toml", Path::new("t.toml"), &[]).unwrap();
        let cells = harness_model::matrix::expand(&p).unwrap();
        (p, cells)
    }

    #[test]
    fn the_commands_mount_a_sized_tmpfs_and_unmount_plainly_then_lazily() {
        let dir = Path::new("/r/cell-r1/store");
        assert_eq!(
            mount_args(dir, 64 << 20).join(" "),
            "-t tmpfs -o size=67108864,mode=0755 tmpfs /r/cell-r1/store"
        );
        let [plain, lazy] = umount_args(dir);
        assert_eq!(plain, ["/r/cell-r1/store"]);
        assert_eq!(lazy, ["-l", "/r/cell-r1/store"]);
    }

    #[test]
    fn only_root_may_mount_and_the_refusal_says_what_to_do() {
        assert!(require_root(0).is_ok());
        let e = require_root(1000).unwrap_err().to_string();
        assert!(
            e.contains("uid 1000") && e.contains("run it as root"),
            "{e}"
        );
        assert!(e.contains("injectStoreSizeCapBytes"), "{e}");
        let code = crate::exit::code_for(&anyhow::Error::new(require_root(7).unwrap_err()));
        assert_eq!(code, crate::exit::RUN_FAILED);
    }

    #[test]
    fn bad_sizes_and_unsupported_runs_are_invalid_input_before_any_mount() {
        let (p, cells) = profile("store_tmpfs = \"64MB\"", "");
        let e = check_cells(&p, &cells, false).unwrap_err();
        assert_eq!(crate::exit::code_for(&e), crate::exit::INVALID_INPUT);
        assert!(format!("{e:#}").starts_with("t.toml:7:1:"), "{e:#}");
        let (p, cells) = profile("store_tmpfs = \"64MiB\"", "");
        let e = check_cells(&p, &cells, true).unwrap_err();
        assert_eq!(crate::exit::code_for(&e), crate::exit::INVALID_INPUT);
        assert!(format!("{e:#}").contains("--target"), "{e:#}");
        let (p, cells) = profile("waitTimeMillsInSendQueue = 200", "");
        assert!(check_cells(&p, &cells, true).is_ok(), "no tmpfs asked for");
        assert_eq!(cell_tmpfs(&cells[0]), None);
    }

    /// A real mount, unmounted by drop. Needs root: as any other user it writes why it did
    /// not run to the terminal (stderr directly, past the test harness's capture) and passes;
    /// CI runs as root, so it runs there.
    #[test]
    fn a_mount_is_a_sized_disk_and_is_gone_after_drop() {
        use std::io::Write;
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED a_mount_is_a_sized_disk_and_is_gone_after_drop: not root"
            );
            return;
        }
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("store");
        let m = TmpfsMount::mount(&dir, 8 << 20).unwrap();
        assert_eq!(m.bytes(), 8 << 20);
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        let line = mounts
            .lines()
            .find(|l| l.split(' ').nth(1) == Some(&*dir.display().to_string()))
            .expect("mounted");
        assert!(line.starts_with("tmpfs "), "{line}");
        std::fs::write(dir.join("f"), vec![1u8; 1 << 20]).unwrap();
        drop(m);
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        assert!(!mounts.contains(&*dir.display().to_string()), "{mounts}");
        assert!(!dir.exists(), "the emptied mount point is removed");
    }
}
