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

use std::collections::BTreeMap;
use std::fmt;

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("rule `{rule}`: {message}")]
pub struct RuleError {
    pub rule: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64, String),
    Ident(String),
    Str(String),
    Op(&'static str),
}

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = src.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_digit() {
                    i = j;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let text: String = chars[start..i].iter().collect();
            let v = text
                .parse::<f64>()
                .map_err(|_| format!("`{text}` is not a number"))?;
            out.push(Tok::Num(v, text));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '_' | '.' | '-'))
            {
                // A '-' belongs to a name only when followed by a letter (kebab-case keys);
                // `a-b` between two columns would be ambiguous, so write `a - b`.
                if chars[i] == '-' && !chars.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic()) {
                    break;
                }
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect()));
        } else if c == '"' || c == '\'' {
            let end = chars[i + 1..]
                .iter()
                .position(|&d| d == c)
                .ok_or_else(|| "unterminated string".to_string())?;
            out.push(Tok::Str(chars[i + 1..i + 1 + end].iter().collect()));
            i += end + 2;
        } else {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let op = ["<=", ">=", "==", "!="]
                .into_iter()
                .find(|o| *o == two)
                .or_else(|| {
                    ["<", ">", "+", "-", "*", "/", "(", ")", ",", "=", ":", "%"]
                        .into_iter()
                        .find(|o| o.starts_with(c))
                })
                .ok_or_else(|| format!("unexpected character `{c}`"))?;
            i += op.len();
            out.push(Tok::Op(op));
        }
    }
    Ok(out)
}

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
    fn from(op: &str) -> Option<Cmp> {
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

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }
    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.eat(op) {
            Ok(())
        } else {
            Err(format!("expected `{op}` {}", self.where_()))
        }
    }
    fn where_(&self) -> String {
        match self.peek() {
            None => "at the end".to_string(),
            Some(t) => format!("before {}", show(t)),
        }
    }
    fn expr(&mut self) -> Result<Expr, String> {
        let mut e = self.term()?;
        loop {
            if self.eat("+") {
                e = Expr::Bin('+', Box::new(e), Box::new(self.term()?));
            } else if self.eat("-") {
                e = Expr::Bin('-', Box::new(e), Box::new(self.term()?));
            } else {
                return Ok(e);
            }
        }
    }
    fn term(&mut self) -> Result<Expr, String> {
        let mut e = self.unary()?;
        loop {
            if self.eat("*") {
                e = Expr::Bin('*', Box::new(e), Box::new(self.unary()?));
            } else if self.eat("/") {
                e = Expr::Bin('/', Box::new(e), Box::new(self.unary()?));
            } else {
                return Ok(e);
            }
        }
    }
    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        self.atom()
    }
    fn word(&mut self) -> Result<String, String> {
        match self.next() {
            Some(Tok::Ident(s)) | Some(Tok::Str(s)) => Ok(s),
            Some(Tok::Num(_, text)) => Ok(text),
            Some(t) => Err(format!("expected a name or value, found {}", show(&t))),
            None => Err("expected a name or value at the end".to_string()),
        }
    }
    fn atom(&mut self) -> Result<Expr, String> {
        match self.next() {
            Some(Tok::Num(v, _)) => {
                if self.eat("%") {
                    Ok(Expr::Num(v / 100.0))
                } else {
                    Ok(Expr::Num(v))
                }
            }
            Some(Tok::Op("(")) => {
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Some(Tok::Ident(name)) => {
                if name == "true" {
                    return Ok(Expr::Num(1.0));
                }
                if name == "false" {
                    return Ok(Expr::Num(0.0));
                }
                if !self.eat("(") {
                    return Ok(Expr::Col(name));
                }
                match name.as_str() {
                    "abs" => {
                        let e = self.expr()?;
                        self.expect(")")?;
                        Ok(Expr::Abs(Box::new(e)))
                    }
                    "min" | "max" => {
                        let a = self.expr()?;
                        self.expect(",")?;
                        let b = self.expr()?;
                        self.expect(")")?;
                        Ok(if name == "min" {
                            Expr::Min(Box::new(a), Box::new(b))
                        } else {
                            Expr::Max(Box::new(a), Box::new(b))
                        })
                    }
                    "at" => {
                        let column = match self.next() {
                            Some(Tok::Ident(c)) => c,
                            _ => return Err("at(...) takes a column name first".to_string()),
                        };
                        let mut overrides = Vec::new();
                        while self.eat(",") {
                            let k = self.word()?;
                            self.expect("=")?;
                            let v = self.word()?;
                            overrides.push((k.strip_prefix("param_").unwrap_or(&k).to_string(), v));
                        }
                        self.expect(")")?;
                        if overrides.is_empty() {
                            return Err(
                                "at(column, param = value, ...) needs at least one parameter"
                                    .to_string(),
                            );
                        }
                        Ok(Expr::At { column, overrides })
                    }
                    other => Err(format!(
                        "unknown function `{other}` (known: abs, min, max, at)"
                    )),
                }
            }
            Some(t) => Err(format!("expected a value, found {}", show(&t))),
            None => Err("expected a value at the end".to_string()),
        }
    }
}

fn show(t: &Tok) -> String {
    match t {
        Tok::Num(_, s) => format!("`{s}`"),
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Str(s) => format!("\"{s}\""),
        Tok::Op(o) => format!("`{o}`"),
    }
}

/// Parse one rule string.
pub fn parse_rule(text: &str, scope: BTreeMap<String, String>) -> Result<Rule, RuleError> {
    let err = |message: String| RuleError {
        rule: text.to_string(),
        message,
    };
    let toks = lex(text).map_err(err)?;
    // Relative form: METRIC : regression (<|<=) N %
    if matches!(toks.get(1), Some(Tok::Op(":"))) {
        let metric = match &toks[0] {
            Tok::Ident(m) => m.clone(),
            t => {
                return Err(err(format!(
                    "expected a metric before `:`, found {}",
                    show(t)
                )))
            }
        };
        let shape = "write `METRIC: regression <= N%`";
        match toks.get(2) {
            Some(Tok::Ident(w)) if w == "regression" => {}
            _ => return Err(err(format!("unknown relative rule; {shape}"))),
        }
        let strict = match toks.get(3) {
            Some(Tok::Op("<")) => true,
            Some(Tok::Op("<=")) => false,
            _ => return Err(err(format!("expected `<=` or `<`; {shape}"))),
        };
        let limit = match toks.get(4) {
            Some(Tok::Num(v, _)) => *v,
            _ => return Err(err(format!("expected a percentage; {shape}"))),
        };
        if !matches!(toks.get(5), Some(Tok::Op("%"))) || toks.len() != 6 {
            return Err(err(format!("expected `%` at the end; {shape}")));
        }
        return Ok(Rule {
            text: text.to_string(),
            kind: RuleKind::Relative {
                metric,
                limit_pct: limit,
                strict,
            },
            scope,
        });
    }
    let mut p = Parser { toks, pos: 0 };
    let lhs = p.expr().map_err(err)?;
    let cmp = match p.next() {
        Some(Tok::Op(o)) => Cmp::from(o),
        _ => None,
    }
    .ok_or_else(|| {
        err("expected a comparison (< <= > >= == !=) after the left side".to_string())
    })?;
    let rhs = p.expr().map_err(err)?;
    if p.pos < p.toks.len() {
        return Err(err(format!(
            "unexpected {}",
            p.where_().trim_start_matches("before ")
        )));
    }
    Ok(Rule {
        text: text.to_string(),
        kind: RuleKind::Absolute { lhs, cmp, rhs },
        scope,
    })
}

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

/// Which invalid (`valid=false`) candidate rows are acceptable.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum AllowInvalid {
    #[default]
    None,
    All,
    /// Rows of cells matching any of these scopes.
    Cells(Vec<BTreeMap<String, String>>),
}

/// A parsed `[gate]` table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GateRules {
    pub rules: Vec<Rule>,
    pub allow_invalid: AllowInvalid,
    pub threshold_pct: Option<f64>,
    pub alpha: Option<f64>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGate {
    #[serde(default)]
    rules: Vec<String>,
    #[serde(default)]
    rule: Vec<RawRule>,
    #[serde(default, alias = "allow-invalid")]
    allow_invalid: Option<RawAllow>,
    #[serde(default)]
    threshold: Option<f64>,
    #[serde(default)]
    alpha: Option<f64>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    expr: String,
    #[serde(default, rename = "where")]
    scope: BTreeMap<String, toml::Value>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum RawAllow {
    Flag(bool),
    Cells(Vec<BTreeMap<String, toml::Value>>),
}

fn scope_of(raw: BTreeMap<String, toml::Value>) -> Result<BTreeMap<String, String>, String> {
    raw.into_iter()
        .map(|(k, v)| {
            let v = match v {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => {
                    return Err(format!(
                        "where.{k}: `{other}` must be a string, number or boolean"
                    ))
                }
            };
            Ok((k.strip_prefix("param_").unwrap_or(&k).to_string(), v))
        })
        .collect()
}

/// Parse rules from TOML text: the `[gate]` table if there is one (a profile), else the
/// top level (a standalone rules file).
pub fn parse_rules_toml(text: &str) -> Result<GateRules, String> {
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    let table = match doc.get("gate") {
        Some(toml::Value::Table(t)) => t.clone(),
        Some(_) => return Err("`gate` must be a table".to_string()),
        None if doc.contains_key("rules") || doc.contains_key("rule") => doc,
        None => {
            return Err("no [gate] table (and no top-level `rules`/`[[rule]]`) found".to_string())
        }
    };
    let raw: RawGate = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| format!("[gate]: {e}"))?;
    let mut rules = Vec::new();
    for r in raw.rules {
        rules.push(parse_rule(&r, BTreeMap::new()).map_err(|e| e.to_string())?);
    }
    for r in raw.rule {
        let scope = scope_of(r.scope)?;
        rules.push(parse_rule(&r.expr, scope).map_err(|e| e.to_string())?);
    }
    if let Some(t) = raw.threshold {
        if !(0.0..=1000.0).contains(&t) {
            return Err(format!("threshold = {t}: must be a percentage in 0..=1000"));
        }
    }
    if let Some(a) = raw.alpha {
        if !(a > 0.0 && a < 1.0) {
            return Err(format!("alpha = {a}: must be in (0, 1)"));
        }
    }
    let allow_invalid = match raw.allow_invalid {
        None | Some(RawAllow::Flag(false)) => AllowInvalid::None,
        Some(RawAllow::Flag(true)) => AllowInvalid::All,
        Some(RawAllow::Cells(v)) => {
            AllowInvalid::Cells(v.into_iter().map(scope_of).collect::<Result<Vec<_>, _>>()?)
        }
    };
    Ok(GateRules {
        rules,
        allow_invalid,
        threshold_pct: raw.threshold,
        alpha: raw.alpha,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Row(BTreeMap<&'static str, Option<f64>>);
    impl Env for Row {
        fn column(&self, name: &str) -> Result<Option<f64>, EvalError> {
            self.0
                .get(name)
                .copied()
                .ok_or_else(|| EvalError::UnknownColumn(name.to_string()))
        }
        fn at(&self, column: &str, o: &[(String, String)]) -> Result<Option<f64>, EvalError> {
            if o[0].1 == "false" {
                Ok(self.0.get(column).copied().flatten().map(|v| v / 4.0))
            } else {
                Err(EvalError::NoSuchCell(format!("{}={}", o[0].0, o[0].1)))
            }
        }
    }

    fn check(rule: &str, env: &Row) -> Result<Option<bool>, EvalError> {
        let r = parse_rule(rule, BTreeMap::new()).unwrap();
        let RuleKind::Absolute { lhs, cmp, rhs } = r.kind else {
            panic!("not absolute")
        };
        Ok(match (eval(&lhs, env)?, eval(&rhs, env)?) {
            (Some(a), Some(b)) => Some(cmp.holds(a, b)),
            _ => None,
        })
    }

    fn row() -> Row {
        Row(BTreeMap::from([
            ("sent", Some(100.0)),
            ("ok", Some(90.0)),
            ("busy", Some(10.0)),
            ("p99_ms", Some(12.5)),
            ("valid", Some(1.0)),
            ("target_rate", Some(1000.0)),
            ("achieved_rate", Some(960.0)),
            ("busy_rate", Some(0.1)),
            ("broker_cpu_avg", None),
        ]))
    }

    #[test]
    fn absolute_rules_evaluate() {
        let r = row();
        assert_eq!(check("sent == ok + busy", &r), Ok(Some(true)));
        assert_eq!(check("sent == ok", &r), Ok(Some(false)));
        assert_eq!(
            check("achieved_rate >= 0.95 * target_rate", &r),
            Ok(Some(true))
        );
        assert_eq!(
            check("achieved_rate >= 97% * target_rate", &r),
            Ok(Some(false))
        );
        assert_eq!(check("valid == true", &r), Ok(Some(true)));
        assert_eq!(check("p99_ms < 50", &r), Ok(Some(true)));
        assert_eq!(check("-(p99_ms - 20) > 2 * 3", &r), Ok(Some(true)));
        assert_eq!(check("abs(busy - ok) / sent >= 0.8", &r), Ok(Some(true)));
        assert_eq!(check("min(busy, ok) == 10", &r), Ok(Some(true)));
        assert_eq!(
            check("busy_rate <= 4 * at(busy_rate, lock = false)", &r),
            Ok(Some(true))
        );
        assert_eq!(
            check("busy_rate < 4 * at(busy_rate, lock = false)", &r),
            Ok(Some(false))
        );
        // Unknown values make the rule inconclusive, not failed.
        assert_eq!(check("broker_cpu_avg < 50", &r), Ok(None));
        assert_eq!(check("busy / (ok - ok) > 1", &r), Ok(Some(true)));
        assert_eq!(check("(ok - ok) / (busy - busy) > 1", &r), Ok(None));
        assert_eq!(
            check("nope > 1", &r),
            Err(EvalError::UnknownColumn("nope".into()))
        );
        assert!(matches!(
            check("busy < at(busy, \"param_lock\" = 'true')", &r),
            Err(EvalError::NoSuchCell(_))
        ));
    }

    #[test]
    fn relative_rules_parse() {
        let r = parse_rule("p99_ms: regression <= 10%", BTreeMap::new()).unwrap();
        assert_eq!(
            r.kind,
            RuleKind::Relative {
                metric: "p99_ms".into(),
                limit_pct: 10.0,
                strict: false
            }
        );
        let r = parse_rule("achieved_rate : regression < 2.5 %", BTreeMap::new()).unwrap();
        assert!(matches!(r.kind, RuleKind::Relative { strict: true, .. }));
    }

    #[test]
    fn bad_rules_are_explained() {
        for (rule, needle) in [
            ("p99_ms < ", "expected a value at the end"),
            ("p99_ms 50", "expected a comparison"),
            ("p99_ms < 50 50", "unexpected `50`"),
            (
                "p99_ms: improvement <= 5%",
                "write `METRIC: regression <= N%`",
            ),
            ("p99_ms: regression <= 5", "expected `%`"),
            ("foo(1) < 2", "unknown function `foo`"),
            ("at(busy) < 2", "needs at least one parameter"),
            ("p99_ms < 5 $", "unexpected character `$`"),
            ("(p99_ms < 5", "expected `)`"),
        ] {
            let e = parse_rule(rule, BTreeMap::new()).unwrap_err();
            assert!(e.to_string().contains(needle), "{rule}: {e}");
        }
    }

    #[test]
    fn rules_toml_profile_and_standalone() {
        let profile = r#"
            [load]
            rate = 5
            [gate]
            rules = ["valid == true", "p99_ms: regression <= 50%"]
            threshold = 10
            allow_invalid = [{ "param_broker.x" = 3000 }]
            [[gate.rule]]
            expr = "busy > 0"
            where = { "param_broker.waitTimeMillsInSendQueue" = 3000, step = "2" }
        "#;
        let g = parse_rules_toml(profile).unwrap();
        assert_eq!(g.rules.len(), 3);
        assert_eq!(g.threshold_pct, Some(10.0));
        assert_eq!(
            g.rules[2].scope,
            BTreeMap::from([
                (
                    "broker.waitTimeMillsInSendQueue".to_string(),
                    "3000".to_string()
                ),
                ("step".to_string(), "2".to_string())
            ])
        );
        assert_eq!(
            g.allow_invalid,
            AllowInvalid::Cells(vec![BTreeMap::from([(
                "broker.x".to_string(),
                "3000".to_string()
            )])])
        );
        let standalone = "rules = [\"busy == 0\"]\nallow_invalid = true\n";
        let g = parse_rules_toml(standalone).unwrap();
        assert_eq!(g.allow_invalid, AllowInvalid::All);
        assert!(parse_rules_toml("[load]\nrate=1\n")
            .unwrap_err()
            .contains("no [gate] table"));
        assert!(parse_rules_toml("[gate]\nrulez = []\n")
            .unwrap_err()
            .contains("unknown field"));
        assert!(parse_rules_toml("[gate]\nrules = [\"p99 <\"]\n").is_err());
        assert!(parse_rules_toml("[gate]\nalpha = 2\n")
            .unwrap_err()
            .contains("alpha"));
    }
}
