//! `harness fidelity`: runs each row's profile of `profiles/fidelity/rows.toml` (the model and
//! Apache RocketMQ alternating within one run, as the profile's `broker.kind` axis says; or one
//! run per broker, after each other for a `rate_from` row and at once for a `side_by_side` one)
//! into `<out>/<row>/`, and after every row rewrites `table.md`, `table.csv` and `provenance.json`
//! in `<out>` (atomically), so an interrupted run keeps the rows it finished and says which it
//! did not reach. The verdicts are `harness_analysis::fidelity`'s; this file runs and writes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Context;
use harness_analysis::fidelity::{
    counts, load_row, render_csv, render_markdown, table_for, Brokers, RowOutcome, RowSpec,
    RowStatus, RowsFile,
};
use harness_results::write_atomic;
use tokio_util::sync::CancellationToken;

use crate::kind::select::KindCache;
use crate::{exit, interrupt, provenance, runner};

mod runs;
use runs::{per_broker_runs, run_at_once, run_one, side_by_side_runs, Env};

#[derive(clap::Args, Debug, Clone)]
pub struct FidelityArgs {
    /// The row file.
    #[arg(long, default_value = "profiles/fidelity/rows.toml")]
    pub rows_file: PathBuf,
    /// Only the rows marked `quick`, with their `quick_set` overrides (at most 5 minutes).
    #[arg(long)]
    pub quick: bool,
    /// Only these rows (comma-separated ids, e.g. `1,5`); with --quick, their quick overrides.
    #[arg(long, value_delimiter = ',')]
    pub rows: Vec<String>,
    /// Output folder. Default: results/fidelity/<UTC timestamp>.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The broker-under-test binary (default: as for `run`).
    #[arg(long)]
    pub broker_bin: Option<PathBuf>,
    /// Do not run anything: judge the row folders already in --out again and rewrite the
    /// table (after a row's note changed, or to read an interrupted run; --rows then names
    /// the rows that finished).
    #[arg(long, requires = "out")]
    pub table_only: bool,
    /// `key=value` for every chosen row's profile, after the row's own: `--set
    /// broker.version=4.9.7` runs the rows on that release (each must have a version axis).
    /// Checked against every chosen row's profile before the first row runs.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// The run's provenance, rewritten with the table.
struct Stamp {
    command: String,
    start: SystemTime,
    load_start: String,
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// What was measured, when and by which source: from this process for a run, from the
/// folder's provenance.json for `--table-only`, which judges again and must not pass its own
/// time and commit off as the measurement's.
struct Measured {
    command: String,
    start: String,
    end: Option<String>,
    load_start: String,
    load_end: String,
    revision: Option<String>,
    tree: Option<String>,
}

impl Measured {
    fn now(stamp: &Stamp, finished: bool, p: &provenance::Provenance) -> Measured {
        Measured {
            command: stamp.command.clone(),
            start: provenance::utc(stamp.start).1,
            end: finished.then(|| provenance::utc(SystemTime::now()).1),
            load_start: stamp.load_start.clone(),
            load_end: loadavg(),
            revision: p.harness_revision.clone(),
            tree: p.harness_tree.as_json().map(str::to_owned),
        }
    }

    /// The measurement recorded in `out/provenance.json`, if there is one.
    fn recorded(out: &Path) -> Option<Measured> {
        let text = std::fs::read_to_string(out.join("provenance.json")).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_owned);
        Some(Measured {
            command: s("command")?,
            start: s("start")?,
            end: s("end"),
            load_start: s("load_start").unwrap_or_default(),
            load_end: s("load_now").unwrap_or_default(),
            revision: s("harness_revision"),
            tree: s("harness_tree"),
        })
    }
}

fn write_outputs(
    out: &Path,
    rows: &RowsFile,
    outcomes: &[RowOutcome],
    stamp: &Stamp,
    finished: bool,
    judged_again: bool,
) -> anyhow::Result<String> {
    let lines = table_for(rows, outcomes, out);
    let md = render_markdown(&lines);
    let csv = render_csv(&lines).context("rendering table.csv")?;
    let p = provenance::Provenance::gather();
    let (agree, differ, unknown) = counts(&lines);
    let versions: Vec<serde_json::Value> = outcomes
        .iter()
        .filter(|o| o.status == RowStatus::Measured)
        .filter_map(|o| {
            let text = std::fs::read_to_string(out.join(&o.id).join("run.json")).ok()?;
            let v: serde_json::Value = serde_json::from_str(&text).ok()?;
            Some(serde_json::json!({ "row": o.id, "brokers": v.get("brokers") }))
        })
        .collect();
    let measured = judged_again
        .then(|| Measured::recorded(out))
        .flatten()
        .unwrap_or_else(|| Measured::now(stamp, finished, &p));
    let judged = judged_again.then(|| {
        serde_json::json!({
            "command": stamp.command,
            "at": provenance::utc(stamp.start).1,
            "harness_revision": p.harness_revision,
            "harness_tree": p.harness_tree.as_json(),
        })
    });
    let json = serde_json::json!({
        "command": measured.command,
        "harness_revision": measured.revision,
        "harness_tree": measured.tree,
        "host": p.host,
        "kernel": p.kernel,
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "start": measured.start,
        "end": measured.end,
        "load_start": measured.load_start,
        "load_now": measured.load_end,
        "finished": measured.end.is_some(),
        "judged_again": judged,
        "rows": outcomes.iter().map(|o| serde_json::json!({
            "id": o.id,
            "status": match &o.status {
                RowStatus::Measured => "measured".to_owned(),
                RowStatus::Interrupted => "interrupted".to_owned(),
                RowStatus::Failed(e) => format!("failed: {e}"),
                RowStatus::NotSelected => "not selected".to_owned(),
            },
        })).collect::<Vec<_>>(),
        "brokers": versions,
        "agree": agree, "differ": differ, "no_figure": unknown,
    });
    let mut head = format!(
        "# Fidelity: broker-under-test against Apache RocketMQ\n\n{}\n\nStarted {} (load {}), {}; commit {}{}.\n\n",
        measured.command,
        measured.start,
        measured.load_start,
        match &measured.end {
            Some(end) => format!("ended {end} (load {})", measured.load_end),
            None => "**not finished: rows not reached say so**".to_owned(),
        },
        measured.revision.as_deref().unwrap_or("unknown"),
        if measured.tree.as_deref() == Some("dirty") {
            " (uncommitted changes)"
        } else {
            ""
        },
    );
    if judged_again {
        head.push_str(&format!(
            "Judged again {} by commit {} (`{}`): the figures are the measurement's, the relations and tolerances this commit's rows.toml.\n\n",
            provenance::utc(stamp.start).1,
            p.harness_revision.as_deref().unwrap_or("unknown"),
            stamp.command,
        ));
    }
    let io = |f: &str| format!("writing {}", out.join(f).display());
    write_atomic(&out.join("table.md"), format!("{head}{md}").as_bytes())
        .with_context(|| io("table.md"))?;
    write_atomic(&out.join("table.csv"), csv.as_bytes()).with_context(|| io("table.csv"))?;
    write_atomic(
        &out.join("provenance.json"),
        serde_json::to_string_pretty(&json)?.as_bytes(),
    )
    .with_context(|| io("provenance.json"))?;
    Ok(md)
}

/// A row's `--set`s: its own, its quick ones under --quick, then the command line's.
fn row_sets(spec: &RowSpec, args: &FidelityArgs) -> Vec<String> {
    let mut sets = spec.set.clone();
    if args.quick {
        sets.extend(spec.quick_set.iter().cloned());
    }
    sets.extend(args.set.iter().cloned());
    sets
}

pub fn run_fidelity(args: &FidelityArgs) -> anyhow::Result<ExitCode> {
    let rows = RowsFile::load(&args.rows_file).map_err(exit::invalid)?;
    let chosen = rows.select(&args.rows, args.quick).map_err(exit::invalid)?;
    if !args.set.is_empty() && !args.table_only {
        // A --set a row's profile refuses is a typo or the wrong row: say so before row 1.
        for spec in chosen.iter().filter(|r| r.profile.is_some()) {
            let path = spec.profile.as_deref().unwrap_or(Path::new(""));
            harness_model::profile::Profile::load(path, &row_sets(spec, args))
                .map_err(anyhow::Error::from)
                .and_then(|p| runner::check_cells(&p, args.broker_bin.as_deref()))
                .map_err(|e| {
                    exit::invalid(anyhow::anyhow!("row {}: {e:#}\nnothing was run", spec.id))
                })?;
        }
    }
    let start = SystemTime::now();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results/fidelity").join(provenance::utc(start).0));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let stamp = Stamp {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        start,
        load_start: loadavg(),
    };
    let runnable: Vec<_> = chosen.iter().filter(|r| r.profile.is_some()).collect();
    let mut outcomes: Vec<RowOutcome> = rows
        .row
        .iter()
        .map(|r| RowOutcome {
            id: r.id.clone(),
            status: if args.table_only
                && (args.rows.is_empty() || args.rows.contains(&r.id))
                && load_row(&out.join(&r.id)).is_ok()
            {
                RowStatus::Measured
            } else if runnable.iter().any(|c| c.id == r.id) && !args.table_only {
                RowStatus::Interrupted
            } else {
                RowStatus::NotSelected
            },
        })
        .collect();
    if args.table_only {
        print!(
            "{}",
            write_outputs(&out, &rows, &outcomes, &stamp, true, true)?
        );
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::copy(&args.rows_file, out.join("rows.toml"))
        .with_context(|| format!("copying {}", args.rows_file.display()))?;
    write_outputs(&out, &rows, &outcomes, &stamp, false, false)?;

    let cancel = CancellationToken::new();
    let done = CancellationToken::new();
    let signal_thread = interrupt::watch_ctrl_c("harness-signal", &cancel, &done)?;
    // One name server per Apache version for the whole run, its files in `out`, rather than
    // one per row (17 in a whole run, 2.4-3.4 s each); stopped when `kinds` drops, below.
    let kinds = Arc::new(KindCache::new(Some(out.clone())));
    let env = Env {
        broker_bin: args.broker_bin.as_deref(),
        command: &stamp.command,
        cancel: &cancel,
        kinds: &kinds,
    };
    for spec in runnable {
        if cancel.is_cancelled() {
            break;
        }
        let Some(profile_path) = spec.profile.as_ref() else {
            continue;
        };
        let sets = row_sets(spec, args);
        println!(
            "fidelity row {}: {} ({})",
            spec.id,
            spec.title,
            profile_path.display()
        );
        let runs = match (&spec.rate_from, spec.brokers) {
            (Some(from), _) => per_broker_runs(&out, &spec.id, from, &sets),
            (None, Brokers::SideBySide) => side_by_side_runs(&out, &spec.id, profile_path, &sets),
            (None, Brokers::Alternating) => Ok(vec![(out.join(&spec.id), sets)]),
        };
        let status = match runs {
            Err(why) => RowStatus::Failed(why),
            Ok(runs) if spec.brokers == Brokers::SideBySide => {
                run_at_once(profile_path, runs, &env)
            }
            Ok(runs) => {
                let mut status = RowStatus::Measured;
                for (folder, sets) in runs {
                    status = run_one(profile_path, &sets, folder, &env);
                    if status != RowStatus::Measured {
                        break;
                    }
                }
                status
            }
        };
        if let RowStatus::Failed(e) = &status {
            eprintln!("fidelity row {}: {e}", spec.id);
        }
        if let Some(o) = outcomes.iter_mut().find(|o| o.id == spec.id) {
            o.status = status;
        }
        write_outputs(&out, &rows, &outcomes, &stamp, false, false)?;
    }
    drop(kinds);
    done.cancel();
    let _ = signal_thread.join();
    let interrupted = cancel.is_cancelled();
    let md = write_outputs(&out, &rows, &outcomes, &stamp, !interrupted, false)?;
    println!("\n{md}");
    println!("table: {}", out.join("table.md").display());
    if interrupted {
        eprintln!("interrupted: the rows finished so far are in the table");
        return Ok(ExitCode::from(exit::INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn judging_again_keeps_the_measurement_s_provenance() {
        let dir = tempfile::tempdir().unwrap();
        let rows = RowsFile::parse(Path::new("rows.toml"), "").unwrap();
        let run = Stamp {
            command: "harness fidelity --out x".into(),
            start: SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_921_600),
            load_start: "1.00 1.00 1.00".into(),
        };
        write_outputs(dir.path(), &rows, &[], &run, true, false).unwrap();
        let first = Measured::recorded(dir.path()).unwrap();
        let again = Stamp {
            command: "harness fidelity --table-only --out x".into(),
            start: SystemTime::now(),
            load_start: "9.00 9.00 9.00".into(),
        };
        write_outputs(dir.path(), &rows, &[], &again, true, true).unwrap();
        let kept = Measured::recorded(dir.path()).unwrap();
        assert_eq!(kept.start, first.start);
        assert_eq!(kept.command, "harness fidelity --out x");
        assert_eq!(kept.load_start, "1.00 1.00 1.00");
        let md = std::fs::read_to_string(dir.path().join("table.md")).unwrap();
        assert!(md.contains(&format!("Started {}", first.start)), "{md}");
        assert!(md.contains("Judged again"), "{md}");
    }

    #[test]
    fn a_set_no_row_takes_refuses_the_run_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("p.toml");
        std::fs::write(
            &profile,
            "name = \"p\"\n[workload]\nrate = 10\nduration = \"1s\"\n",
        )
        .unwrap();
        let rows_file = dir.path().join("rows.toml");
        let text = format!(
            "[[row]]\nid = \"1\"\ntitle = \"t\"\nprofile = \"{}\"\n\n[[row.check]]\nname = \"c\"\nrelation = \"presence\"\ntolerance = 0\nmetric = \"ok_rate\"\n",
            profile.display()
        );
        std::fs::write(&rows_file, text).unwrap();
        let out = dir.path().join("out");
        let args = FidelityArgs {
            rows_file,
            quick: false,
            rows: Vec::new(),
            out: Some(out.clone()),
            broker_bin: None,
            table_only: false,
            set: vec!["workload.rat=20".into()],
        };
        let err = run_fidelity(&args).unwrap_err();
        assert_eq!(exit::code_for(&err), exit::INVALID_INPUT, "{err:#}");
        let text = format!("{err:#}");
        assert!(
            text.contains("row 1") && text.contains("workload.rat"),
            "{text}"
        );
        assert!(!out.exists(), "nothing is written for a refused run");
    }
}
