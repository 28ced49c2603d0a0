//! How a fidelity row's profile runs: once with both brokers in its matrix, once per broker of
//! an earlier row at that broker's own rates (`rate_from`), or once per broker all at once
//! (`brokers = "side_by_side"`). Each run is `runner::run_profile` into its own folder; the
//! table reads a row's folders together (`harness_analysis::fidelity::load_row`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use harness_analysis::fidelity::{apache_release, broker_values, load_row, RateFrom, RowStatus};
use tokio_util::sync::CancellationToken;

use crate::kind::select::KindCache;
use crate::runner;

/// What every run of a fidelity run shares.
pub(super) struct Env<'a> {
    pub broker_bin: Option<&'a Path>,
    /// The fidelity command line, recorded in each run's provenance.
    pub command: &'a str,
    pub cancel: &'a CancellationToken,
    /// One name server per Apache version for the whole fidelity run.
    pub kinds: &'a Arc<KindCache>,
}

/// One profile run into `folder`.
pub(super) fn run_one(
    profile_path: &Path,
    sets: &[String],
    folder: PathBuf,
    env: &Env<'_>,
) -> RowStatus {
    let profile = match harness_model::profile::Profile::load(profile_path, sets) {
        Ok(p) => p,
        Err(e) => return RowStatus::Failed(format!("{e:#}")),
    };
    let opts = runner::RunOptions {
        out: Some(folder),
        broker_bin: env.broker_bin.map(Path::to_path_buf),
        command_line: env.command.to_owned(),
        cancel: env.cancel.clone(),
        kinds: Some(Arc::clone(env.kinds)),
        ..Default::default()
    };
    match runner::run_profile(&profile, &opts) {
        Ok(o) if o.interrupted => RowStatus::Interrupted,
        Ok(_) => RowStatus::Measured,
        Err(e) => RowStatus::Failed(format!("{e:#}")),
    }
}

/// A `rate_from` row's runs: one per broker of the earlier row, each at its own rates, into
/// `<out>/<id>/<kind>-<version>` (the table reads them together).
pub(super) fn per_broker_runs(
    out: &Path,
    id: &str,
    from: &RateFrom,
    sets: &[String],
) -> Result<Vec<(PathBuf, Vec<String>)>, String> {
    let source = out.join(&from.row);
    let data = load_row(&source).map_err(|e| {
        format!(
            "needs row {}'s {} ({e}); run it in the same --out first (--rows {},{id})",
            from.row, from.metric, from.row
        )
    })?;
    let figures = broker_values(
        &data,
        &from.metric,
        &from.cells,
        from.aggregate,
        &apache_release(&source),
    );
    if figures.is_empty() {
        return Err(format!(
            "row {} has no {} for the cells {:?}",
            from.row, from.metric, from.cells
        ));
    }
    Ok(figures
        .into_iter()
        .map(|(kind, version, base)| {
            let mut s = sets.to_vec();
            s.push(format!("broker.kind={kind}"));
            if !version.is_empty() {
                s.push(format!("broker.version={version}"));
            }
            s.push(format!("workload.steps={}", from.steps(base)));
            let name = if version.is_empty() {
                kind
            } else {
                format!("{kind}-{version}")
            };
            (out.join(id).join(name), s)
        })
        .collect())
}

/// A `side_by_side` row's runs: one per broker of its profile's `broker.kind` ×
/// `broker.version` axes, into `<out>/<id>/<kind>-<version>` (the table reads them together).
pub(super) fn side_by_side_runs(
    out: &Path,
    id: &str,
    profile_path: &Path,
    sets: &[String],
) -> Result<Vec<(PathBuf, Vec<String>)>, String> {
    let profile =
        harness_model::profile::Profile::load(profile_path, sets).map_err(|e| format!("{e:#}"))?;
    let axis = |key: &str| -> Vec<String> {
        profile
            .axes
            .iter()
            .find(|a| a.key == key)
            .map(|a| {
                a.values
                    .iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (kinds, versions) = (axis("broker.kind"), axis("broker.version"));
    if kinds.len() < 2 || versions.is_empty() {
        return Err(format!(
            "`brokers = \"side_by_side\"` needs {}'s matrix to have a `broker.kind` axis of two kinds and a `broker.version` axis",
            profile_path.display()
        ));
    }
    Ok(kinds
        .iter()
        .flat_map(|kind| versions.iter().map(move |version| (kind, version)))
        .map(|(kind, version)| {
            let mut s = sets.to_vec();
            s.push(format!("broker.kind={kind}"));
            s.push(format!("broker.version={version}"));
            (out.join(id).join(format!("{kind}-{version}")), s)
        })
        .collect())
}

/// Runs a `side_by_side` row's runs at once, a named thread each, and joins them all. The
/// row's status is the first failure, else the first interruption.
pub(super) fn run_at_once(
    profile_path: &Path,
    runs: Vec<(PathBuf, Vec<String>)>,
    env: &Env<'_>,
) -> RowStatus {
    let statuses: Vec<RowStatus> = std::thread::scope(|scope| {
        let threads: Vec<_> = runs
            .into_iter()
            .map(|(folder, sets)| {
                let name = format!(
                    "fidelity-{}",
                    folder.file_name().unwrap_or_default().to_string_lossy()
                );
                std::thread::Builder::new()
                    .name(name)
                    .spawn_scoped(scope, move || run_one(profile_path, &sets, folder, env))
                    .map_err(|e| RowStatus::Failed(format!("starting a side-by-side run: {e}")))
            })
            .collect();
        threads
            .into_iter()
            .map(|t| match t {
                Ok(handle) => handle
                    .join()
                    .unwrap_or_else(|_| RowStatus::Failed("a side-by-side run panicked".into())),
                Err(status) => status,
            })
            .collect()
    });
    let first = |f: &dyn Fn(&RowStatus) -> bool| statuses.iter().find(|s| f(s)).cloned();
    first(&|s| matches!(s, RowStatus::Failed(_)))
        .or_else(|| first(&|s| *s != RowStatus::Measured))
        .unwrap_or(RowStatus::Measured)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_by_side_row_runs_once_per_broker_and_reports_the_first_failure() {
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("p.toml");
        let text = "name = \"p\"\n[workload]\nrate = 10\nduration = \"1s\"\n[matrix]\n\"broker.kind\" = [\"in-tree\", \"apache\"]\n\"broker.version\" = [\"5.3.3\"]\n";
        std::fs::write(&profile, text).unwrap();
        let out = dir.path().join("out");
        let runs = side_by_side_runs(&out, "9", &profile, &["workload.rate=20".into()]).unwrap();
        let folders: Vec<_> = runs.iter().map(|(f, _)| f.clone()).collect();
        assert_eq!(
            folders,
            [out.join("9/in-tree-5.3.3"), out.join("9/apache-5.3.3")]
        );
        assert_eq!(
            runs[1].1,
            [
                "workload.rate=20",
                "broker.kind=apache",
                "broker.version=5.3.3"
            ]
        );
        // One kind is no pair to run side by side.
        std::fs::write(&profile, text.replace(", \"apache\"", "")).unwrap();
        let e = side_by_side_runs(&out, "9", &profile, &[]).unwrap_err();
        assert!(e.contains("two kinds"), "{e}");

        // Both threads run and are joined: a profile that cannot load fails each of them.
        let env = Env {
            broker_bin: None,
            command: "",
            cancel: &CancellationToken::new(),
            kinds: &Arc::new(KindCache::new(None)),
        };
        let status = run_at_once(&dir.path().join("missing.toml"), runs, &env);
        assert!(
            matches!(&status, RowStatus::Failed(e) if e.contains("missing.toml")),
            "{status:?}"
        );
    }
}
