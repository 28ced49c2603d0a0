//! The comparison of two runs (or of cells within one run): one row per metric and pair,
//! plus the notes that qualify it.

use harness_results::read::{CellKey, RunData};

use super::decide::{decide, seed_for, Method, StatOptions, Verdict};
use super::metric::{Direction, Metric};
use super::pairing::{cell_values, varying_keys, Pair};

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
