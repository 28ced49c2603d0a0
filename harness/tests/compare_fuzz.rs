//! Malformed input never panics: rules, rules files and result CSVs give typed errors.

use harness::compare::load;
use harness_model::rules;
use proptest::prelude::*;

proptest! {
    #[test]
    fn any_rule_text_parses_or_errors(text in "\\PC{0,60}") {
        let _ = rules::parse_rule(&text, Default::default());
    }

    #[test]
    fn rule_like_text_parses_or_errors(
        text in "[a-z_.0-9 <>=!+*/()%:,\"'-]{0,40}"
    ) {
        if let Err(e) = rules::parse_rule(&text, Default::default()) {
            prop_assert!(e.to_string().starts_with("rule `"));
        }
    }

    #[test]
    fn any_rules_file_parses_or_errors(text in "\\PC{0,120}") {
        let _ = rules::parse_rules_toml(&text);
    }

    #[test]
    fn any_summary_csv_loads_or_errors(body in "[a-z0-9_,.\"\\n -]{0,200}") {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.csv");
        std::fs::write(&path, format!("cell_id,repetition,p99_ms,param_x\n{body}")).unwrap();
        let _ = load::load(&path);
    }
}

#[test]
fn nan_is_unknown_not_a_number() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("summary.csv");
    std::fs::write(&path, "cell_id,repetition,p99_ms\nc0,1,NaN\nc0,2,3.5\n").unwrap();
    let run = load::load(&path).unwrap();
    assert_eq!(run.rows[0].get("p99_ms"), Ok(None));
    assert_eq!(run.rows[1].get("p99_ms"), Ok(Some(3.5)));
}
