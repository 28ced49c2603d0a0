//! Evaluating an expression against a row of a run.

use super::ast::Expr;

/// Why an expression could not be evaluated (a rules/run mismatch, not a failed check).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error("no column `{0}` in the candidate's summary.csv")]
    UnknownColumn(String),
    #[error("at(): no cell with {0}")]
    NoSuchCell(String),
}

/// What an expression reads: columns of the current row, and other cells of the same run.
pub trait Env {
    fn column(&self, name: &str) -> Result<Option<f64>, EvalError>;
    fn at(&self, column: &str, overrides: &[(String, String)]) -> Result<Option<f64>, EvalError>;
}

/// Evaluate; `Ok(None)` means a value was unknown (empty column or 0/0).
pub fn eval(e: &Expr, env: &dyn Env) -> Result<Option<f64>, EvalError> {
    let bin = |a: &Expr, b: &Expr| -> Result<Option<(f64, f64)>, EvalError> {
        Ok(match (eval(a, env)?, eval(b, env)?) {
            (Some(x), Some(y)) => Some((x, y)),
            _ => None,
        })
    };
    Ok(match e {
        Expr::Num(v) => Some(*v),
        Expr::Col(c) => env.column(c)?,
        Expr::At { column, overrides } => env.at(column, overrides)?,
        Expr::Neg(x) => eval(x, env)?.map(|v| -v),
        Expr::Abs(x) => eval(x, env)?.map(f64::abs),
        Expr::Min(a, b) => bin(a, b)?.map(|(x, y)| x.min(y)),
        Expr::Max(a, b) => bin(a, b)?.map(|(x, y)| x.max(y)),
        Expr::Bin(op, a, b) => match bin(a, b)? {
            None => None,
            Some((x, y)) => match op {
                '+' => Some(x + y),
                '-' => Some(x - y),
                '*' => Some(x * y),
                // 0/0 carries no information; x/0 is a real "infinitely more".
                _ if y == 0.0 && x == 0.0 => None,
                _ => Some(x / y),
            },
        },
    })
}
