//! `harness compare` and `harness gate`: load results, compute a comparison model, then
//! render it (compare) or judge rules against it (gate).
//!
//! * load.rs   — summary.csv / timeseries.csv, matched by column name
//! * stats.rs  — Mann–Whitney U and the moving-block bootstrap
//! * model/    — cell pairing, metrics, verdicts
//! * render.rs — table, csv, json, markdown
//! * rules/    — the gate's rule language and `[gate]` table
//! * gate.rs   — rule evaluation and exit codes (0 pass, 1 regression, 2 inconclusive, 3 invalid)

pub mod gate;
/// The result-folder reader, which lives in `harness-results` now (the path stays for callers).
pub use harness_results::read as load;
pub mod model;
pub mod render;

pub mod stats;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

pub use gate::{GateReport, Outcome};
pub use model::{Comparison, StatOptions, Verdict};
pub use render::Format;

/// Statistical settings shared by both subcommands.
#[derive(clap::Args, Debug, Clone)]
pub struct StatArgs {
    /// Noise threshold in percent: a smaller change is never significant. [default: 5, or
    /// `threshold` from the rules file]
    #[arg(long, value_name = "PERCENT")]
    pub threshold: Option<f64>,
    /// Significance level of the tests. [default: 0.05, or `alpha` from the rules file]
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Block length in seconds of the moving-block bootstrap (single repetitions).
    #[arg(long, default_value_t = 5, value_name = "SECONDS")]
    pub block: usize,
    /// Bootstrap resamples.
    #[arg(long, default_value_t = 2000)]
    pub resamples: usize,
    /// Seed of the bootstrap, so a verdict is reproducible.
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
}

impl StatArgs {
    /// Validated options; CLI values win over the rules file, which wins over defaults.
    fn options(
        &self,
        file_threshold: Option<f64>,
        file_alpha: Option<f64>,
    ) -> anyhow::Result<StatOptions> {
        let d = StatOptions::default();
        let threshold_pct = self.threshold.or(file_threshold).unwrap_or(d.threshold_pct);
        let alpha = self.alpha.or(file_alpha).unwrap_or(d.alpha);
        anyhow::ensure!(
            threshold_pct.is_finite() && threshold_pct >= 0.0,
            "--threshold {threshold_pct}: must be a percentage >= 0"
        );
        anyhow::ensure!(
            alpha > 0.0 && alpha < 1.0,
            "--alpha {alpha}: must be in (0, 1)"
        );
        anyhow::ensure!(self.block >= 1, "--block must be >= 1 second");
        anyhow::ensure!(
            (100..=1_000_000).contains(&self.resamples),
            "--resamples {}: use 100..=1000000 (>= 1000 recommended)",
            self.resamples
        );
        Ok(StatOptions {
            threshold_pct,
            alpha,
            block: self.block,
            resamples: self.resamples,
            seed: self.seed,
        })
    }
}

/// Arguments of `harness compare`.
#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// Base result folder or summary.csv (with --reference: the one run to compare within).
    pub base: PathBuf,
    /// Candidate result folder or summary.csv.
    pub candidate: Option<PathBuf>,
    /// Compare every cell of BASE against the cell with this parameter value and otherwise
    /// equal parameters, e.g. `--reference broker.useReentrantLockWhenPutMessage=false`.
    #[arg(long, value_name = "KEY=VALUE", conflicts_with = "candidate")]
    pub reference: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Metrics to compare (repeatable or comma-separated); any summary.csv column works.
    /// [default: achieved_rate, ok_rate, p50/p99/p999, busy rates, timeouts, broker CPU]
    #[arg(long = "metric", value_delimiter = ',', value_name = "NAME")]
    pub metrics: Vec<String>,
    /// Also show metrics that are 0 on both sides (table and markdown hide them).
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub stats: StatArgs,
}

/// Arguments of `harness gate`.
#[derive(clap::Args, Debug, Clone)]
pub struct GateArgs {
    /// Baseline result folder or summary.csv; needed by relative rules.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Candidate result folder or summary.csv.
    #[arg(long)]
    pub candidate: PathBuf,
    /// Rules: a profile (its `[gate]` table) or a standalone rules TOML. Without it, every
    /// default metric gets `METRIC: regression <= THRESHOLD%` (if a baseline is given).
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// Also print the checks that passed.
    #[arg(long, short)]
    pub verbose: bool,
    #[command(flatten)]
    pub stats: StatArgs,
}

/// Build the comparison model for compare's arguments.
pub fn build_comparison(args: &CompareArgs) -> anyhow::Result<Comparison> {
    let opts = args.stats.options(None, None)?;
    let metrics: Vec<model::Metric> = if args.metrics.is_empty() {
        model::METRICS.to_vec()
    } else {
        args.metrics
            .iter()
            .map(|m| model::metric_named(m.trim()))
            .collect()
    };
    let base = load::load(&args.base)?;
    let comparison = match (&args.candidate, &args.reference) {
        (Some(c), None) => {
            let cand = load::load(c)?;
            check_metrics(&metrics, &[&base, &cand])?;
            let (pairs, ub, uc) = model::pair_runs(&base, &cand);
            model::build(&base, &cand, &pairs, &metrics, &opts, None, &ub, &uc)
        }
        (None, Some(r)) => {
            let (k, v) = r
                .split_once('=')
                .with_context(|| format!("--reference {r}: write KEY=VALUE, e.g. broker.useReentrantLockWhenPutMessage=false"))?;
            check_metrics(&metrics, &[&base])?;
            let (pairs, orphans) =
                model::pair_reference(&base, k.trim(), v.trim()).map_err(anyhow::Error::msg)?;
            let label = format!("{}={}", model::param_name(k.trim()), v.trim());
            model::build(&base, &base, &pairs, &metrics, &opts, Some(label), &orphans, &[])
        }
        (Some(_), Some(_)) => anyhow::bail!("give either CANDIDATE or --reference, not both"),
        (None, None) => anyhow::bail!(
            "nothing to compare: give CANDIDATE (another run) or --reference KEY=VALUE (cells within {})",
            args.base.display()
        ),
    };
    Ok(comparison)
}

fn check_metrics(metrics: &[model::Metric], runs: &[&load::RunData]) -> anyhow::Result<()> {
    for run in runs {
        let Some(row) = run.rows.first() else {
            continue;
        };
        for m in metrics {
            let known = model::METRICS.iter().any(|k| k.name == m.name);
            if !known && row.get(&m.name).is_err() {
                anyhow::bail!(
                    "--metric {}: no such column in {}",
                    m.name,
                    run.source.display()
                );
            }
        }
    }
    Ok(())
}

pub fn run_compare(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    if args.reference.is_none() {
        let (t, a) = (args.stats.threshold, args.stats.alpha);
        if let Some(text) = crate::ab::compare_ab(&args.base, args.candidate.as_deref(), t, a)? {
            print!("{text}");
            return Ok(ExitCode::SUCCESS);
        }
    }
    let c = build_comparison(args)?;
    let text = render::render(&c, args.format, args.all)?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The gate without printing: parsed inputs → report. Errors are invalid input (exit 3).
pub fn gate_report(args: &GateArgs) -> anyhow::Result<GateReport> {
    let rules = match &args.rules {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("{}: cannot read rules file", p.display()))?;
            harness_model::rules::parse_rules_toml(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?
        }
        None => harness_model::rules::GateRules::default(),
    };
    let opts = args.stats.options(rules.threshold_pct, rules.alpha)?;
    let mut rules = rules;
    if args.rules.is_none() && args.baseline.is_some() {
        for m in model::METRICS.iter() {
            let text = format!("{}: regression <= {}%", m.name, opts.threshold_pct);
            rules.rules.push(
                harness_model::rules::parse_rule(&text, Default::default())
                    .map_err(anyhow::Error::msg)?,
            );
        }
    }
    let cand = load::load(&args.candidate)?;
    let base = match &args.baseline {
        Some(b) => Some(load::load(b)?),
        None => None,
    };
    Ok(gate::evaluate(
        &rules,
        base.as_ref(),
        &cand,
        &opts,
        args.verbose,
    ))
}

pub fn run_gate(args: &GateArgs) -> anyhow::Result<ExitCode> {
    let (b, r, s) = (args.baseline.as_deref(), args.rules.as_deref(), &args.stats);
    match crate::ab::gate_ab(&args.candidate, b, r, s.threshold, s.alpha, args.verbose) {
        Ok(Some(code)) => return Ok(ExitCode::from(code)),
        Ok(None) => {}
        Err(e) => {
            eprintln!("gate: invalid input: {e:#}");
            return Ok(ExitCode::from(Outcome::Invalid.exit_code()));
        }
    }
    match gate_report(args) {
        Ok(report) => {
            for line in &report.lines {
                println!("{line}");
            }
            println!("{}", report.summary());
            Ok(ExitCode::from(report.outcome().exit_code()))
        }
        Err(e) => {
            eprintln!("gate: invalid input: {e:#}");
            Ok(ExitCode::from(Outcome::Invalid.exit_code()))
        }
    }
}
