use std::collections::BTreeMap;

use super::ast::RuleKind;
use super::evaluate::{eval, Env, EvalError};
use super::file::{parse_rules_toml, AllowInvalid};
use super::parse::parse_rule;

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
        .to_string()
        .contains("no [gate] table"));
    assert!(parse_rules_toml("[gate]\nrulez = []\n")
        .unwrap_err()
        .to_string()
        .contains("unknown field"));
    assert!(parse_rules_toml("[gate]\nrules = [\"p99 <\"]\n").is_err());
    assert!(parse_rules_toml("[gate]\nalpha = 2\n")
        .unwrap_err()
        .to_string()
        .contains("alpha"));
}
