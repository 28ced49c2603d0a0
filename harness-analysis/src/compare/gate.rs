//! Evaluating gate rules against a candidate run (and a baseline for relative rules).

use std::collections::BTreeMap;

use super::error::ScopeError;
use super::model::{self, metric_named, Method, StatOptions, Verdict};
use super::stats::median;
use harness_model::rules::{eval, AllowInvalid, Env, EvalError, GateRules, Rule, RuleKind};
use harness_results::read::{CellKey, Row, RunData};

/// Result of a gate, in increasing order of severity. The exit code is the discriminant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Pass,
    /// A relative rule could not be decided (too noisy, too few repetitions) or an
    /// absolute rule met an unknown value.
    Inconclusive,
    /// A rule failed.
    Regression,
    /// Bad input, a rule that does not fit the run, or an invalid run.
    Invalid,
}

impl Outcome {
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Pass => 0,
            Outcome::Regression => 1,
            Outcome::Inconclusive => 2,
            Outcome::Invalid => 3,
        }
    }
    fn tag(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Inconclusive => "INCONCLUSIVE",
            Outcome::Regression => "FAIL",
            Outcome::Invalid => "INVALID",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct GateReport {
    /// One line per failed/inconclusive/invalid (rule, cell) — and per passed one if verbose.
    pub lines: Vec<String>,
    pub checks: usize,
    pub failed: usize,
    pub inconclusive: usize,
    pub invalid: usize,
}

impl GateReport {
    pub fn outcome(&self) -> Outcome {
        if self.invalid > 0 {
            Outcome::Invalid
        } else if self.failed > 0 {
            Outcome::Regression
        } else if self.inconclusive > 0 {
            Outcome::Inconclusive
        } else {
            Outcome::Pass
        }
    }

    fn record(&mut self, o: Outcome, line: String, verbose: bool) {
        self.checks += 1;
        match o {
            Outcome::Pass => {}
            Outcome::Inconclusive => self.inconclusive += 1,
            Outcome::Regression => self.failed += 1,
            Outcome::Invalid => self.invalid += 1,
        }
        if o != Outcome::Pass || verbose {
            self.lines.push(format!("{:<12} {line}", o.tag()));
        }
    }

    pub fn summary(&self) -> String {
        format!(
            "gate: {} ({} checks: {} failed, {} inconclusive, {} invalid) -> exit {}",
            self.outcome().tag(),
            self.checks,
            self.failed,
            self.inconclusive,
            self.invalid,
            self.outcome().exit_code()
        )
    }
}

/// Does a cell fall in a rule's scope? `Err` names a scope key the run does not have.
fn in_scope(
    run: &RunData,
    key: &CellKey,
    cell_id: &str,
    scope: &BTreeMap<String, String>,
) -> Result<bool, ScopeError> {
    for (k, v) in scope {
        let ok = match k.as_str() {
            "step" => key.step == *v,
            "cell_id" => cell_id == v,
            _ => {
                if !run.param_keys.iter().any(|p| p == k) {
                    return Err(ScopeError {
                        run: run.source.clone(),
                        key: k.clone(),
                        params: run.param_keys.clone(),
                    });
                }
                key.params.get(k) == Some(v)
            }
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

struct RowEnv<'a> {
    run: &'a RunData,
    row: &'a Row,
}

impl Env for RowEnv<'_> {
    fn column(&self, name: &str) -> Result<Option<f64>, EvalError> {
        self.row
            .get(name)
            .map_err(|_| EvalError::UnknownColumn(name.to_string()))
    }

    fn at(&self, column: &str, overrides: &[(String, String)]) -> Result<Option<f64>, EvalError> {
        let mut key = self.row.key.clone();
        for (k, v) in overrides {
            if k == "step" {
                key.step = v.clone();
            } else if self.run.param_keys.iter().any(|p| p == k) {
                key.params.insert(k.clone(), v.clone());
            } else {
                return Err(EvalError::NoSuchCell(format!(
                    "{k}={v} (no such parameter)"
                )));
            }
        }
        let rows = self.run.cell_rows(&key);
        if rows.is_empty() {
            let shown: Vec<String> = overrides.iter().map(|(k, v)| format!("{k}={v}")).collect();
            return Err(EvalError::NoSuchCell(format!(
                "{} and otherwise the same parameters as `{}`",
                shown.join(","),
                self.row.key.label(&self.run.param_keys)
            )));
        }
        if let Some(same) = rows.iter().find(|r| r.repetition == self.row.repetition) {
            return same
                .get(column)
                .map_err(|_| EvalError::UnknownColumn(column.to_string()));
        }
        let mut vals = Vec::new();
        for r in rows {
            match r.get(column) {
                Ok(Some(v)) => vals.push(v),
                Ok(None) => {}
                Err(_) => return Err(EvalError::UnknownColumn(column.to_string())),
            }
        }
        Ok(median(&vals))
    }
}

fn fmt(v: Option<f64>) -> String {
    super::render::num(v)
}

fn check_absolute(rule: &Rule, run: &RunData, key: &CellKey, label: &str) -> (Outcome, String) {
    let RuleKind::Absolute { lhs, cmp, rhs } = &rule.kind else {
        unreachable!("only called for absolute rules")
    };
    let rows = run.cell_rows(key);
    let mut failed = Vec::new();
    let mut unknown = Vec::new();
    for row in &rows {
        let env = RowEnv { run, row };
        let (l, r) = match (eval(lhs, &env), eval(rhs, &env)) {
            (Ok(l), Ok(r)) => (l, r),
            (Err(e), _) | (_, Err(e)) => {
                return (
                    Outcome::Invalid,
                    format!(
                        "rule `{}`  cell {label}  {e}  -> rule does not fit this run",
                        rule.text
                    ),
                )
            }
        };
        match (l, r) {
            (Some(a), Some(b)) if cmp.holds(a, b) => {}
            (Some(a), Some(b)) => failed.push(format!(
                "rep {}: {} vs {}",
                row.repetition,
                fmt(Some(a)),
                fmt(Some(b))
            )),
            _ => unknown.push(format!("rep {}: {} vs {}", row.repetition, fmt(l), fmt(r))),
        }
    }
    let n = rows.len();
    if !failed.is_empty() {
        (
            Outcome::Regression,
            format!(
                "rule `{}`  cell {label}  left vs right: {}  -> violated in {}/{n} repetitions",
                rule.text,
                failed.join("; "),
                failed.len()
            ),
        )
    } else if !unknown.is_empty() {
        (
            Outcome::Inconclusive,
            format!(
                "rule `{}`  cell {label}  {}  -> a value is unknown (empty column)",
                rule.text,
                unknown.join("; ")
            ),
        )
    } else {
        (
            Outcome::Pass,
            format!(
                "rule `{}`  cell {label}  holds in {n}/{n} repetitions",
                rule.text
            ),
        )
    }
}

fn check_relative(
    rule: &Rule,
    base: &RunData,
    cand: &RunData,
    key: &CellKey,
    label: &str,
    opts: &StatOptions,
) -> (Outcome, String) {
    let RuleKind::Relative {
        metric,
        limit_pct,
        strict,
    } = &rule.kind
    else {
        unreachable!("only called for relative rules")
    };
    let m = metric_named(metric);
    if cand
        .cell_rows(key)
        .first()
        .is_some_and(|r| r.get(metric).is_err())
    {
        return (
            Outcome::Invalid,
            format!("rule `{}`  cell {label}  no column `{metric}` in the candidate  -> rule does not fit this run", rule.text),
        );
    }
    if !base.cells.contains_key(key) {
        return (
            Outcome::Inconclusive,
            format!("rule `{}`  cell {label}  no baseline cell with these parameters  -> cannot compare", rule.text),
        );
    }
    let bv = model::cell_values(base, key, metric);
    let cv = model::cell_values(cand, key, metric);
    let d = model::decide(
        &m,
        &bv,
        &cv,
        &base.cell_series(key),
        &cand.cell_series(key),
        opts,
        model::seed_for(opts.seed, key, metric),
    );
    let regression =
        model::regression_pct(m.direction, d.change_pct, d.new_from_zero).unwrap_or(0.0);
    let exceeds = if *strict {
        regression >= *limit_pct
    } else {
        regression > *limit_pct
    };
    let values = format!(
        "base {} -> candidate {} ({}, n={}/{})",
        fmt(d.base),
        fmt(d.candidate),
        if d.new_from_zero {
            "new".to_string()
        } else {
            d.change_pct
                .map(|c| format!("{c:+.1}%"))
                .unwrap_or_else(|| "-".into())
        },
        bv.len(),
        cv.len()
    );
    let evidence = match (d.method, d.p_value, d.ci) {
        (Method::MannWhitney, Some(p), _) => format!("U-test p={p:.3}"),
        (Method::BlockBootstrap, _, Some((lo, hi))) => {
            format!("bootstrap CI [{}, {}]", fmt(Some(lo)), fmt(Some(hi)))
        }
        _ => d.note.clone(),
    };
    let (outcome, verdict) = match (d.verdict, exceeds) {
        (Verdict::Unknown, _) => (Outcome::Inconclusive, format!("unknown: {}", d.note)),
        (_, false) => (Outcome::Pass, "within limit".to_string()),
        (Verdict::Worse, true) => (
            Outcome::Regression,
            format!("significant regression beyond {limit_pct}% ({evidence})"),
        ),
        (Verdict::NoChange, true) if d.method == Method::Threshold => {
            (Outcome::Pass, "within noise threshold".to_string())
        }
        (Verdict::NoChange, true) => (
            Outcome::Inconclusive,
            format!(
                "change beyond {limit_pct}% but not significant: too noisy to decide ({evidence})"
            ),
        ),
        (Verdict::Inconclusive, true) => {
            (Outcome::Inconclusive, format!("cannot decide: {}", d.note))
        }
        (Verdict::Better, true) => (
            Outcome::Pass,
            format!("per-second test says better ({evidence})"),
        ),
    };
    (
        outcome,
        format!("rule `{}`  cell {label}  {values}  -> {verdict}", rule.text),
    )
}

fn allowed_invalid(allow: &AllowInvalid, run: &RunData, row: &Row) -> Result<bool, ScopeError> {
    match allow {
        AllowInvalid::None => Ok(false),
        AllowInvalid::All => Ok(true),
        AllowInvalid::Cells(scopes) => {
            for s in scopes {
                if in_scope(run, &row.key, &row.cell_id, s)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
    }
}

/// Evaluate every rule on every cell in its scope.
pub fn evaluate(
    rules: &GateRules,
    base: Option<&RunData>,
    cand: &RunData,
    opts: &StatOptions,
    verbose: bool,
) -> GateReport {
    let mut report = GateReport::default();
    let labels = model::varying_keys(cand.cells.keys());
    let label_of = |k: &CellKey| {
        let l = k.label(&labels);
        if l == "-" {
            "(single cell)".to_string()
        } else {
            l
        }
    };
    for row in &cand.rows {
        if row.valid() != Some(false) {
            continue;
        }
        let label = label_of(&row.key);
        match allowed_invalid(&rules.allow_invalid, cand, row) {
            Ok(true) => {}
            Ok(false) => report.record(
                Outcome::Invalid,
                format!(
                    "run invalid  cell {label}  rep {}  valid=false ({})  -> not allowed (set allow_invalid in [gate] to accept)",
                    row.repetition,
                    row.text.get("invalid_reason").filter(|s| !s.is_empty()).map(String::as_str).unwrap_or("no reason given")
                ),
                verbose,
            ),
            Err(e) => report.record(Outcome::Invalid, format!("allow_invalid: {e}"), verbose),
        }
    }
    for rule in &rules.rules {
        let mut matched = 0;
        for (key, idx) in &cand.cells {
            let cell_id = &cand.rows[idx[0]].cell_id;
            match in_scope(cand, key, cell_id, &rule.scope) {
                Ok(false) => continue,
                Ok(true) => {}
                Err(e) => {
                    report.record(
                        Outcome::Invalid,
                        format!("rule `{}`  {e}", rule.text),
                        verbose,
                    );
                    matched = usize::MAX;
                    break;
                }
            }
            matched += 1;
            let label = label_of(key);
            let (o, line) = match (&rule.kind, base) {
                (RuleKind::Absolute { .. }, _) => check_absolute(rule, cand, key, &label),
                (RuleKind::Relative { .. }, Some(b)) => {
                    check_relative(rule, b, cand, key, &label, opts)
                }
                (RuleKind::Relative { .. }, None) => (
                    Outcome::Invalid,
                    format!(
                        "rule `{}`  cell {label}  relative rule needs --baseline",
                        rule.text
                    ),
                ),
            };
            report.record(o, line, verbose);
        }
        if matched == 0 {
            let scope: Vec<String> = rule.scope.iter().map(|(k, v)| format!("{k}={v}")).collect();
            report.record(
                Outcome::Invalid,
                format!(
                    "rule `{}`  where {{{}}}  matches no cell of the candidate  -> fix the scope",
                    rule.text,
                    scope.join(", ")
                ),
                verbose,
            );
        }
    }
    report
}
