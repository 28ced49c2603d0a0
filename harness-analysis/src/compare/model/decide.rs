//! One verdict for one metric of one pair of cells: the noise threshold, then the rank test
//! on repetitions, then the per-second block bootstrap.

use crate::compare::stats::{self, median};
use harness_model::fnv::Fnv1a;
use harness_results::read::{CellKey, Second};

use super::metric::{Direction, Metric, SeriesStat};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Better,
    Worse,
    /// Inside the noise threshold, or the test found no significant difference.
    NoChange,
    /// Too few repetitions/seconds, or no per-second data, to decide.
    Inconclusive,
    /// A value is missing (empty column) on one side.
    Unknown,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoChange => "no change",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Unknown => "n/a",
        }
    }
}

/// Statistical settings shared by compare and gate.
#[derive(Debug, Clone, Copy)]
pub struct StatOptions {
    /// Noise threshold in percent: smaller changes are never significant.
    pub threshold_pct: f64,
    pub alpha: f64,
    /// Block length in seconds for the moving-block bootstrap.
    pub block: usize,
    pub resamples: usize,
    pub seed: u64,
}

impl Default for StatOptions {
    fn default() -> Self {
        StatOptions {
            threshold_pct: 5.0,
            alpha: 0.05,
            block: 5,
            resamples: 2000,
            seed: 0x5eed,
        }
    }
}

/// Which test produced the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    MannWhitney,
    BlockBootstrap,
    Threshold,
    None,
}

/// Bootstrap seed of one (cell, metric): FNV-1a of the cell's parameters and the metric, so
/// a verdict depends neither on the order of computation nor on how the cell is labelled,
/// and `compare` and `gate` reach the same verdict for the same data.
pub fn seed_for(seed: u64, cell: &CellKey, metric: &str) -> u64 {
    let mut h = Fnv1a::with_seed(seed);
    for (k, v) in &cell.params {
        h.write(k.as_bytes())
            .write(b"=")
            .write(v.as_bytes())
            .write(b",");
    }
    h.write(b"step=").write(cell.step.as_bytes()).write(b";");
    h.write(metric.as_bytes()).finish()
}

/// Decide one metric from per-repetition values and (optionally) per-second series.
pub fn decide(
    metric: &Metric,
    base_vals: &[f64],
    cand_vals: &[f64],
    base_series: &[&[Second]],
    cand_series: &[&[Second]],
    opts: &StatOptions,
    seed: u64,
) -> Decision {
    let mut d = Decision {
        base: median(base_vals),
        candidate: median(cand_vals),
        change_pct: None,
        new_from_zero: false,
        method: Method::None,
        p_value: None,
        ci: None,
        verdict: Verdict::Unknown,
        note: String::new(),
    };
    let (Some(b), Some(c)) = (d.base, d.candidate) else {
        d.note = "value missing (empty column) on one side".into();
        return d;
    };
    let beyond_threshold = if b == 0.0 {
        d.new_from_zero = c != 0.0;
        d.change_pct = (c == 0.0).then_some(0.0);
        c != 0.0
    } else {
        let pct = (c - b) / b.abs() * 100.0;
        d.change_pct = Some(pct);
        pct.abs() > opts.threshold_pct
    };
    if !beyond_threshold {
        d.method = Method::Threshold;
        d.verdict = Verdict::NoChange;
        return d;
    }
    let signed = |increase: bool| match (increase, metric.direction) {
        (true, Direction::HigherIsBetter) | (false, Direction::LowerIsBetter) => Verdict::Better,
        _ => Verdict::Worse,
    };
    // Set when the rank test ran but cannot reach alpha with this few repetitions (3 vs 3):
    // the per-second bootstrap, pooled over repetitions, is then the only evidence left.
    let mut why = String::new();
    if base_vals.len() >= 3 && cand_vals.len() >= 3 {
        d.method = Method::MannWhitney;
        let Some(t) = stats::mann_whitney(cand_vals, base_vals) else {
            return d;
        };
        d.p_value = Some(t.p);
        if t.p < opts.alpha {
            d.verdict = signed(c > b);
            return d;
        }
        if t.min_p < opts.alpha {
            d.verdict = Verdict::NoChange;
            return d;
        }
        why = format!(
            "{} vs {} repetitions cannot reach p<{} (U-test min p={:.3}); ",
            cand_vals.len(),
            base_vals.len(),
            opts.alpha,
            t.min_p
        );
    }
    let inconclusive = |mut d: Decision, why: &str, reason: String| {
        d.verdict = Verdict::Inconclusive;
        d.note = format!("{why}{reason}");
        d
    };
    if matches!(metric.series, SeriesStat::None) {
        let reason = format!(
            "{} vs {} repetitions and no per-second statistic for {}; use >=4 repetitions per side",
            cand_vals.len(),
            base_vals.len(),
            metric.name
        );
        return inconclusive(d, &why, reason);
    }
    if base_series.is_empty() || cand_series.is_empty() {
        let side = if base_series.is_empty() {
            "base"
        } else {
            "candidate"
        };
        let reason = format!(
            "no timeseries.csv on the {side} side for a per-second test; use >=4 repetitions per side"
        );
        return inconclusive(d, &why, reason);
    }
    let base_x = metric.series.extract(base_series);
    let cand_x = metric.series.extract(cand_series);
    let secs = |s: &[Vec<(f64, f64)>]| s.iter().map(Vec::len).sum::<usize>();
    // Blocks of >= 3 s (shorter ones miss the autocorrelation: 6 s in 2-s blocks rejected
    // 12% of true nulls), at least 2 per side; a cell too short for three blocks of
    // `--block` seconds gets shorter blocks, down to 3 s. With 2-3 blocks the t factor in
    // the bootstrap widens the interval a lot, so only large changes are called
    // (measured on AR(1) series, 8 s: 1% false positives, 69% power for a 30% shift).
    let n_min = secs(&base_x).min(secs(&cand_x));
    let block = opts.block.max(1).min((n_min / 3).max(3));
    if n_min < 2 * block {
        let reason = format!(
            "too few measured seconds with `{}` ({} vs {}); need >= {} per side (measure longer or use >=4 repetitions per side)",
            metric.name,
            secs(&cand_x),
            secs(&base_x),
            2 * block
        );
        return inconclusive(d, &why, reason);
    }
    let mut notes = Vec::new();
    if !why.is_empty() {
        notes.push(format!(
            "{why}decided by the per-second bootstrap pooled over repetitions"
        ));
    }
    if block < opts.block {
        notes.push(format!("{block}-s blocks ({n_min} s measured)"));
    }
    d.note = notes.join("; ");
    d.method = Method::BlockBootstrap;
    let base_ref: Vec<&[(f64, f64)]> = base_x.iter().map(Vec::as_slice).collect();
    let cand_ref: Vec<&[(f64, f64)]> = cand_x.iter().map(Vec::as_slice).collect();
    let stat = |x: &[&(f64, f64)]| metric.series.reduce(x);
    match stats::block_bootstrap_diff(
        &base_ref,
        &cand_ref,
        &stat,
        block,
        opts.resamples,
        seed,
        opts.alpha,
    ) {
        Some(ci) => {
            d.ci = Some((ci.lo, ci.hi));
            d.verdict = if ci.excludes_zero() {
                signed(ci.lo > 0.0)
            } else {
                Verdict::NoChange
            };
        }
        None => {
            d.verdict = Verdict::Inconclusive;
            d.note = format!("per-second data has no `{}` values", metric.name);
        }
    }
    d
}

/// Output of [`decide`].
#[derive(Debug, Clone)]
pub struct Decision {
    pub base: Option<f64>,
    pub candidate: Option<f64>,
    pub change_pct: Option<f64>,
    pub new_from_zero: bool,
    pub method: Method,
    pub p_value: Option<f64>,
    pub ci: Option<(f64, f64)>,
    pub verdict: Verdict,
    pub note: String,
}
