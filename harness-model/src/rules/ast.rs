//! A parsed rule: comparisons, expressions, and the two kinds of rule.

use std::collections::BTreeMap;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Cmp {
    pub(super) fn from(op: &str) -> Option<Cmp> {
        Some(match op {
            "<" => Cmp::Lt,
            "<=" => Cmp::Le,
            ">" => Cmp::Gt,
            ">=" => Cmp::Ge,
            "==" => Cmp::Eq,
            "!=" => Cmp::Ne,
            _ => return None,
        })
    }
    pub fn holds(self, a: f64, b: f64) -> bool {
        // Counts are exact integers; the tolerance only absorbs float rounding of rates.
        let eq = a == b
            || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
                && a.is_finite()
                && b.is_finite();
        match self {
            Cmp::Lt => a < b && !eq,
            Cmp::Le => a <= b || eq,
            Cmp::Gt => a > b && !eq,
            Cmp::Ge => a >= b || eq,
            Cmp::Eq => eq,
            Cmp::Ne => !eq,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(f64),
    Col(String),
    At {
        column: String,
        overrides: Vec<(String, String)>,
    },
    Neg(Box<Expr>),
    Bin(char, Box<Expr>, Box<Expr>),
    Abs(Box<Expr>),
    Min(Box<Expr>, Box<Expr>),
    Max(Box<Expr>, Box<Expr>),
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Num(v) => write!(f, "{v}"),
            Expr::Col(c) => write!(f, "{c}"),
            Expr::At { column, overrides } => {
                write!(f, "at({column}")?;
                for (k, v) in overrides {
                    write!(f, ", {k}={v}")?;
                }
                write!(f, ")")
            }
            Expr::Neg(e) => write!(f, "-{e}"),
            Expr::Bin(op, a, b) => write!(f, "({a} {op} {b})"),
            Expr::Abs(e) => write!(f, "abs({e})"),
            Expr::Min(a, b) => write!(f, "min({a}, {b})"),
            Expr::Max(a, b) => write!(f, "max({a}, {b})"),
        }
    }
}

/// What a rule checks.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleKind {
    Absolute {
        lhs: Expr,
        cmp: Cmp,
        rhs: Expr,
    },
    /// Fails when the metric is significantly worse than the baseline by more than
    /// `limit_pct` (or by `limit_pct` exactly when `strict`).
    Relative {
        metric: String,
        limit_pct: f64,
        strict: bool,
    },
}

/// A parsed rule with its scope (parameter name without `param_` → value).
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub text: String,
    pub kind: RuleKind,
    pub scope: BTreeMap<String, String>,
}
