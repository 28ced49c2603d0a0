//! The comparison model: which cells pair up, and per metric base, candidate, change and
//! verdict. Rendering (render.rs) and gating (gate.rs) only read this model.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::fnv::Fnv1a;

use super::load::{CellKey, RunData, Second};
use super::stats::{self, median};

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    HigherIsBetter,
    LowerIsBetter,
}

/// How a metric is computed from per-second intervals for the block bootstrap.
#[derive(Debug, Clone, Copy)]
pub enum SeriesStat {
    /// Mean of a per-second column.
    Mean(&'static str),
    /// Median of a per-second column (per-second percentiles are skewed by stalls).
    Median(&'static str),
    /// Sum of one column over the sum of the attempt columns.
    ShareOfAttempts(&'static str),
    /// No per-second equivalent (e.g. p99.9 needs more samples than a second holds).
    None,
}

/// Columns of timeseries.csv whose sum is the sends that went on the wire (every outcome
/// but `dropped`), the denominator of summary.csv's `busy_rate` = busy / (sent − dropped).
const ATTEMPT_COLUMNS: &[&str] = &["ok", "busy", "errors", "timeouts"];

#[derive(Debug, Clone)]
pub struct Metric {
    /// Name in summary.csv (or a derived `busy_<class>_rate`).
    pub name: Cow<'static, str>,
    pub direction: Direction,
    pub series: SeriesStat,
}

const fn m(name: &'static str, direction: Direction, series: SeriesStat) -> Metric {
    Metric {
        name: Cow::Borrowed(name),
        direction,
        series,
    }
}

use Direction::{HigherIsBetter as Up, LowerIsBetter as Down};

/// Metrics compared by default, in display order.
pub const METRICS: &[Metric] = &[
    m("achieved_rate", Up, SeriesStat::Mean("achieved_rate")),
    m("ok_rate", Up, SeriesStat::Mean("ok")),
    m("p50_ms", Down, SeriesStat::Median("p50_ms")),
    m("p99_ms", Down, SeriesStat::Median("p99_ms")),
    m("p999_ms", Down, SeriesStat::None),
    m("busy_rate", Down, SeriesStat::ShareOfAttempts("busy")),
    m(
        "busy_pcbusy_clean_queue_rate",
        Down,
        SeriesStat::ShareOfAttempts("busy_pcbusy_clean_queue"),
    ),
    m(
        "busy_timeout_clean_queue_rate",
        Down,
        SeriesStat::ShareOfAttempts("busy_timeout_clean_queue"),
    ),
    m(
        "busy_rejectrequest_rate",
        Down,
        SeriesStat::ShareOfAttempts("busy_rejectrequest"),
    ),
    m(
        "busy_overload_rate",
        Down,
        SeriesStat::ShareOfAttempts("busy_overload"),
    ),
    m(
        "busy_pc_synchronized_rate",
        Down,
        SeriesStat::ShareOfAttempts("busy_pc_synchronized"),
    ),
    m(
        "busy_other_rate",
        Down,
        SeriesStat::ShareOfAttempts("busy_other"),
    ),
    m("timeouts", Down, SeriesStat::Mean("timeouts")),
    m("broker_cpu_avg", Down, SeriesStat::Mean("broker_cpu")),
];

/// Look a metric up by name; unknown summary columns are compared as lower-is-better with
/// no per-second statistic, so a user can still ask for e.g. `service_p99_ms`.
pub fn metric_named(name: &str) -> Metric {
    METRICS
        .iter()
        .find(|x| x.name == name)
        .cloned()
        .unwrap_or(Metric {
            name: Cow::Owned(name.to_string()),
            direction: if name.ends_with("rate") && !name.starts_with("busy") {
                Up
            } else {
                Down
            },
            series: SeriesStat::None,
        })
}

impl SeriesStat {
    /// Per-second inputs of the statistic, one vector per repetition, extracted once so
    /// the bootstrap loop touches plain numbers: `(value, 0)` for Mean/Median,
    /// `(count, attempts)` for ShareOfAttempts. Seconds without the column are skipped.
    pub fn extract(&self, series: &[&[Second]]) -> Vec<Vec<(f64, f64)>> {
        series
            .iter()
            .map(|rep| {
                rep.iter()
                    .filter_map(|s| match *self {
                        SeriesStat::Mean(c) | SeriesStat::Median(c) => s.get(c).map(|v| (v, 0.0)),
                        SeriesStat::ShareOfAttempts(c) => s.get(c).map(|v| {
                            (
                                v,
                                ATTEMPT_COLUMNS.iter().filter_map(|a| s.get(a)).sum::<f64>(),
                            )
                        }),
                        SeriesStat::None => None,
                    })
                    .collect()
            })
            .collect()
    }

    /// The statistic over (resampled) per-second inputs from [`SeriesStat::extract`].
    pub fn reduce(&self, x: &[&(f64, f64)]) -> Option<f64> {
        if x.is_empty() {
            return None;
        }
        match *self {
            SeriesStat::Mean(_) => Some(x.iter().map(|p| p.0).sum::<f64>() / x.len() as f64),
            SeriesStat::Median(_) => {
                let mut v: Vec<f64> = x.iter().map(|p| p.0).collect();
                let mid = v.len() / 2;
                let (lower, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
                let m = *m;
                Some(if x.len() % 2 == 1 {
                    m
                } else {
                    // Even count: average with the largest of the lower half.
                    let below = lower.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    (below + m) / 2.0
                })
            }
            SeriesStat::ShareOfAttempts(_) => {
                let num: f64 = x.iter().map(|p| p.0).sum();
                let den: f64 = x.iter().map(|p| p.1).sum();
                Some(if den > 0.0 { num / den } else { 0.0 })
            }
            SeriesStat::None => None,
        }
    }
}

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

/// One metric of one matched pair of cells.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MetricComparison {
    pub cell: String,
    /// The candidate cell's parameters (without `param_`) and step.
    pub key: CellKey,
    pub metric: String,
    pub direction: Direction,
    /// Median over repetitions.
    pub base: Option<f64>,
    pub candidate: Option<f64>,
    /// (candidate − base) / |base| × 100; `None` when base is 0 (see `new_from_zero`).
    pub change_pct: Option<f64>,
    /// Base is 0 and candidate is not: the change has no finite percentage.
    pub new_from_zero: bool,
    pub n_base: usize,
    pub n_candidate: usize,
    pub method: Method,
    pub p_value: Option<f64>,
    /// Bootstrap CI of candidate − base (metric units, per-second statistic).
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub verdict: Verdict,
    /// Why a verdict is inconclusive or unknown; empty otherwise.
    pub note: String,
}

/// Change in the "worse" direction, in percent (negative if it improved); ±infinity for a
/// change from 0.
pub fn regression_pct(
    direction: Direction,
    change_pct: Option<f64>,
    new_from_zero: bool,
) -> Option<f64> {
    if new_from_zero {
        return Some(match direction {
            Direction::LowerIsBetter => f64::INFINITY,
            Direction::HigherIsBetter => f64::NEG_INFINITY,
        });
    }
    change_pct.map(|c| match direction {
        Direction::LowerIsBetter => c,
        Direction::HigherIsBetter => -c,
    })
}

impl MetricComparison {
    /// Change in the "worse" direction, in percent (negative if it improved).
    pub fn regression_pct(&self) -> Option<f64> {
        regression_pct(self.direction, self.change_pct, self.new_from_zero)
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Comparison {
    pub base: String,
    pub candidate: String,
    /// `KEY=VALUE` in within-run mode.
    pub reference: Option<String>,
    pub threshold_pct: f64,
    pub alpha: f64,
    pub rows: Vec<MetricComparison>,
    /// Cells of the base (or, in reference mode, cells lacking a reference) with no partner.
    pub unmatched_base: Vec<String>,
    pub unmatched_candidate: Vec<String>,
    /// Hints about the inputs, e.g. parameter columns present in only one run.
    pub notes: Vec<String>,
}

impl Comparison {
    /// Count of rows per verdict and the biggest significant regression, for a headline.
    pub fn headline(&self) -> String {
        let count = |v: Verdict| self.rows.iter().filter(|r| r.verdict == v).count();
        let mut s = format!(
            "{} worse, {} better, {} no significant change, {} inconclusive",
            count(Verdict::Worse),
            count(Verdict::Better),
            count(Verdict::NoChange),
            count(Verdict::Inconclusive)
        );
        let worst = self
            .rows
            .iter()
            .filter(|r| r.verdict == Verdict::Worse)
            .filter_map(|r| r.regression_pct().map(|p| (p, r)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((p, r)) = worst {
            let amount = if p.is_finite() {
                format!("{p:+.1}%")
            } else {
                "from 0".to_string()
            };
            s.push_str(&format!(
                "; biggest regression: {} {amount} in {}",
                r.metric, r.cell
            ));
        }
        s
    }
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

/// Per-repetition values of a metric in a cell (missing values skipped).
pub fn cell_values(run: &RunData, key: &CellKey, name: &str) -> Vec<f64> {
    run.cell_rows(key)
        .iter()
        .filter_map(|r| r.get(name).ok().flatten())
        .collect()
}

/// Parameters whose value differs between cells; those make a useful label.
pub fn varying_keys<'a>(keys: impl Iterator<Item = &'a CellKey>) -> Vec<String> {
    let mut seen: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for k in keys {
        for (p, v) in &k.params {
            seen.entry(p.clone()).or_default().insert(v.clone());
        }
    }
    seen.into_iter()
        .filter(|(_, vals)| vals.len() > 1)
        .map(|(k, _)| k)
        .collect()
}

/// A matched pair: base cell key in `base_run`, candidate cell key in `cand_run`.
pub struct Pair {
    pub base: CellKey,
    pub candidate: CellKey,
}

/// Pair cells of two runs by parameters + step.
pub fn pair_runs(base: &RunData, cand: &RunData) -> (Vec<Pair>, Vec<CellKey>, Vec<CellKey>) {
    let pairs = cand
        .cells
        .keys()
        .filter(|k| base.cells.contains_key(*k))
        .map(|k| Pair {
            base: k.clone(),
            candidate: k.clone(),
        })
        .collect();
    let ub = base
        .cells
        .keys()
        .filter(|k| !cand.cells.contains_key(*k))
        .cloned()
        .collect();
    let uc = cand
        .cells
        .keys()
        .filter(|k| !base.cells.contains_key(*k))
        .cloned()
        .collect();
    (pairs, ub, uc)
}

/// Strip an optional `param_` prefix from a user-given parameter name.
pub fn param_name(key: &str) -> &str {
    key.strip_prefix("param_").unwrap_or(key)
}

/// Within one run, pair every cell with the cell that has `key=value` and otherwise the
/// same parameters and step. Returns pairs and the cells that have no reference.
pub fn pair_reference(
    run: &RunData,
    key: &str,
    value: &str,
) -> Result<(Vec<Pair>, Vec<CellKey>), String> {
    let key = param_name(key);
    if !run.param_keys.iter().any(|k| k == key) {
        return Err(format!(
            "{}: no column `param_{key}`; parameters in this run: {}",
            run.source.display(),
            if run.param_keys.is_empty() {
                "(none)".to_string()
            } else {
                run.param_keys.join(", ")
            }
        ));
    }
    if !run
        .cells
        .keys()
        .any(|k| k.params.get(key).map(String::as_str) == Some(value))
    {
        let values: std::collections::BTreeSet<&str> = run
            .cells
            .keys()
            .filter_map(|k| k.params.get(key).map(String::as_str))
            .collect();
        return Err(format!(
            "{}: no cell has {key}={value}; values present: {}",
            run.source.display(),
            values.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let mut pairs = Vec::new();
    let mut orphans = Vec::new();
    for k in run.cells.keys() {
        if k.params.get(key).map(String::as_str) == Some(value) {
            continue;
        }
        let mut r = k.clone();
        r.params.insert(key.to_string(), value.to_string());
        if run.cells.contains_key(&r) {
            pairs.push(Pair {
                base: r,
                candidate: k.clone(),
            });
        } else {
            orphans.push(k.clone());
        }
    }
    Ok((pairs, orphans))
}

/// Build the model for the given pairs and metrics.
#[allow(clippy::too_many_arguments)]
pub fn build(
    base_run: &RunData,
    cand_run: &RunData,
    pairs: &[Pair],
    metrics: &[Metric],
    opts: &StatOptions,
    reference: Option<String>,
    unmatched_base: &[CellKey],
    unmatched_candidate: &[CellKey],
) -> Comparison {
    let mut label_keys = varying_keys(base_run.cells.keys().chain(cand_run.cells.keys()));
    label_keys.sort();
    let mut rows = Vec::new();
    for p in pairs {
        let label = p.candidate.label(&label_keys);
        let bs = base_run.cell_series(&p.base);
        let cs = cand_run.cell_series(&p.candidate);
        for metric in metrics {
            let bv = cell_values(base_run, &p.base, &metric.name);
            let cv = cell_values(cand_run, &p.candidate, &metric.name);
            let seed = seed_for(opts.seed, &p.base, &metric.name);
            let d = decide(metric, &bv, &cv, &bs, &cs, opts, seed);
            rows.push(MetricComparison {
                cell: label.clone(),
                key: p.candidate.clone(),
                metric: metric.name.to_string(),
                direction: metric.direction,
                base: d.base,
                candidate: d.candidate,
                change_pct: d.change_pct,
                new_from_zero: d.new_from_zero,
                n_base: bv.len(),
                n_candidate: cv.len(),
                method: d.method,
                p_value: d.p_value,
                ci_low: d.ci.map(|c| c.0),
                ci_high: d.ci.map(|c| c.1),
                verdict: d.verdict,
                note: d.note,
            });
        }
    }
    let mut notes = param_notes(base_run, cand_run);
    notes.extend(drift_note(reference.is_some(), &rows));
    Comparison {
        base: base_run.source.display().to_string(),
        candidate: cand_run.source.display().to_string(),
        reference,
        threshold_pct: opts.threshold_pct,
        alpha: opts.alpha,
        rows,
        unmatched_base: unmatched_base
            .iter()
            .map(|k| k.label(&label_keys))
            .collect(),
        unmatched_candidate: unmatched_candidate
            .iter()
            .map(|k| k.label(&label_keys))
            .collect(),
        notes,
    }
}

/// Two separate runs judged by the per-second bootstrap: its interval reflects the noise within
/// each run, not the drift of the machine between the runs (two identical `make bench` runs on
/// a shared 2-core machine differed by +42% and +52% in broker CPU at 10-17% utilisation). Say
/// so whenever such a verdict is a significant change, so nobody reads it as a regression of
/// the broker without repeating the runs.
fn drift_note(within_one_run: bool, rows: &[MetricComparison]) -> Option<String> {
    if within_one_run {
        return None;
    }
    let decided_per_second = rows.iter().filter(|r| {
        r.method == Method::BlockBootstrap
            && matches!(r.verdict, Verdict::Worse | Verdict::Better)
            && r.n_base.min(r.n_candidate) < 4
    });
    let metrics: std::collections::BTreeSet<&str> =
        decided_per_second.map(|r| r.metric.as_str()).collect();
    if metrics.is_empty() {
        return None;
    }
    Some(format!(
        "note: {} decided by the per-second bootstrap with fewer than 4 repetitions per side: it \
         sees the noise within each run, not drift of the machine between the runs (broker CPU \
         is the most sensitive); repeat with repetitions >= 4 and order = \"randomized\" \
         before calling it a regression",
        metrics.into_iter().collect::<Vec<_>>().join(", ")
    ))
}

/// Parameter columns present in only one of the runs: cells can then never match.
fn param_notes(base: &RunData, cand: &RunData) -> Vec<String> {
    let only = |a: &RunData, b: &RunData| -> Vec<String> {
        a.param_keys
            .iter()
            .filter(|k| !b.param_keys.contains(k))
            .map(|k| format!("param_{k}"))
            .collect()
    };
    let mut notes = Vec::new();
    let invalid = |r: &RunData| r.rows.iter().filter(|x| x.valid() == Some(false)).count();
    let (ib, ic) = (invalid(base), invalid(cand));
    if ib + ic > 0 {
        let counts = if std::ptr::eq(base, cand) {
            format!("{ib}")
        } else {
            format!("{ib} in base, {ic} in candidate")
        };
        notes.push(format!(
            "rows with valid=false are included ({counts}): read their numbers with care"
        ));
    }
    for (side, cols) in [("base", only(base, cand)), ("candidate", only(cand, base))] {
        if !cols.is_empty() {
            notes.push(format!(
                "only the {side} has {}: cells are matched on all parameters, so none match",
                cols.join(", ")
            ));
        }
    }
    notes
}

#[cfg(test)]
mod drift_note_tests {
    use super::*;

    fn row(metric: &str, method: Method, verdict: Verdict, reps: usize) -> MetricComparison {
        MetricComparison {
            cell: "c".into(),
            key: CellKey {
                params: Default::default(),
                step: String::new(),
            },
            metric: metric.into(),
            direction: Direction::LowerIsBetter,
            base: Some(1.0),
            candidate: Some(2.0),
            change_pct: Some(100.0),
            new_from_zero: false,
            n_base: reps,
            n_candidate: reps,
            method,
            p_value: None,
            ci_low: None,
            ci_high: None,
            verdict,
            note: String::new(),
        }
    }

    #[test]
    fn only_cross_run_per_second_verdicts_with_few_repetitions_get_the_note() {
        let worse = [row(
            "broker_cpu_avg",
            Method::BlockBootstrap,
            Verdict::Worse,
            1,
        )];
        let note = drift_note(false, &worse).expect("a note");
        assert!(note.contains("broker_cpu_avg"), "{note}");
        // Within one run the cells share the machine's state.
        assert_eq!(drift_note(true, &worse), None);
        // Decided by the rank test on enough repetitions, or not significant: nothing to say.
        assert_eq!(
            drift_note(
                false,
                &[row("p99_ms", Method::MannWhitney, Verdict::Worse, 5)]
            ),
            None
        );
        assert_eq!(
            drift_note(
                false,
                &[row("p99_ms", Method::BlockBootstrap, Verdict::NoChange, 1)]
            ),
            None
        );
        assert_eq!(
            drift_note(
                false,
                &[row("p99_ms", Method::BlockBootstrap, Verdict::Better, 4)]
            ),
            None
        );
    }
}
