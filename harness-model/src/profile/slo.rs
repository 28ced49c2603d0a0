//! The `[slo]` section: the limits a knee probe must meet, written in the gate's expression
//! language over `summary.csv` columns.
//!
//! ```toml
//! [slo]
//! terms = ["busy_rate <= 0.1%", "p99_ms <= 50", "achieved_rate >= 0.95 * target_rate", "timeouts == 0"]
//! ```
//! Terms are checked in the order written; the first that does not hold is the probe's
//! `slo_failed`. A term whose value is unknown (an empty column) fails: a probe that cannot
//! show it met the limit did not meet it. `at()` and relative (`: regression`) rules compare
//! against other cells or runs and have no meaning for one probe, so they are refused.

use serde::Deserialize;
use toml::Spanned;

use crate::rules::{eval, parse_rule, Cmp, Env, EvalError, Expr, RuleError, RuleKind};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSlo {
    pub(super) terms: Vec<Spanned<String>>,
}

/// One SLO term: `lhs CMP rhs`, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct SloTerm {
    pub text: String,
    pub lhs: Expr,
    pub cmp: Cmp,
    pub rhs: Expr,
}

/// The `[slo]` section.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Slo {
    pub terms: Vec<SloTerm>,
}

/// Why an `[slo]` term is refused; the term's text as written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SloTermError {
    #[error(transparent)]
    Rule(#[from] RuleError),
    #[error(
        "`{0}`: a relative rule compares two runs; an SLO term is absolute, e.g. `p99_ms <= 50`"
    )]
    Relative(String),
    #[error("`{0}`: at() reads another cell; an SLO term reads only the probe's own columns")]
    ReadsAnotherCell(String),
}

impl SloTerm {
    /// Parses one term; the error says what to write instead.
    pub fn parse(text: &str) -> Result<SloTerm, SloTermError> {
        let rule = parse_rule(text, Default::default())?;
        let RuleKind::Absolute { lhs, cmp, rhs } = rule.kind else {
            return Err(SloTermError::Relative(text.to_owned()));
        };
        if mentions_at(&lhs) || mentions_at(&rhs) {
            return Err(SloTermError::ReadsAnotherCell(text.to_owned()));
        }
        Ok(SloTerm {
            text: text.to_owned(),
            lhs,
            cmp,
            rhs,
        })
    }

    /// Whether the term holds for the row `env` reads; an unknown value does not hold.
    pub fn holds(&self, env: &dyn Env) -> Result<bool, EvalError> {
        Ok(match (eval(&self.lhs, env)?, eval(&self.rhs, env)?) {
            (Some(a), Some(b)) => self.cmp.holds(a, b),
            _ => false,
        })
    }

    /// `(column, limit)` when the term is `column CMP constant` (for drawing the limit).
    pub fn column_limit(&self) -> Option<(&str, f64)> {
        match (&self.lhs, &self.rhs) {
            (Expr::Col(c), Expr::Num(v)) => Some((c.as_str(), *v)),
            _ => None,
        }
    }
}

impl Slo {
    pub(super) fn from_raw(raw: &RawSlo) -> Result<Slo, (std::ops::Range<usize>, String)> {
        if raw.terms.is_empty() {
            return Err((
                0..0,
                "[slo] needs at least one term, e.g. terms = [\"p99_ms <= 50\"]".into(),
            ));
        }
        let terms = raw
            .terms
            .iter()
            .map(|t| SloTerm::parse(t.get_ref()).map_err(|e| (t.span(), e.to_string())))
            .collect::<Result<_, _>>()?;
        Ok(Slo { terms })
    }

    /// The first term (in the order written) that does not hold, or None when all hold.
    pub fn first_failure(&self, env: &dyn Env) -> Result<Option<&SloTerm>, EvalError> {
        for t in &self.terms {
            if !t.holds(env)? {
                return Ok(Some(t));
            }
        }
        Ok(None)
    }
}

fn mentions_at(e: &Expr) -> bool {
    match e {
        Expr::At { .. } => true,
        Expr::Num(_) | Expr::Col(_) => false,
        Expr::Neg(x) | Expr::Abs(x) => mentions_at(x),
        Expr::Bin(_, a, b) | Expr::Min(a, b) | Expr::Max(a, b) => mentions_at(a) || mentions_at(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    struct Map(BTreeMap<&'static str, Option<f64>>);
    impl Env for Map {
        fn column(&self, name: &str) -> Result<Option<f64>, EvalError> {
            self.0
                .get(name)
                .copied()
                .ok_or_else(|| EvalError::UnknownColumn(name.into()))
        }
        fn at(&self, _: &str, _: &[(String, String)]) -> Result<Option<f64>, EvalError> {
            unreachable!("refused at parse time")
        }
    }

    #[test]
    fn terms_are_checked_in_order_and_unknown_fails() {
        let slo = Slo {
            terms: [
                "busy_rate <= 0.1%",
                "p99_ms <= 50",
                "achieved_rate >= 0.95 * target_rate",
            ]
            .iter()
            .map(|t| SloTerm::parse(t).unwrap())
            .collect(),
        };
        let row = |busy: f64, p99: Option<f64>, achieved: f64| {
            Map(BTreeMap::from([
                ("busy_rate", Some(busy)),
                ("p99_ms", p99),
                ("achieved_rate", Some(achieved)),
                ("target_rate", Some(1000.0)),
            ]))
        };
        assert_eq!(
            slo.first_failure(&row(0.0005, Some(10.0), 990.0)).unwrap(),
            None
        );
        let fail = |r| slo.first_failure(&r).unwrap().map(|t| t.text.clone());
        assert_eq!(
            fail(row(0.002, Some(90.0), 500.0)).as_deref(),
            Some("busy_rate <= 0.1%")
        );
        assert_eq!(
            fail(row(0.0, Some(90.0), 500.0)).as_deref(),
            Some("p99_ms <= 50")
        );
        assert_eq!(
            fail(row(0.0, None, 1000.0)).as_deref(),
            Some("p99_ms <= 50")
        );
        assert_eq!(
            fail(row(0.0, Some(1.0), 900.0)).as_deref(),
            Some("achieved_rate >= 0.95 * target_rate")
        );
        assert_eq!(slo.terms[1].column_limit(), Some(("p99_ms", 50.0)));
    }

    #[test]
    fn relative_and_at_terms_are_refused() {
        let e = SloTerm::parse("p99_ms: regression <= 10%").unwrap_err();
        assert!(matches!(e, SloTermError::Relative(_)));
        assert!(e.to_string().contains("absolute"), "{e}");
        let e = SloTerm::parse("busy <= at(busy, x = 1)").unwrap_err();
        assert!(e.to_string().contains("at()"), "{e}");
        assert!(matches!(
            SloTerm::parse("p99_ms <="),
            Err(SloTermError::Rule(_))
        ));
    }
}
