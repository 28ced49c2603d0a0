//! Counts written in prose that name a set the repository defines (audit M8: "8 of them" for 9).
//! Measured results ("5 of 5 runs passed") are left alone: they say what a run saw.

use harness_model::profile::AB_METRICS;

use super::{chapter, number_word, read, root};

/// The entries of a Python dict literal `NAME = {` ... `}` in interop/scenarios.py: each entry
/// line's first quoted string, and the quoted keys of an inner dict on that line.
fn python_dict(source: &str, name: &str) -> Vec<(String, Vec<String>)> {
    let start = source
        .find(&format!("\n{name} = {{\n"))
        .unwrap_or_else(|| panic!("interop/scenarios.py defines no `{name} = {{`"));
    let body = &source[start..];
    let body = &body[..body.find("\n}").expect("the dict's closing brace")];
    body.lines()
        .skip(2)
        .filter_map(|l| l.trim_start().strip_prefix('"'))
        .map(|l| {
            let (key, rest) = l.split_once('"').unwrap();
            // In `{"retry": "why"}` a key is a quoted string that a colon follows.
            let parts: Vec<&str> = rest.split('"').collect();
            let inner = parts
                .windows(2)
                .skip(1)
                .step_by(2)
                .filter(|w| w[1].starts_with(':'))
                .map(|w| w[0].to_owned())
                .collect();
            (key.to_owned(), inner)
        })
        .collect()
}

/// interop.md against interop/scenarios.py: each scenario table has one row per scenario, in
/// the file's order; "the seven scenarios" is their number; the closing line it quotes,
/// `[cpp] N of N scenarios passed; NOT RUN (known client failure): X`, has the C++ client's
/// full run (the scenarios less its `KNOWN_FAILING`) and the one it leaves out; "each client now
/// runs N of the M" holds for every client that leaves one out.
#[test]
fn the_interop_scenario_counts_are_the_scripts() {
    let source = read("interop/scenarios.py");
    let scenarios: Vec<String> = python_dict(&source, "SCENARIOS")
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let skipped = python_dict(&source, "KNOWN_FAILING");
    assert!(scenarios.len() >= 5, "SCENARIOS: {scenarios:?}");
    assert!(!skipped.is_empty(), "KNOWN_FAILING: {skipped:?}");
    let doc = chapter("interop.md");
    // Prose wraps anywhere: read it as one line.
    let flat = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut problems = Vec::new();

    let mut tables = 0;
    for table in doc.split("\n| scenario |").skip(1) {
        tables += 1;
        let rows: Vec<&str> = table
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once('`').map(|(name, _)| name))
            .collect();
        if rows != scenarios {
            problems.push(format!(
                "the scenario table before `{}` has rows {rows:?}; scenarios.py has {scenarios:?}",
                table.lines().next().unwrap_or_default()
            ));
        }
    }
    if tables == 0 {
        problems.push("interop.md has no `| scenario |` table".into());
    }

    let all = number_word(scenarios.len());
    for (i, _) in flat.match_indices(" scenarios with") {
        let before = flat[..i].rsplit(' ').next().unwrap_or_default();
        let is_count = before.parse::<usize>().is_ok() || (0..13).any(|n| number_word(n) == before);
        if is_count && before != all {
            problems.push(format!(
                "interop.md says `the {before} scenarios with`; scenarios.py has {all}"
            ));
        }
    }

    let cpp: Vec<String> = skipped
        .iter()
        .find(|(client, _)| client == "cpp")
        .map(|(_, names)| names.clone())
        .expect("KNOWN_FAILING has the C++ client");
    let runs = scenarios.len() - cpp.len();
    let closing = format!("`[cpp] {runs} of {runs} scenarios passed; NOT RUN (known");
    if !flat.contains(&closing) {
        problems.push(format!(
            "interop.md should quote the closing line {closing}..."
        ));
    }
    let named = flat
        .split_once("[cpp] NOT RUN (known client failure) ")
        .and_then(|(_, r)| r.split(':').next());
    if named.is_none_or(|n| cpp != [n]) {
        problems.push(format!(
            "interop.md's `[cpp] NOT RUN (known client failure) X` names {named:?}; KNOWN_FAILING has {cpp:?}"
        ));
    }

    let (n, m) = flat
        .split_once(" now runs ")
        .and_then(|(_, r)| r.split_once(" of the "))
        .and_then(|(n, r)| {
            Some((
                n.parse::<usize>().ok()?,
                r.split(|c: char| !c.is_ascii_digit())
                    .next()?
                    .parse::<usize>()
                    .ok()?,
            ))
        })
        .expect("interop.md: `each client now runs N of the M`");
    if m != scenarios.len() {
        problems.push(format!(
            "interop.md: `runs {n} of the {m}`: there are {}",
            scenarios.len()
        ));
    }
    for (client, names) in &skipped {
        if n + names.len() != scenarios.len() {
            problems.push(format!(
                "interop.md: `each client now runs {n} of the {m}`: {client} runs {}",
                scenarios.len() - names.len()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// compare.md: "`harness ab` measures four metrics" is `AB_METRICS`; fidelity.md: "Over all 14
/// rows" is profiles/fidelity/rows.toml's rows.
#[test]
fn the_ab_metric_and_fidelity_row_counts_are_the_codes() {
    let metrics = format!(
        "`harness ab` measures {} metrics",
        number_word(AB_METRICS.len())
    );
    assert!(
        chapter("compare.md").contains(&metrics),
        "compare.md should say {metrics} ({AB_METRICS:?})"
    );
    let rows =
        harness_analysis::fidelity::RowsFile::load(&root().join("profiles/fidelity/rows.toml"))
            .unwrap_or_else(|e| panic!("profiles/fidelity/rows.toml: {e}"));
    let said = chapter("fidelity.md")
        .split_once("Over all ")
        .and_then(|(_, r)| r.split_once(" rows"))
        .and_then(|(n, _)| n.parse::<usize>().ok())
        .expect("fidelity.md: `Over all N rows`");
    assert_eq!(
        said,
        rows.row.len(),
        "fidelity.md's `Over all {said} rows`: rows.toml has {}",
        rows.row.len()
    );
}
