//! The gate's rule language and rules file.
//!
//! ```text
//! rule     := relative | absolute
//! relative := METRIC ":" "regression" ("<" | "<=") NUMBER "%"
//! absolute := expr CMP expr            CMP := < <= > >= == !=
//! expr     := term (("+" | "-") term)*
//! term     := unary (("*" | "/") unary)*
//! unary    := "-" unary | atom
//! atom     := NUMBER ["%"] | true | false | COLUMN | "(" expr ")"
//!           | abs(expr) | min(expr, expr) | max(expr, expr)
//!           | at(COLUMN, PARAM = VALUE, ...)
//! ```
//! `COLUMN` is any summary.csv column (`p99_ms`, `busy`, `valid`, ...) or a derived per-class
//! busy rate `busy_<class>_rate` (= `busy_<class>` / `sent`). Booleans are 1 and 0, `5%` is
//! 0.05. `at(col, k=v, ...)` is `col` in the cell of the *same run* whose parameters equal
//! the current cell's except for the given overrides (same repetition when it exists, else
//! the median over repetitions): this is how same-run ratios between cells are written,
//! e.g. `busy_rate <= 2 * at(busy_rate, broker.useReentrantLockWhenPutMessage = false)`.
//! `PARAM` may be written with or without `param_`, quoted or bare; `step` is allowed.
//! Absolute rules are checked on every repetition of every cell in scope; a value that is
//! unknown (empty column) makes the rule inconclusive for that cell.
//!
//! A relative rule compares each candidate cell with the baseline cell of equal parameters
//! using the statistics of `harness compare` (model.rs): it fails (exit 1) only when the
//! change is significant and worse than the limit; a point change beyond the limit that
//! the test cannot confirm — too noisy, too few repetitions or seconds — is inconclusive
//! (exit 2); a change within the limit passes without a test.
//!
//! The rules file is TOML: a profile's `[gate]` table, or the same keys at the top level.
//!
//! ```toml
//! [gate]
//! threshold = 10          # noise threshold in percent for relative rules. Default: 5
//! alpha = 0.05            # significance level. Default: 0.05
//! allow_invalid = false   # or true, or a list of scopes: [{ "param_x" = "y" }]. Default: false
//! rules = ["valid == true", "p99_ms: regression <= 50%"]     # apply to every cell
//! [[gate.rule]]                                            # scoped to some cells
//! expr = "busy > 0"
//! where = { "param_broker.waitTimeMillsInSendQueue" = 200 }  # also `step`, `cell_id`
//! ```
//! A scope key that is not a parameter of the candidate, or a scope matching no cell, is an
//! error (exit 3) rather than a silently skipped rule.
//!
//! * lex.rs, parse.rs — tokens and the parser of one rule string
//! * error.rs         — why a rule or a rules file does not parse
//! * ast.rs           — the parsed rule
//! * evaluate.rs      — an expression against a row (`Env`)
//! * file.rs          — the `[gate]` table

mod ast;
mod error;
mod evaluate;
mod file;
mod lex;
mod parse;
#[cfg(test)]
mod tests;

pub use ast::{Cmp, Expr, Rule, RuleKind};
pub use error::{Place, RuleError, RulesFileError, SyntaxError};
pub use evaluate::{eval, Env, EvalError};
pub use file::{parse_rules_toml, AllowInvalid, GateRules};
pub use parse::parse_rule;
