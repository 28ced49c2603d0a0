//! `compare` and `gate` on an A/B folder: the folder holds both sides, so the verdict comes
//! from the paired rounds inside it, never from a second folder.
//!
//! Called by `compare/mod.rs` before its usual path; each returns None for any other folder.

use std::path::Path;

use crate::exit;
use harness_analysis::compare::gate::{evaluate, Outcome};
use harness_analysis::compare::model::StatOptions;
use harness_model::profile::{ab_settings_of, AbSettings};
use harness_model::rules::{parse_rules_toml, GateRules};
use harness_results::read::{load, RunData};

use super::verdict::{gate_lines, is_ab, judge, table};

fn ab_run(path: &Path) -> Option<RunData> {
    load(path).ok().filter(is_ab)
}

/// The profile text `harness ab` recorded in the folder's run.json, if any.
fn recorded_profile(folder: &Path) -> Option<String> {
    let text = std::fs::read_to_string(folder.join("run.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json.get("profile_text")?.as_str().map(str::to_owned)
}

/// The `[ab]` settings: from the rules file if one is given, else from the profile the folder
/// was measured with (its run.json), else the defaults; then --threshold / --alpha.
fn settings(
    rules_text: Option<&str>,
    folder: &Path,
    threshold: Option<f64>,
    alpha: Option<f64>,
) -> anyhow::Result<AbSettings> {
    let text = rules_text
        .map(str::to_owned)
        .or_else(|| recorded_profile(folder));
    let mut s = match text {
        Some(t) => ab_settings_of(&t).map_err(|e| exit::invalid(anyhow::anyhow!(e)))?,
        None => AbSettings::default(),
    };
    if let Some(t) = threshold {
        anyhow::ensure!(t.is_finite() && t >= 0.0, "--threshold {t}: must be >= 0");
        s.threshold_pct = t;
    }
    if let Some(a) = alpha {
        anyhow::ensure!(a > 0.0 && a < 1.0, "--alpha {a}: must be in (0, 1)");
        s.alpha = a;
    }
    Ok(s)
}

fn has_gate_rules(text: &str) -> bool {
    toml::from_str::<toml::Table>(text)
        .map(|t| ["gate", "rules", "rule"].iter().any(|k| t.contains_key(*k)))
        .unwrap_or(true)
}

/// `harness compare AB_FOLDER`: the paired table.
pub fn compare_ab(
    base: &Path,
    candidate: Option<&Path>,
    threshold: Option<f64>,
    alpha: Option<f64>,
) -> anyhow::Result<Option<String>> {
    let base_ab = ab_run(base);
    if let Some(c) = candidate {
        if base_ab.is_some() || ab_run(c).is_some() {
            return Err(exit::invalid(anyhow::anyhow!(
                "an A/B folder holds both sides and is compared alone: `harness compare {}`",
                if base_ab.is_some() { base } else { c }.display()
            )));
        }
        return Ok(None);
    }
    let Some(run) = base_ab else {
        return Ok(None);
    };
    let s = settings(None, base, threshold, alpha).map_err(exit::invalid)?;
    Ok(Some(table(&judge(&run, &s, 0x5eed))))
}

/// `harness gate --candidate AB_FOLDER [--rules FILE]`: the paired verdict of the `[ab]`
/// table, plus the absolute rules of its `[gate]` table on every job's row. Returns the exit
/// code, or None for a folder that is not an A/B one.
pub fn gate_ab(
    candidate: &Path,
    baseline: Option<&Path>,
    rules: Option<&Path>,
    threshold: Option<f64>,
    alpha: Option<f64>,
    verbose: bool,
) -> anyhow::Result<Option<u8>> {
    let Some(run) = ab_run(candidate) else {
        return Ok(None);
    };
    if let Some(b) = baseline {
        return Err(exit::invalid(anyhow::anyhow!(
            "{} is an A/B folder: side a is its baseline; drop --baseline {}",
            candidate.display(),
            b.display()
        )));
    }
    let text = match rules {
        Some(p) => Some(std::fs::read_to_string(p).map_err(|e| {
            exit::invalid(anyhow::anyhow!(
                "{}: cannot read rules file: {e}",
                p.display()
            ))
        })?),
        None => None,
    };
    let s = settings(text.as_deref(), candidate, threshold, alpha).map_err(exit::invalid)?;
    // A rules file may hold only an `[ab]` table; then only the paired verdict applies.
    let gate_rules = match &text {
        Some(t) if has_gate_rules(t) => parse_rules_toml(t).map_err(|e| {
            exit::invalid(anyhow::anyhow!(
                "{}: {e}",
                rules.unwrap_or(Path::new("")).display()
            ))
        })?,
        _ => GateRules::default(),
    };
    let verdict = judge(&run, &s, 0x5eed);
    let report = evaluate(&gate_rules, None, &run, &StatOptions::default(), verbose);
    for line in &report.lines {
        println!("{line}");
    }
    for line in gate_lines(&verdict) {
        if verbose || !line.starts_with("PASS") {
            println!("{line}");
        }
    }
    let outcome: Outcome = report.outcome().max(verdict.outcome());
    println!(
        "gate: {outcome:?} (A/B: {} metrics over {} rounds; {} rule checks) -> exit {}",
        verdict.metrics.len(),
        verdict.rounds,
        report.checks,
        outcome.exit_code()
    );
    Ok(Some(outcome.exit_code()))
}
