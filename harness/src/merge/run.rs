//! `harness merge DIR... --out DIR`: reads every shard folder, refuses what does not belong
//! together, and writes one result folder of the same format, which `compare` and `gate` read
//! like any run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::merge::args::MergeArgs;
use crate::report::{self, SummaryRow, TimeseriesWriter};
use harness_analysis::merge::check::check;
use harness_analysis::merge::folder;
use harness_analysis::merge::rows::merge_rows;
use harness_analysis::merge::series::merge_series;
use harness_analysis::merge::write::{run_json, write_hlog};
use harness_analysis::merge::MergeError;
use harness_model::profile::higher_is_better;

/// What a merge produced.
#[derive(Debug)]
pub struct MergeOutcome {
    pub out_dir: PathBuf,
    pub rows: Vec<SummaryRow>,
    pub shards: u32,
    pub table: String,
}

/// The `merge` subcommand.
pub fn run_merge(args: &MergeArgs) -> anyhow::Result<ExitCode> {
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let outcome = merge_folders(&args.dirs, &args.out, &command_line)?;
    println!("{}", outcome.table);
    let invalid = outcome.rows.iter().filter(|r| !r.valid).count();
    println!(
        "merged {} shards into {} ({} rows, {invalid} invalid)",
        outcome.shards,
        outcome.out_dir.display(),
        outcome.rows.len()
    );
    Ok(ExitCode::SUCCESS)
}

fn check_out(out: &Path, dirs: &[PathBuf]) -> Result<(), MergeError> {
    let refuse = |reason: &str| MergeError::Out {
        path: out.to_owned(),
        reason: reason.to_owned(),
    };
    if out.exists() {
        let canon = out.canonicalize().ok();
        if dirs.iter().any(|d| d.canonicalize().ok() == canon) {
            return Err(refuse("is one of the shard folders; choose a new folder"));
        }
        let empty = std::fs::read_dir(out)
            .map(|mut d| d.next().is_none())
            .unwrap_or(false);
        if !empty {
            return Err(refuse(
                "exists and is not empty; choose a new folder (a merge never overwrites results)",
            ));
        }
    }
    Ok(())
}

/// Merges `dirs` into `out`. Refusals are invalid input (exit 3); nothing is written then.
pub fn merge_folders(
    dirs: &[PathBuf],
    out: &Path,
    command_line: &str,
) -> anyhow::Result<MergeOutcome> {
    let invalid = |e: MergeError| crate::exit::invalid(anyhow::Error::new(e));
    check_out(out, dirs).map_err(invalid)?;
    let mut folders = dirs
        .iter()
        .map(|d| folder::read(d))
        .collect::<Result<Vec<_>, _>>()
        .map_err(invalid)?;
    check(&folders).map_err(invalid)?;
    folders.sort_by_key(|f| f.shard);
    let (axis_keys, rows) = merge_rows(&folders).map_err(invalid)?;
    let series = merge_series(&folders).map_err(invalid)?;

    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    report::write_atomic(
        &out.join("summary.csv"),
        &report::summary_csv(&axis_keys, &rows).context("rendering summary.csv")?,
    )
    .context("writing summary.csv")?;
    let mut ts =
        TimeseriesWriter::create(&out.join("timeseries.csv")).context("creating timeseries.csv")?;
    for r in &series.rows {
        ts.append(r).context("writing timeseries.csv")?;
    }
    write_hlog(&out.join("latency.hlog"), &folders, &series.seconds)
        .context("writing latency.hlog")?;
    let run = run_json(&folders, command_line);
    report::write_atomic(
        &out.join("run.json"),
        serde_json::to_string_pretty(&run)?.as_bytes(),
    )
    .context("writing run.json")?;
    let key_metric = folders[0].run["profile"]["key_metric"]
        .as_str()
        .unwrap_or("ok_rate")
        .to_owned();
    Ok(MergeOutcome {
        out_dir: out.to_owned(),
        table: report::table(&rows, &key_metric, higher_is_better(&key_metric)),
        rows,
        shards: folders[0].shards,
    })
}
