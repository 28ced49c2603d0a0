//! The paired verdict of an A/B result folder: per metric, the rounds' B/A ratios, their
//! Hodges–Lehmann estimate, a bootstrap interval, and the one-sided signed-rank test of
//! "B is worse". Used by `harness ab`, and by `compare` and `gate` on an A/B folder.
//!
//! A metric fails the gate when B is worse by more than `threshold` percent (estimate) AND the
//! signed-rank test says so at alpha / (number of gated metrics) (Bonferroni, so that the
//! family of metrics together keeps the false-alarm rate at alpha); with `fail_when = "all"`
//! each metric is tested at alpha and the gate fails only when every one of them does. A change beyond the
//! threshold that the test does not confirm passes, with its p-value shown: the rounds were
//! enough to confirm it and did not. Too few rounds to ever reach the level is inconclusive.

use std::fmt::Write as _;

use harness_analysis::compare::gate::Outcome;
use harness_analysis::compare::render::num;
use harness_model::profile::{AbSettings, FailWhen};
use harness_results::read::{Row, RunData};

use super::paired::{bootstrap_median_ci, hodges_lehmann, median, signed_rank, SignedRank};

/// The text columns an A/B `summary.csv` adds: which build, which round, which pass.
pub const SIDE_COLUMN: &str = "side";
pub const ROUND_COLUMN: &str = "round";
pub const PASS_COLUMN: &str = "pass";
/// Broker CPU-seconds per 1,000 ok messages, a column of the A/B `summary.csv`.
pub const CPU_PER_1K_COLUMN: &str = "cpu_s_per_1k";

/// The two passes of a round.
pub const CAPACITY_PASS: &str = "capacity";
pub const LATENCY_PASS: &str = "latency";

/// The B/A ratio a capacity of 0 on one side counts as: beyond any measured ratio, so that
/// the signed-rank test ranks it first, and finite, so that the estimate stays a number.
const ZERO_RATIO: f64 = 1000.0;

/// Where a metric's value comes from and which way is better.
struct Source {
    pass: &'static str,
    column: &'static str,
    higher_is_better: bool,
    unit: &'static str,
    /// A 0 is a measurement (nothing served), not a missing value (a latency of a job that
    /// got no answer).
    zero_is_data: bool,
}

fn source(metric: &str) -> Option<Source> {
    let (pass, column, higher_is_better, unit) = match metric {
        "capacity" => (CAPACITY_PASS, "ok_rate", true, "ok/s"),
        "p50_ms" => (LATENCY_PASS, "p50_ms", false, "ms"),
        "p99_ms" => (LATENCY_PASS, "p99_ms", false, "ms"),
        // At saturation: the broker is busy all the time, so its CPU per message is the cost
        // of the send path itself, and CPU time stolen by other work on the machine counts
        // for nothing (measured: a round-to-round spread of 4-7% there, 9-10% in the latency
        // pass, where idle wake-ups blur a 1 µs-per-append regression away).
        "cpu_s_per_1k" => (CAPACITY_PASS, CPU_PER_1K_COLUMN, false, "cpu-s/1k"),
        _ => return None,
    };
    Some(Source {
        pass,
        column,
        higher_is_better,
        unit,
        zero_is_data: metric == "capacity",
    })
}

/// The verdict on one metric.
#[derive(Debug, Clone)]
pub struct MetricVerdict {
    pub metric: String,
    pub unit: &'static str,
    /// Medians over the rounds of each side.
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// Rounds with a valid value on both sides.
    pub pairs: usize,
    /// Rounds left out (a side missing, or a value of 0).
    pub left_out: usize,
    /// B against A in percent (Hodges–Lehmann on log ratios), and its 95% bootstrap interval.
    pub change_pct: Option<f64>,
    pub ci_pct: Option<(f64, f64)>,
    /// Regression in percent: `change_pct` signed so that positive is worse.
    pub regression_pct: Option<f64>,
    /// Rounds in which B was worse than A.
    pub worse_rounds: usize,
    /// One-sided p-value of "B is worse".
    pub p_worse: Option<f64>,
    pub test: Option<SignedRank>,
    /// The level this metric is tested at: alpha / gated metrics.
    pub alpha: f64,
    pub outcome: Outcome,
    pub reason: String,
}

/// The verdict on a whole A/B folder.
#[derive(Debug, Clone)]
pub struct AbVerdict {
    pub metrics: Vec<MetricVerdict>,
    pub rounds: usize,
    pub fail_when: FailWhen,
}

impl AbVerdict {
    pub fn outcome(&self) -> Outcome {
        self.metrics
            .iter()
            .map(|m| m.outcome)
            .max()
            .unwrap_or(Outcome::Inconclusive)
    }
}

/// Whether a loaded result is an A/B folder (it has the `side` column).
pub fn is_ab(run: &RunData) -> bool {
    run.has_column(SIDE_COLUMN)
}

fn text<'a>(row: &'a Row, col: &str) -> &'a str {
    row.text.get(col).map(String::as_str).unwrap_or("")
}

fn round_of(row: &Row) -> Option<u64> {
    row.get(ROUND_COLUMN).ok().flatten().map(|r| r as u64)
}

/// Per round, the value of one side for a metric. Rows marked invalid count too: a side
/// that cannot keep the latency pass's rate is invalid for exactly the reason the gate
/// exists, and generator trouble hits both sides of a round alike. Whether invalid rows are
/// acceptable at all is the `[gate]` table's `allow_invalid`.
fn side_values(run: &RunData, src: &Source, side: &str) -> Vec<(u64, f64)> {
    run.rows
        .iter()
        .filter(|r| text(r, PASS_COLUMN) == src.pass && text(r, SIDE_COLUMN) == side)
        .filter_map(|r| Some((round_of(r)?, r.get(src.column).ok().flatten()?)))
        .collect()
}

/// The smallest number of rounds whose best case (all worse) reaches p < alpha.
pub fn rounds_needed(alpha: f64) -> usize {
    let mut n = 1;
    while 0.5f64.powi(n as i32) >= alpha {
        n += 1;
    }
    n
}

/// Whether judging `metrics` needs the latency pass.
pub fn needs_latency_pass(metrics: &[String]) -> bool {
    metrics
        .iter()
        .any(|m| source(m).is_some_and(|s| s.pass == LATENCY_PASS))
}

/// Judges every metric of `settings` on an A/B folder.
pub fn judge(run: &RunData, settings: &AbSettings, seed: u64) -> AbVerdict {
    let gated = settings.metrics.len().max(1);
    let alpha = match settings.fail_when {
        FailWhen::Any => settings.alpha / gated as f64,
        // An intersection-union test: failing needs every test to fail, each at alpha.
        FailWhen::All => settings.alpha,
    };
    let rounds = run
        .rows
        .iter()
        .filter_map(round_of)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let mut metrics: Vec<MetricVerdict> = settings
        .metrics
        .iter()
        .enumerate()
        .map(|(i, m)| judge_metric(run, m, settings.threshold_pct, alpha, seed ^ i as u64))
        .collect();
    if settings.fail_when == FailWhen::All
        && !metrics.iter().all(|m| m.outcome == Outcome::Regression)
    {
        for m in metrics
            .iter_mut()
            .filter(|m| m.outcome == Outcome::Regression)
        {
            m.outcome = Outcome::Pass;
            m.reason = format!(
                "{}, but not every judged metric confirms it (fail_when = \"all\")",
                m.reason
            );
        }
    }
    AbVerdict {
        metrics,
        rounds,
        fail_when: settings.fail_when,
    }
}

fn judge_metric(
    run: &RunData,
    metric: &str,
    threshold: f64,
    alpha: f64,
    seed: u64,
) -> MetricVerdict {
    let Some(src) = source(metric) else {
        return MetricVerdict {
            metric: metric.to_owned(),
            unit: "",
            a: None,
            b: None,
            pairs: 0,
            left_out: 0,
            change_pct: None,
            ci_pct: None,
            regression_pct: None,
            worse_rounds: 0,
            p_worse: None,
            test: None,
            alpha,
            outcome: Outcome::Invalid,
            reason: format!("unknown A/B metric `{metric}`"),
        };
    };
    let a = side_values(run, &src, "a");
    let b = side_values(run, &src, "b");
    let rounds: std::collections::BTreeSet<u64> = a.iter().chain(&b).map(|(r, _)| *r).collect();
    // ln(B/A) per round. A round with a side missing is left out, and so is a 0 that means
    // "no data"; a capacity of 0 on one side is a ZERO_RATIO-fold change, the largest there is.
    let log_ratios: Vec<f64> = rounds
        .iter()
        .filter_map(|r| {
            let va = a.iter().find(|(x, _)| x == r)?.1;
            let vb = b.iter().find(|(x, _)| x == r)?.1;
            match (va > 0.0, vb > 0.0) {
                (true, true) => Some((vb / va).ln()),
                (false, false) if src.zero_is_data => Some(0.0),
                (true, false) if src.zero_is_data => Some(-ZERO_RATIO.ln()),
                (false, true) if src.zero_is_data => Some(ZERO_RATIO.ln()),
                _ => None,
            }
        })
        .collect();
    let worse = |x: &f64| {
        if src.higher_is_better {
            *x < 0.0
        } else {
            *x > 0.0
        }
    };
    let mut v = MetricVerdict {
        metric: metric.to_owned(),
        unit: src.unit,
        a: median(&a.iter().map(|x| x.1).collect::<Vec<_>>()),
        b: median(&b.iter().map(|x| x.1).collect::<Vec<_>>()),
        pairs: log_ratios.len(),
        left_out: rounds.len() - log_ratios.len(),
        change_pct: hodges_lehmann(&log_ratios).map(|h| h.exp_m1() * 100.0),
        ci_pct: bootstrap_median_ci(&log_ratios, 2000, 0.95, seed)
            .map(|(lo, hi)| (lo.exp_m1() * 100.0, hi.exp_m1() * 100.0)),
        regression_pct: None,
        worse_rounds: log_ratios.iter().filter(|x| worse(x)).count(),
        p_worse: None,
        test: signed_rank(&log_ratios),
        alpha,
        outcome: Outcome::Pass,
        reason: String::new(),
    };
    v.regression_pct = v
        .change_pct
        .map(|c| if src.higher_is_better { -c } else { c });
    v.p_worse = v.test.as_ref().map(|t| {
        if src.higher_is_better {
            t.p_less
        } else {
            t.p_greater
        }
    });
    let (outcome, reason) = match (v.regression_pct, &v.test, v.p_worse) {
        (None, _, _) => (
            Outcome::Inconclusive,
            format!("no round with a valid, non-zero `{}` on both sides", src.column),
        ),
        (Some(_), None, _) => (Outcome::Pass, "identical in every round".to_owned()),
        (Some(reg), _, _) if reg <= threshold => {
            (Outcome::Pass, format!("within the {threshold}% threshold"))
        }
        (Some(_), Some(_), Some(p)) if p < alpha => (
            Outcome::Regression,
            format!(
                "significant regression beyond {threshold}% (signed-rank p={} < {})",
                pval(p),
                pval(alpha)
            ),
        ),
        (Some(_), Some(t), _) if t.min_p >= alpha => (
            Outcome::Inconclusive,
            format!(
                "beyond {threshold}%, but {} rounds cannot reach p < {} (best case p={}); use >= {} rounds",
                t.n,
                pval(alpha),
                pval(t.min_p),
                rounds_needed(alpha)
            ),
        ),
        (Some(_), _, p) => (
            Outcome::Pass,
            format!(
                "beyond {threshold}% but not significant (p={}): noise, not a regression",
                p.map_or("-".into(), pval)
            ),
        ),
    };
    v.outcome = outcome;
    v.reason = reason;
    v
}

fn pval(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:+.1}%"))
}

/// One line per metric, as the gate prints them (`FAIL`, `PASS`, ...).
pub fn gate_lines(v: &AbVerdict) -> Vec<String> {
    v.metrics
        .iter()
        .map(|m| {
            let tag = match m.outcome {
                Outcome::Pass => "PASS",
                Outcome::Inconclusive => "INCONCLUSIVE",
                Outcome::Regression => "FAIL",
                Outcome::Invalid => "INVALID",
            };
            format!(
                "{tag:<12} ab {}: a {} -> b {} {} ({} change, 95% CI [{}, {}], worse in {}/{} rounds)  -> {}",
                m.metric,
                num(m.a),
                num(m.b),
                m.unit,
                pct(m.change_pct),
                pct(m.ci_pct.map(|c| c.0)),
                pct(m.ci_pct.map(|c| c.1)),
                m.worse_rounds,
                m.pairs,
                m.reason
            )
        })
        .collect()
}

/// The paired comparison as a table (for `compare` and the end of `harness ab`).
pub fn table(v: &AbVerdict) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<14} {:>12} {:>12} {:>9} {:>20} {:>7} {:>9} {:>9}  verdict",
        "metric", "A (median)", "B (median)", "change", "95% CI", "worse", "p(worse)", "alpha"
    );
    for m in &v.metrics {
        let ci = match m.ci_pct {
            Some((lo, hi)) => format!("[{lo:+.1}%, {hi:+.1}%]"),
            None => "-".into(),
        };
        let verdict = match m.outcome {
            Outcome::Pass => "pass",
            Outcome::Inconclusive => "inconclusive",
            Outcome::Regression => "REGRESSION",
            Outcome::Invalid => "invalid",
        };
        let _ = writeln!(
            out,
            "{:<14} {:>12} {:>12} {:>9} {:>20} {:>7} {:>9} {:>9}  {verdict}",
            m.metric,
            num(m.a),
            num(m.b),
            pct(m.change_pct),
            ci,
            format!("{}/{}", m.worse_rounds, m.pairs),
            m.p_worse.map_or("-".into(), pval),
            pval(m.alpha),
        );
    }
    let left_out: usize = v.metrics.iter().map(|m| m.left_out).max().unwrap_or(0);
    let levels = match v.fail_when {
        FailWhen::Any => format!("alpha split over {} metrics", v.metrics.len()),
        FailWhen::All => "each metric at alpha, the gate fails only when all do".to_owned(),
    };
    let _ = writeln!(
        out,
        "{} rounds, paired ABBA; change = Hodges–Lehmann estimate of B/A; p = one-sided Wilcoxon signed-rank, {levels}{}",
        v.rounds,
        if left_out > 0 {
            format!("; up to {left_out} round(s) left out (a side missing or 0)")
        } else {
            String::new()
        }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An A/B folder with capacities per round: `(a, b)`.
    fn folder(capacities: &[(f64, f64)]) -> (tempfile::TempDir, RunData) {
        let dir = tempfile::tempdir().unwrap();
        let mut csv = String::from("side,round,pass,cell_id,repetition,ok_rate,valid\n");
        for (i, (a, b)) in capacities.iter().enumerate() {
            let r = i + 1;
            csv += &format!("a,{r},capacity,c,{r},{a},true\nb,{r},capacity,c,{r},{b},true\n");
        }
        std::fs::write(dir.path().join("summary.csv"), csv).unwrap();
        let run = harness_results::read::load(dir.path()).unwrap();
        (dir, run)
    }

    fn capacity_only(threshold_pct: f64, alpha: f64) -> AbSettings {
        AbSettings {
            threshold_pct,
            alpha,
            metrics: vec!["capacity".into()],
            ..AbSettings::default()
        }
    }

    #[test]
    fn a_consistent_drop_beyond_the_threshold_is_a_regression() {
        let rounds: Vec<(f64, f64)> = (0..8).map(|i| (1000.0 + i as f64, 880.0)).collect();
        let (_d, run) = folder(&rounds);
        assert!(is_ab(&run));
        let v = judge(&run, &capacity_only(5.0, 0.05), 1);
        let m = &v.metrics[0];
        assert_eq!(m.outcome, Outcome::Regression, "{}", m.reason);
        assert_eq!((m.worse_rounds, m.pairs), (8, 8));
        assert!(
            (m.regression_pct.unwrap() - 12.2).abs() < 0.5,
            "{:?}",
            m.regression_pct
        );
        assert_eq!(m.p_worse, Some(1.0 / 256.0));
        assert!(gate_lines(&v)[0].starts_with("FAIL         ab capacity"));
    }

    #[test]
    fn within_threshold_noise_and_too_few_rounds() {
        // 3% worse in every round: significant, but inside the 5% threshold.
        let (_d, run) = folder(&[(100.0, 97.0); 8]);
        assert_eq!(
            judge(&run, &capacity_only(5.0, 0.05), 1).outcome(),
            Outcome::Pass
        );
        // Large changes both ways: beyond the threshold, not significant -> pass.
        let mixed = [
            (100.0, 70.0),
            (100.0, 130.0),
            (100.0, 60.0),
            (100.0, 125.0),
            (100.0, 80.0),
            (100.0, 140.0),
            (100.0, 75.0),
            (100.0, 120.0),
        ];
        let (_d, run) = folder(&mixed);
        let v = judge(&run, &capacity_only(5.0, 0.05), 1);
        assert_eq!(v.outcome(), Outcome::Pass, "{}", v.metrics[0].reason);
        // Three rounds cannot reach 0.0125: inconclusive, and the reason says how many would.
        let (_d, run) = folder(&[(100.0, 50.0); 3]);
        let v = judge(&run, &AbSettings::default(), 1);
        assert_eq!(v.metrics[0].outcome, Outcome::Inconclusive);
        assert!(
            v.metrics[0].reason.contains("use >= 7 rounds"),
            "{}",
            v.metrics[0].reason
        );
        assert_eq!(rounds_needed(0.0125), 7);
        assert_eq!(rounds_needed(0.2), 3);
    }

    /// Capacity and CPU per message per round: `(a ok/s, b ok/s, a cpu, b cpu)`.
    fn folder_with_cpu(rounds: &[(f64, f64, f64, f64)]) -> (tempfile::TempDir, RunData) {
        let dir = tempfile::tempdir().unwrap();
        let mut csv =
            String::from("side,round,pass,cell_id,repetition,ok_rate,cpu_s_per_1k,valid\n");
        for (i, (a, b, ca, cb)) in rounds.iter().enumerate() {
            let r = i + 1;
            csv += &format!(
                "a,{r},capacity,c,{r},{a},{ca},true\nb,{r},capacity,c,{r},{b},{cb},true\n"
            );
        }
        std::fs::write(dir.path().join("summary.csv"), csv).unwrap();
        let run = harness_results::read::load(dir.path()).unwrap();
        (dir, run)
    }

    #[test]
    fn fail_when_all_needs_every_metric_and_tests_each_at_alpha() {
        let settings = |fail_when| AbSettings {
            metrics: vec!["capacity".into(), "cpu_s_per_1k".into()],
            fail_when,
            ..AbSettings::default()
        };
        // Capacity 12% lower in every round, CPU per message unchanged (the broker got less
        // CPU, not a costlier send path): "any" fails, "all" passes and says why.
        let capacity_only: Vec<_> = (0..8)
            .map(|i| (1000.0 + i as f64, 880.0, 0.012, 0.012))
            .collect();
        let (_d, run) = folder_with_cpu(&capacity_only);
        assert_eq!(
            judge(&run, &settings(FailWhen::Any), 1).outcome(),
            Outcome::Regression
        );
        let v = judge(&run, &settings(FailWhen::All), 1);
        assert_eq!(v.outcome(), Outcome::Pass);
        assert!(
            v.metrics[0].reason.contains("not every judged metric"),
            "{}",
            v.metrics[0].reason
        );
        assert_eq!(v.metrics[0].alpha, 0.05, "each metric at the whole alpha");
        assert!(table(&v).contains("the gate fails only when all do"));
        // Both worse in every round: a regression either way.
        let both: Vec<_> = (0..8)
            .map(|i| (1000.0 + i as f64, 880.0, 0.012, 0.0135))
            .collect();
        let (_d, run) = folder_with_cpu(&both);
        let v = judge(&run, &settings(FailWhen::All), 1);
        assert_eq!(v.outcome(), Outcome::Regression);
        assert_eq!(
            gate_lines(&v)
                .iter()
                .filter(|l| l.starts_with("FAIL"))
                .count(),
            2
        );
        // 5 rounds reach 2^-5 < 0.05 for "all" but not 0.025 for "any": inconclusive only there.
        let (_d, run) = folder_with_cpu(&both[..5]);
        assert_eq!(
            judge(&run, &settings(FailWhen::All), 1).outcome(),
            Outcome::Regression
        );
        assert_eq!(
            judge(&run, &settings(FailWhen::Any), 1).outcome(),
            Outcome::Inconclusive
        );
    }

    #[test]
    fn zero_capacity_is_the_worst_round_and_missing_latency_is_left_out() {
        let (_d, run) = folder(&[(100.0, 0.0), (100.0, 50.0), (100.0, 40.0)]);
        let v = judge(&run, &capacity_only(30.0, 0.2), 1);
        let m = &v.metrics[0];
        assert_eq!((m.pairs, m.worse_rounds), (3, 3));
        assert_eq!(m.outcome, Outcome::Regression, "{}", m.reason);
        // No latency rows at all: nothing to pair.
        let s = AbSettings {
            metrics: vec!["p50_ms".into()],
            ..AbSettings::default()
        };
        assert_eq!(judge(&run, &s, 1).outcome(), Outcome::Inconclusive);
    }
}
