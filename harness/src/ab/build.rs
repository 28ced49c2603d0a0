//! The two sides of an A/B run: a broker binary given by path, or a git revision that is
//! checked out into its own git worktree (the user's work tree is never touched) and built
//! with `cargo build --release -p broker-under-test`.
//!
//! Every binary is first copied to `<build dir>/bin/`, named by its content (a path) or its
//! commit (a revision): building a revision may overwrite a binary given by path when both
//! share a cargo target folder (`make gate-perf` shares one, so the base build reuses the
//! compiled dependencies), and a revision already built is not built again.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use harness_model::fnv::Fnv1a;

/// Why a side could not be resolved. All of them are the user's input (exit 3).
#[derive(Debug, thiserror::Error)]
pub enum SideError {
    #[error("--{side} {spec}: neither a file nor a git revision of {repo} ({git})")]
    Unknown {
        side: &'static str,
        spec: String,
        repo: String,
        git: String,
    },
    #[error("--{side} {spec}: revision {sha} does not build (`cargo build --release -p broker-under-test`); the last lines of {log}:\n{tail}")]
    DoesNotBuild {
        side: &'static str,
        spec: String,
        sha: String,
        log: String,
        tail: String,
    },
    #[error("--{side} {spec}: {what}: {source}")]
    Io {
        side: &'static str,
        spec: String,
        what: String,
        #[source]
        source: std::io::Error,
    },
}

/// Where revisions are built.
#[derive(Debug, Clone)]
pub struct BuildPlaces {
    /// The git repository revisions are looked up in.
    pub repo: PathBuf,
    /// Worktrees, build logs and the binary copies (`bin/`).
    pub build_dir: PathBuf,
    /// `CARGO_TARGET_DIR` of revision builds.
    pub cargo_target_dir: PathBuf,
}

/// A resolved side.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SideBinary {
    /// `a` or `b`.
    pub side: &'static str,
    /// As given on the command line.
    pub spec: String,
    /// The commit, for a revision.
    pub revision: Option<String>,
    /// The copy that runs.
    pub bin: PathBuf,
}

fn io_err(
    side: &'static str,
    spec: &str,
    what: impl Into<String>,
) -> impl FnOnce(std::io::Error) -> SideError {
    let (spec, what) = (spec.to_owned(), what.into());
    move |source| SideError::Io {
        side,
        spec,
        what,
        source,
    }
}

/// Copies `from` to `to` unless it is already there, through a temporary name so that an
/// interrupted copy never looks finished.
fn install(from: &Path, to: &Path) -> std::io::Result<()> {
    if to.is_file() {
        return Ok(());
    }
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = to.with_extension("tmp");
    std::fs::copy(from, &tmp)?;
    std::fs::rename(&tmp, to)
}

/// Resolves path sides first (copies of them are taken before any build can overwrite them),
/// then revisions.
pub fn resolve_sides(
    specs: [(&'static str, &str); 2],
    places: &BuildPlaces,
    quiet: bool,
) -> Result<[SideBinary; 2], SideError> {
    let mut out: [Option<SideBinary>; 2] = [None, None];
    for (i, (side, spec)) in specs.iter().enumerate() {
        if Path::new(spec).is_file() {
            out[i] = Some(snapshot(side, spec, places)?);
        }
    }
    for (i, (side, spec)) in specs.iter().enumerate() {
        if out[i].is_none() {
            out[i] = Some(build_revision(side, spec, places, quiet)?);
        }
    }
    let [a, b] = out;
    let sides = [a.expect("resolved above"), b.expect("resolved above")];
    prune(&places.build_dir.join("bin"), &sides);
    Ok(sides)
}

/// Copies kept per kind (`path-`, `rev-`) besides the ones in use: every new build of the
/// work tree and every new parent commit would otherwise add a binary to `bin/` for good.
const KEEP_COPIES: usize = 4;

fn prune(bin_dir: &Path, in_use: &[SideBinary]) {
    let Ok(entries) = std::fs::read_dir(bin_dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    for prefix in ["path-", "rev-"] {
        let of_kind = files.iter().filter(|(_, p)| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        });
        for (_, p) in of_kind.skip(KEEP_COPIES) {
            let used = in_use
                .iter()
                .any(|s| std::path::absolute(p).is_ok_and(|a| a == s.bin));
            if !used {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

fn snapshot(side: &'static str, spec: &str, places: &BuildPlaces) -> Result<SideBinary, SideError> {
    let bytes = std::fs::read(spec).map_err(io_err(side, spec, "reading the binary"))?;
    let mut h = Fnv1a::new();
    h.write(&bytes);
    let bin = places
        .build_dir
        .join("bin")
        .join(format!("path-{:016x}", h.finish()));
    install(Path::new(spec), &bin).map_err(io_err(side, spec, "copying the binary"))?;
    Ok(SideBinary {
        side,
        spec: spec.to_owned(),
        revision: None,
        bin: std::path::absolute(&bin).unwrap_or(bin),
    })
}

fn git(repo: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        Err(if err.is_empty() {
            format!("git {} failed", args.join(" "))
        } else {
            err
        })
    }
}

fn build_revision(
    side: &'static str,
    spec: &str,
    places: &BuildPlaces,
    quiet: bool,
) -> Result<SideBinary, SideError> {
    let unknown = |git: String| SideError::Unknown {
        side,
        spec: spec.to_owned(),
        repo: places.repo.display().to_string(),
        git,
    };
    if spec.starts_with('-') {
        return Err(unknown("a revision never starts with `-`".into()));
    }
    let sha = git(
        &places.repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{spec}^{{commit}}"),
        ],
    )
    .map_err(|e| {
        unknown(if e.contains("failed") {
            "no such revision".into()
        } else {
            e
        })
    })?;
    let short = &sha[..12.min(sha.len())];
    let bin = places.build_dir.join("bin").join(format!("rev-{sha}"));
    let resolved = |bin: PathBuf| SideBinary {
        side,
        spec: spec.to_owned(),
        revision: Some(sha.clone()),
        bin: std::path::absolute(&bin).unwrap_or(bin),
    };
    if bin.is_file() {
        if !quiet {
            eprintln!(
                "ab: --{side} {spec} ({short}): built before, {}",
                bin.display()
            );
        }
        return Ok(resolved(bin));
    }
    std::fs::create_dir_all(places.build_dir.join("src")).map_err(io_err(
        side,
        spec,
        "creating the build folder",
    ))?;
    let build_dir = std::path::absolute(&places.build_dir).map_err(io_err(
        side,
        spec,
        "resolving the build folder",
    ))?;
    let tree = build_dir.join("src").join(short);
    let log_path = build_dir.join(format!("build-{short}.log"));
    let target = std::path::absolute(&places.cargo_target_dir).map_err(io_err(
        side,
        spec,
        "resolving the cargo target folder",
    ))?;
    // A worktree left by an interrupted build is replaced.
    let _ = git(
        &places.repo,
        &["worktree", "remove", "--force", &tree.to_string_lossy()],
    );
    let _ = std::fs::remove_dir_all(&tree);
    let _ = git(&places.repo, &["worktree", "prune"]);
    git(
        &places.repo,
        &[
            "worktree",
            "add",
            "--detach",
            "--force",
            &tree.to_string_lossy(),
            &sha,
        ],
    )
    .map_err(|e| unknown(format!("git worktree add: {e}")))?;
    if !quiet {
        eprintln!(
            "ab: building --{side} {spec} ({short}) in {} (cargo target {}, log {})",
            tree.display(),
            target.display(),
            log_path.display()
        );
    }
    // Cargo puts the revision's broker where the work tree's own release broker is when the
    // two share a target folder, and a later `cargo build` of the work tree, being fresh, does
    // not put it back. So it is kept aside and restored after the build.
    let uplifted = target.join("release").join("broker-under-test");
    let aside = build_dir.join("bin").join(".work-tree-broker");
    let kept = uplifted.is_file()
        && std::fs::create_dir_all(build_dir.join("bin")).is_ok()
        && std::fs::copy(&uplifted, &aside).is_ok();
    let started = Instant::now();
    let built = cargo_build(&tree, &target, &log_path);
    let restore = || {
        if kept {
            let _ = std::fs::rename(&aside, &uplifted);
        }
    };
    let _ = git(
        &places.repo,
        &["worktree", "remove", "--force", &tree.to_string_lossy()],
    );
    let _ = std::fs::remove_dir_all(&tree);
    let ok = match built {
        Ok(ok) => ok,
        Err(e) => {
            restore();
            return Err(io_err(side, spec, "running cargo")(e));
        }
    };
    if !ok {
        restore();
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        // From the first error on (the compiler's own words), else the end of the log.
        let from = lines
            .iter()
            .position(|l| l.starts_with("error"))
            .unwrap_or(lines.len().saturating_sub(15));
        let tail = lines[from..lines.len().min(from + 25)].join("\n");
        return Err(SideError::DoesNotBuild {
            side,
            spec: spec.to_owned(),
            sha,
            log: log_path.display().to_string(),
            tail,
        });
    }
    let installed = install(&uplifted, &bin);
    restore();
    installed.map_err(io_err(side, spec, "copying the built binary"))?;
    if !quiet {
        eprintln!(
            "ab: built --{side} {spec} ({short}) in {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(resolved(bin))
}

/// `cargo build --release -p broker-under-test` in `tree`; Ok(false) when it fails.
fn cargo_build(tree: &Path, target: &Path, log: &Path) -> std::io::Result<bool> {
    let log_file = std::fs::File::create(log)?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "-p", "broker-under-test"])
        .current_dir(tree)
        .env("CARGO_TARGET_DIR", target)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .status()?;
    Ok(status.success())
}
