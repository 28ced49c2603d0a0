//! `harness compare` and `harness gate`: load results, compute a comparison model, then
//! render it (compare) or judge rules against it (gate). The printing and the exit codes are
//! `harness`'s (it also tries `harness ab`'s folders first).
//!
//! * load      — summary.csv / timeseries.csv, matched by column name (`harness_results::read`)
//! * stats.rs  — Mann–Whitney U and the moving-block bootstrap
//! * model/    — cell pairing, metrics, verdicts
//! * render.rs — table, csv, json, markdown
//! * gate.rs   — rule evaluation and exit codes (0 pass, 1 regression, 2 inconclusive, 3 invalid);
//!   the rule language and the `[gate]` table are `harness_model::rules`
//! * error.rs  — why a comparison, a gate or a rendering could not be made

mod error;
pub mod gate;
pub mod model;
pub mod render;
pub mod stats;

use std::path::PathBuf;

use harness_results::read::{self, RunData};

pub use error::{CompareError, RenderError};
pub use gate::{GateReport, Outcome};
/// The result-folder reader, which lives in `harness-results` (the path stays for callers).
pub use harness_results::read as load;
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
    ) -> Result<StatOptions, CompareError> {
        let d = StatOptions::default();
        let threshold_pct = self.threshold.or(file_threshold).unwrap_or(d.threshold_pct);
        let alpha = self.alpha.or(file_alpha).unwrap_or(d.alpha);
        if !(threshold_pct.is_finite() && threshold_pct >= 0.0) {
            return Err(CompareError::Threshold(threshold_pct));
        }
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(CompareError::Alpha(alpha));
        }
        if self.block < 1 {
            return Err(CompareError::Block);
        }
        if !(100..=1_000_000).contains(&self.resamples) {
            return Err(CompareError::Resamples(self.resamples));
        }
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
pub fn build_comparison(args: &CompareArgs) -> Result<Comparison, CompareError> {
    let opts = args.stats.options(None, None)?;
    let metrics: Vec<model::Metric> = if args.metrics.is_empty() {
        model::METRICS.to_vec()
    } else {
        args.metrics
            .iter()
            .map(|m| model::metric_named(m.trim()))
            .collect()
    };
    let base = read::load(&args.base)?;
    let comparison = match (&args.candidate, &args.reference) {
        (Some(c), None) => {
            let cand = read::load(c)?;
            check_metrics(&metrics, &[&base, &cand])?;
            let (pairs, ub, uc) = model::pair_runs(&base, &cand);
            model::build(&base, &cand, &pairs, &metrics, &opts, None, &ub, &uc)
        }
        (None, Some(r)) => {
            let (k, v) = r
                .split_once('=')
                .ok_or_else(|| CompareError::ReferenceSyntax(r.clone()))?;
            check_metrics(&metrics, &[&base])?;
            let (pairs, orphans) = model::pair_reference(&base, k.trim(), v.trim())?;
            let label = format!("{}={}", model::param_name(k.trim()), v.trim());
            model::build(
                &base,
                &base,
                &pairs,
                &metrics,
                &opts,
                Some(label),
                &orphans,
                &[],
            )
        }
        (Some(_), Some(_)) => return Err(CompareError::Both),
        (None, None) => {
            return Err(CompareError::Nothing {
                base: args.base.clone(),
            })
        }
    };
    Ok(comparison)
}

fn check_metrics(metrics: &[model::Metric], runs: &[&RunData]) -> Result<(), CompareError> {
    for run in runs {
        let Some(row) = run.rows.first() else {
            continue;
        };
        for m in metrics {
            let known = model::METRICS.iter().any(|k| k.name == m.name);
            if !known && row.get(&m.name).is_err() {
                return Err(CompareError::NoColumn {
                    metric: m.name.to_string(),
                    run: run.source.clone(),
                });
            }
        }
    }
    Ok(())
}

/// The gate without printing: parsed inputs → report. Errors are invalid input (exit 3).
pub fn gate_report(args: &GateArgs) -> Result<GateReport, CompareError> {
    let rules = match &args.rules {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|source| CompareError::ReadRules {
                path: p.clone(),
                source,
            })?;
            harness_model::rules::parse_rules_toml(&text).map_err(|error| CompareError::Rules {
                path: p.clone(),
                error,
            })?
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
                    .map_err(CompareError::DefaultRule)?,
            );
        }
    }
    let cand = read::load(&args.candidate)?;
    let base = match &args.baseline {
        Some(b) => Some(read::load(b)?),
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
