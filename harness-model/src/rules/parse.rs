//! The recursive-descent parser of one rule string (grammar in the module docs of rules/).

use std::collections::BTreeMap;

use super::ast::{Cmp, Expr, Rule, RuleKind};
use super::error::{Place, RuleError, SyntaxError};
use super::lex::{lex, show, Tok};

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
    fn expect(&mut self, op: &'static str) -> Result<(), SyntaxError> {
        if self.eat(op) {
            Ok(())
        } else {
            Err(SyntaxError::Expected {
                op,
                at: self.place(),
            })
        }
    }
    fn place(&self) -> Place {
        match self.peek() {
            None => Place::End,
            Some(t) => Place::Before(show(t)),
        }
    }
    fn expr(&mut self) -> Result<Expr, SyntaxError> {
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
    fn term(&mut self) -> Result<Expr, SyntaxError> {
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
    fn unary(&mut self) -> Result<Expr, SyntaxError> {
        if self.eat("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        self.atom()
    }
    fn word(&mut self) -> Result<String, SyntaxError> {
        match self.next() {
            Some(Tok::Ident(s)) | Some(Tok::Str(s)) => Ok(s),
            Some(Tok::Num(_, text)) => Ok(text),
            Some(t) => Err(SyntaxError::NameOrValue(show(&t))),
            None => Err(SyntaxError::NameOrValueAtEnd),
        }
    }
    fn atom(&mut self) -> Result<Expr, SyntaxError> {
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
                            _ => return Err(SyntaxError::AtColumn),
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
                            return Err(SyntaxError::AtParameters);
                        }
                        Ok(Expr::At { column, overrides })
                    }
                    other => Err(SyntaxError::UnknownFunction(other.to_owned())),
                }
            }
            Some(t) => Err(SyntaxError::Value(show(&t))),
            None => Err(SyntaxError::ValueAtEnd),
        }
    }
}
/// Parse one rule string.
pub fn parse_rule(text: &str, scope: BTreeMap<String, String>) -> Result<Rule, RuleError> {
    let err = |problem: SyntaxError| RuleError {
        rule: text.to_string(),
        problem,
    };
    let toks = lex(text).map_err(err)?;
    // Relative form: METRIC : regression (<|<=) N %
    if matches!(toks.get(1), Some(Tok::Op(":"))) {
        let metric = match &toks[0] {
            Tok::Ident(m) => m.clone(),
            t => return Err(err(SyntaxError::RelativeMetric(show(t)))),
        };
        match toks.get(2) {
            Some(Tok::Ident(w)) if w == "regression" => {}
            _ => return Err(err(SyntaxError::RelativeWord)),
        }
        let strict = match toks.get(3) {
            Some(Tok::Op("<")) => true,
            Some(Tok::Op("<=")) => false,
            _ => return Err(err(SyntaxError::RelativeComparison)),
        };
        let limit = match toks.get(4) {
            Some(Tok::Num(v, _)) => *v,
            _ => return Err(err(SyntaxError::RelativeLimit)),
        };
        if !matches!(toks.get(5), Some(Tok::Op("%"))) || toks.len() != 6 {
            return Err(err(SyntaxError::RelativePercent));
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
    .ok_or_else(|| err(SyntaxError::Comparison))?;
    let rhs = p.expr().map_err(err)?;
    if let Some(t) = p.peek() {
        return Err(err(SyntaxError::Trailing(show(t))));
    }
    Ok(Rule {
        text: text.to_string(),
        kind: RuleKind::Absolute { lhs, cmp, rhs },
        scope,
    })
}
