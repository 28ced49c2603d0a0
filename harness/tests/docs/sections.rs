//! The book's `[slo]`, `[ab]` and `[cluster]` tables against the profile model (audit M8: the
//! key tables were checked by name only, and these three not at all).
//!
//! The model keeps no key list for these sections, so the keys it accepts are read from the
//! model itself: its strict serde pass (`deny_unknown_fields`) names them when it refuses one it
//! does not know. A field added to `RawAb`, `RawSlo` or `ClusterSpec` is therefore one the book
//! must document, with nothing here to update.

use std::path::Path;

use harness_model::profile::{AbSettings, Profile, AB_METRICS};

use super::{chapter, number_word, read, summary_chapters};

/// A profile section and the chapter whose ```toml block is its key table.
const SECTIONS: [(&str, &str); 3] = [
    ("slo", "capacity.md"),
    ("ab", "compare.md"),
    ("cluster", "clusters.md"),
];

fn profile(text: &str) -> Result<Profile, String> {
    let text = format!("name = \"docs\"\n{text}");
    Profile::parse(&text, "docs.toml", Path::new("docs.toml"), &[]).map_err(|e| e.to_string())
}

/// The section as the model holds it after parsing `text`, printed for comparison.
fn parsed(section: &str, text: &str) -> Result<String, String> {
    let p = profile(text)?;
    Ok(match section {
        "slo" => format!("{:?}", p.slo),
        "ab" => format!("{:?}", p.ab),
        "cluster" => format!("{:?}", p.cluster),
        other => unreachable!("no section {other}"),
    })
}

/// The keys the model accepts in `[section]`, from its refusal of an unknown one
/// (``unknown field `x`, expected one of `a`, `b` ``, or `` expected `a` or `b` ``).
fn accepted_keys(section: &str) -> Vec<String> {
    let probe = "not_a_key_of_any_section";
    let err = profile(&format!("[{section}]\n{probe} = 1\n"))
        .expect_err("the model accepted an unknown key");
    let expected = err
        .split_once(&format!("unknown field `{probe}`, expected"))
        .and_then(|(_, rest)| rest.lines().next())
        .unwrap_or_else(|| panic!("[{section}]: the refusal no longer names the keys: {err}"));
    let keys: Vec<String> = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    assert!(!keys.is_empty(), "[{section}]: no key in `{expected}`");
    keys
}

/// One `key = value  # comment` line of a book's table; a commented-out `# key = value` line
/// lists the key too (with no value), as compare.md does for a key whose default has no value.
struct Row {
    key: String,
    line: String,
    commented: bool,
    comment: String,
}

/// The rows of the `[section]` table of each ```toml block of `doc`.
fn toml_tables(doc: &str, section: &str) -> Vec<Vec<Row>> {
    let header = format!("[{section}]");
    let mut tables = Vec::new();
    for block in doc.split("```toml").skip(1) {
        let block = block.split("```").next().unwrap_or_default();
        let mut rows = None::<Vec<Row>>;
        for line in block.lines() {
            if line.starts_with('[') {
                tables.extend(rows.take());
                if line.starts_with(&header) {
                    rows = Some(Vec::new());
                }
                continue;
            }
            let Some(rows) = rows.as_mut() else { continue };
            let (commented, text) = match line.strip_prefix("# ") {
                Some(t) => (true, t),
                None => (false, line),
            };
            let Some((key, rest)) = text.split_once(" = ") else {
                continue;
            };
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                continue;
            }
            rows.push(Row {
                key: key.to_owned(),
                line: text.split(" # ").next().unwrap().trim_end().to_owned(),
                commented,
                comment: rest.split_once(" # ").map_or("", |(_, c)| c).to_owned(),
            });
        }
        tables.extend(rows);
    }
    tables
}

/// The default a comment or parenthesis states: `default 5`, `default: all four`, `0 by default`.
fn stated_default(text: &str) -> Option<String> {
    let (_, after) = text.split_once("default")?;
    let before = text.split_once(" by default").map(|(b, _)| b);
    let value = match before {
        Some(b) => b.rsplit(['(', ';']).next().unwrap_or(b),
        None => after
            .trim_start_matches(':')
            .split([')', ';'])
            .next()
            .unwrap(),
    };
    Some(value.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Whether the model's default for `key` is `default` as the book words it. A TOML value is
/// parsed into the section; the two defaults that have none are read from the model.
fn default_problem(section: &str, key: &str, default: &str, required: &str) -> Option<String> {
    let prose = match (section, key) {
        ("ab", "metrics") => Some((
            format!("all {}", number_word(AB_METRICS.len())),
            AbSettings::default().metrics == AB_METRICS,
        )),
        ("ab", "latency_duration") => Some((
            "[workload] duration".to_owned(),
            AbSettings::default().latency_duration.is_none(),
        )),
        _ => None,
    };
    if toml::from_str::<toml::Table>(&format!("v = {default}")).is_err() {
        return match prose {
            Some((said, true)) if said == default => None,
            _ => Some(format!(
                "[{section}] {key}: the stated default `{default}` is not the model's (write it \
                 as a TOML value)"
            )),
        };
    }
    let with = parsed(
        section,
        &format!("[{section}]\n{required}{key} = {default}\n"),
    );
    let without = parsed(section, &format!("[{section}]\n{required}"));
    match (with, without) {
        (Ok(a), Ok(b)) if a == b => None,
        (Ok(a), Ok(b)) => Some(format!(
            "[{section}] {key}: the book says the default is {default}, the model's is not \
             (with it: {a}; without: {b})"
        )),
        (Err(e), _) | (_, Err(e)) => Some(format!("[{section}] {key} = {default}: {e}")),
    }
}

/// For each of `[slo]`, `[ab]`, `[cluster]`: the first ```toml block of its chapter that has the
/// table is its key table. That table lists every key the model accepts and no other, parses as
/// the model reads it, and every default a row states (`# ... default X`) is the model's; a
/// required key states none. Every other such table in the book parses too, and every
/// `` `[section] key` `` in prose names an accepted key, with any default it states in
/// parentheses (`` `[ab] latency_fraction` (0.5) ``) the model's.
#[test]
fn the_slo_ab_and_cluster_tables_are_the_models() {
    let mut problems = Vec::new();
    let mut book: Vec<(String, String)> = summary_chapters()
        .into_iter()
        .map(|name| {
            let doc = chapter(&name);
            (name, doc)
        })
        .collect();
    book.push(("README.md".into(), read("README.md")));
    for (section, home) in SECTIONS {
        let accepted = accepted_keys(section);
        let tables = toml_tables(&chapter(home), section);
        let Some(table) = tables.first() else {
            problems.push(format!(
                "{home} has no ```toml block with a [{section}] table"
            ));
            continue;
        };
        let mut listed: Vec<&str> = table.iter().map(|r| r.key.as_str()).collect();
        listed.sort_unstable();
        let mut want: Vec<&str> = accepted.iter().map(String::as_str).collect();
        want.sort_unstable();
        if listed != want {
            problems.push(format!(
                "{home}'s [{section}] table lists {listed:?}; the model accepts {want:?}"
            ));
        }
        // A key is required when the table without it is refused for missing it.
        let body = |skip: &str| -> String {
            let rows = table.iter().filter(|r| !r.commented && r.key != skip);
            rows.map(|r| format!("{}\n", r.line)).collect()
        };
        let required: String = table
            .iter()
            .filter(|r| {
                profile(&format!("[{section}]\n{}", body(&r.key)))
                    .is_err_and(|e| e.contains(&format!("missing field `{}`", r.key)))
            })
            .map(|r| format!("{}\n", r.line))
            .collect();
        for row in table {
            let is_required = required.lines().any(|l| l == row.line);
            match (stated_default(&row.comment), is_required) {
                (Some(d), true) => problems.push(format!(
                    "{home}: [{section}] {} is required, yet its row states a default {d}",
                    row.key
                )),
                (None, false) => problems.push(format!(
                    "{home}: [{section}] {}'s row states no default (`# ... default X`)",
                    row.key
                )),
                (Some(d), false) => {
                    problems.extend(default_problem(section, &row.key, &d, &required))
                }
                (None, true) => {}
            }
        }
        for (name, doc) in &book {
            for t in toml_tables(doc, section) {
                let text: String = t
                    .iter()
                    .filter(|r| !r.commented)
                    .map(|r| &r.line)
                    .fold(format!("[{section}]\n"), |acc, l| acc + l + "\n");
                if let Err(e) = parsed(section, &text) {
                    problems.push(format!("{name}: its [{section}] block: {e}"));
                }
            }
            let pat = format!("`[{section}] ");
            for (i, _) in doc.match_indices(&pat) {
                let rest = &doc[i + pat.len()..];
                let key: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if !accepted.contains(&key) {
                    problems.push(format!("{name} names `[{section}] {key}`, not a key of it"));
                    continue;
                }
                let paren = rest
                    .split_once('`')
                    .and_then(|(_, after)| after.strip_prefix(" ("))
                    .and_then(|p| p.split([')', ';']).next())
                    .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "));
                let default = paren.and_then(|p| {
                    stated_default(&p).or_else(|| {
                        toml::from_str::<toml::Table>(&format!("v = {p}"))
                            .is_ok()
                            .then_some(p)
                    })
                });
                if let Some(d) = default {
                    let p = default_problem(section, &key, &d, &required);
                    problems.extend(p.map(|p| format!("{name}: {p}")));
                }
            }
        }
    }
    problems.sort();
    problems.dedup();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// compare.md's `[ab]` block says it has "the values of profiles/perf-gate.toml
/// (repetitions = N)": it reads as that profile's `[ab]`, and N is the profile's repetitions.
#[test]
fn the_books_ab_block_is_the_perf_gate_profiles() {
    let doc = chapter("compare.md");
    let table = toml_tables(&doc, "ab")
        .into_iter()
        .next()
        .expect("[ab] block");
    let text: String = table
        .iter()
        .filter(|r| !r.commented)
        .map(|r| format!("{}\n", r.line))
        .collect();
    let shown = profile(&format!("[ab]\n{text}")).unwrap().ab;
    let gate = Profile::load(&super::root().join("profiles/perf-gate.toml"), &[]).unwrap();
    assert_eq!(
        shown, gate.ab,
        "compare.md's [ab] block differs from profiles/perf-gate.toml's"
    );
    let said = doc
        .split_once("the values of profiles/perf-gate.toml (repetitions = ")
        .and_then(|(_, r)| r.split_once(')'))
        .and_then(|(n, _)| n.parse::<u32>().ok())
        .expect("compare.md: `the values of profiles/perf-gate.toml (repetitions = N)`");
    assert_eq!(
        said, gate.repetitions,
        "compare.md's [ab] block: perf-gate.toml's repetitions"
    );
}
