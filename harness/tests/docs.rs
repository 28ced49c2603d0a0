//! The docs are a contract: every CSV column, exit code, recipe, profile key and shipped profile
//! the code has is documented in the book (`docs/src/`, chapters listed in `SUMMARY.md`;
//! `results/README.md` is its columns chapter), so adding one without its documentation fails
//! here. The README is the front door: what it keeps of those tables must agree with the code too.

use std::path::{Path, PathBuf};

use harness::report::{summary_header, TIMESERIES_COLUMNS};

#[path = "docs/counts.rs"]
mod counts;
#[path = "docs/sections.rs"]
mod sections;

const EXIT_CODES: [u8; 7] = [
    harness::exit::SUCCESS,
    harness::exit::VERDICT_NO,
    harness::exit::INCONCLUSIVE,
    harness::exit::INVALID_INPUT,
    harness::exit::RUN_FAILED,
    harness::exit::USAGE,
    harness::exit::INTERRUPTED,
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// One chapter of the book, by file name under docs/src/.
fn chapter(name: &str) -> String {
    read(&format!("docs/src/{name}"))
}

/// `n` as the book writes a small count in prose ("the seven scenarios").
fn number_word(n: usize) -> String {
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    WORDS
        .get(n)
        .map_or_else(|| n.to_string(), |w| (*w).to_owned())
}

/// The chapter files SUMMARY.md links to, in order.
fn summary_chapters() -> Vec<String> {
    let summary = chapter("SUMMARY.md");
    summary
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')').map(|(target, _)| target.to_string()))
        .collect()
}

/// The codes of a Markdown table's rows that start with a number (`| 3 | ...`).
fn exit_code_rows(doc: &str) -> Vec<u8> {
    doc.lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split_once(" |"))
        .filter_map(|(first, _)| first.trim().parse().ok())
        .collect()
}

#[test]
fn the_summary_lists_every_chapter_and_every_listed_chapter_exists() {
    let listed = summary_chapters();
    assert!(!listed.is_empty(), "SUMMARY.md links no chapter");
    for name in &listed {
        assert!(
            root().join("docs/src").join(name).is_file(),
            "SUMMARY.md links {name}, which does not exist"
        );
    }
    for entry in std::fs::read_dir(root().join("docs/src")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") && name != "SUMMARY.md" {
            assert!(
                listed.contains(&name),
                "docs/src/{name} is not in SUMMARY.md, so the book does not show it"
            );
        }
    }
}

#[test]
fn results_readme_lists_every_column() {
    let doc = read("results/README.md");
    assert!(
        chapter("columns.md").contains("{{#include ../../results/README.md}}"),
        "the book's columns chapter must include results/README.md"
    );
    // The timeseries list is one backticked block, in file order.
    let start = doc.find("## timeseries.csv columns").expect("section");
    let block = doc[start..].split('`').nth(1).expect("column list");
    let listed: Vec<&str> = block.split(',').map(str::trim).collect();
    assert_eq!(
        listed,
        TIMESERIES_COLUMNS.to_vec(),
        "results/README.md's timeseries.csv list differs from the columns written"
    );
    for col in summary_header(&[]) {
        assert!(
            doc.contains(&format!("`{col}`")),
            "summary.csv column `{col}` is not described in results/README.md"
        );
    }
}

#[test]
fn the_exit_code_table_has_one_row_per_code() {
    let doc = chapter("compare.md");
    let mut rows = exit_code_rows(&doc);
    rows.sort_unstable();
    assert_eq!(
        rows,
        EXIT_CODES.to_vec(),
        "docs/src/compare.md's exit-code table differs from harness/src/exit.rs"
    );
    // The README's verdict table may keep a few codes; each must be a real one.
    for code in exit_code_rows(&read("README.md")) {
        assert!(
            EXIT_CODES.contains(&code),
            "README.md names exit code {code}, which harness does not have"
        );
    }
}

/// The meaning column of a table row `| code | meaning | ...`, by code.
fn exit_code_meanings(doc: &str) -> Vec<(u8, String)> {
    doc.lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| {
            let mut cells = l.split(" | ");
            let code = cells.next()?.trim().parse().ok()?;
            Some((code, cells.next()?.trim_end_matches(" |").to_owned()))
        })
        .collect()
}

/// Numbers are not enough (an audit found code 3 documented as "nothing was run" while `gate`
/// gave it for a run that ran): every row of both tables says what `harness::exit::MEANINGS`
/// says the code means, its name first and each of its cases.
#[test]
fn the_exit_code_tables_say_what_each_code_means() {
    for doc in ["README.md", "docs/src/compare.md"] {
        let rows = exit_code_meanings(&read(doc));
        assert!(rows.len() >= 5, "{doc}: no exit-code table found");
        for (code, meaning) in rows {
            let (_, name, cases) = harness::exit::MEANINGS
                .iter()
                .find(|(c, _, _)| *c == code)
                .unwrap_or_else(|| panic!("{doc}: exit code {code} is not in exit::MEANINGS"));
            let lower = meaning.to_lowercase();
            assert!(
                lower.starts_with(name),
                "{doc}: exit code {code} should read `{name}: ...`, not `{meaning}`"
            );
            for case in *cases {
                assert!(
                    lower.contains(&case.to_lowercase()),
                    "{doc}: exit code {code}'s meaning does not say `{case}` (harness/src/exit.rs MEANINGS): {meaning}"
                );
            }
        }
    }
}

#[test]
fn the_book_documents_every_recipe_profile_and_profile_key() {
    let flow = chapter("flow-control.md");
    for r in harness::recipe::RECIPES {
        assert!(
            flow.contains(&format!("| `{}` |", r.name)),
            "recipe `{}` is missing from docs/src/flow-control.md's recipe table",
            r.name
        );
    }
    let profiles = chapter("profiles.md");
    for entry in std::fs::read_dir(root().join("profiles")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".toml") {
            assert!(
                profiles.contains(&format!("[`{name}`](../../profiles/{name})")),
                "profiles/{name} is missing from docs/src/profiles.md's shipped-profiles table"
            );
        }
    }
    for key in harness_model::profile::WORKLOAD_KEYS {
        assert!(
            profiles.contains(&format!("| `{key}` |")),
            "[workload] key `{key}` is missing from docs/src/profiles.md's key table"
        );
    }
    for key in harness_model::profile::AUTH_KEYS {
        assert!(
            profiles.contains(&format!("| `{key}` |")),
            "[auth] key `{key}` is missing from docs/src/profiles.md's [auth] table"
        );
    }
    for var in [
        harness::auth::ENV_ACCESS_KEY,
        harness::auth::ENV_SECRET_KEY,
        harness::auth::ENV_SECURITY_TOKEN,
    ] {
        assert!(
            profiles.contains(&format!("`{var}`")),
            "{var} is missing from docs/src/profiles.md's [auth] table"
        );
    }
    let consumers = chapter("consumers.md");
    for key in harness_model::profile::CONSUMER_KEYS {
        assert!(
            consumers.contains(&format!("`{key}`")),
            "[consumer] key `{key}` is missing from docs/src/consumers.md's key table"
        );
    }
    let faults = chapter("faults.md");
    for key in harness_model::profile::FAULT_KEYS {
        assert!(
            faults.contains(&format!("\n{key} = ")),
            "[fault] key `{key}` is missing from docs/src/faults.md's [fault] example"
        );
    }
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines < 300,
        "README.md has {lines} lines; the manual belongs in docs/src/"
    );
    // Every `make X` the README offers (in code, not in prose) is a Makefile target.
    let makefile = read("Makefile");
    let mut fenced = false;
    let mut offers: Vec<&str> = Vec::new();
    for line in readme.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if fenced {
            offers.extend(line.strip_prefix("make "));
        } else {
            offers.extend(line.split("`make ").skip(1));
        }
    }
    for rest in offers {
        let target: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '-')
            .collect();
        assert!(
            makefile.contains(&format!("\n{target}:")),
            "README.md offers `make {target}`, which the Makefile does not have"
        );
    }
    // Every profile it links exists.
    for (i, _) in readme.match_indices("](profiles/") {
        let path: String = readme[i + 2..].chars().take_while(|c| *c != ')').collect();
        assert!(
            root().join(&path).is_file(),
            "README.md links {path}, which does not exist"
        );
    }
}

#[test]
fn the_books_invalid_reason_table_is_the_one_the_footer_uses() {
    let doc = chapter("reading-results.md");
    let begin = "<!-- invalid-reasons:begin -->\n";
    let start = doc.find(begin).expect("invalid-reasons:begin marker") + begin.len();
    let stop = doc
        .find("<!-- invalid-reasons:end -->")
        .expect("invalid-reasons:end marker");
    assert_eq!(
        doc[start..stop],
        harness::report::advice::markdown(),
        "docs/src/reading-results.md's table of invalid reasons differs from \
         harness/src/report/advice.rs; paste this between the invalid-reasons markers"
    );
}

/// measured.md's "reproduce with" column names only things that exist: every `make X` is a
/// Makefile target, every `scripts/...` and `profiles/...` path a file, every `--test NAME` /
/// `--bench NAME` of `-p CRATE` a file of that crate, every `harness-at.sh REV` a revision git
/// knows. (The audit found `OLD=` and `<harness built at X>`, which no script reads.)
#[test]
fn measured_md_names_only_commands_that_exist() {
    let doc = read("docs/src/measured.md");
    let makefile = read("Makefile");
    let word = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || "-_./~".contains(*c))
            .collect()
    };
    let mut problems = Vec::new();
    for (i, _) in doc.match_indices("make ") {
        // Only `make X` inside code spans: prose says "make" too.
        let code_before = doc[..i].matches('`').count() % 2 == 1;
        let target = word(&doc[i + 5..]);
        if code_before && !target.is_empty() && !makefile.contains(&format!("\n{target}:")) {
            problems.push(format!("`make {target}`: no such Makefile target"));
        }
    }
    for prefix in ["scripts/", "profiles/"] {
        for (i, _) in doc.match_indices(prefix) {
            let path = format!("{prefix}{}", word(&doc[i + prefix.len()..]));
            let path = path.trim_end_matches('.');
            if !root().join(path).exists() {
                problems.push(format!("{path}: no such file"));
            }
        }
    }
    for (i, _) in doc.match_indices("cargo ") {
        let rest: String = doc[i..].chars().take_while(|c| *c != '`').collect();
        let krate = rest
            .split_once("-p ")
            .map(|(_, r)| word(r))
            .unwrap_or_default();
        for (flag, folder) in [("--test ", "tests"), ("--bench ", "benches")] {
            if let Some((_, r)) = rest.split_once(flag) {
                let name = word(r);
                let file = root().join(&krate).join(folder).join(format!("{name}.rs"));
                if !file.is_file() {
                    problems.push(format!("{rest}: no {}", file.display()));
                }
            }
        }
    }
    for bad in ["OLD=", "harness built at", "<older harness>"] {
        if doc.contains(bad) {
            problems.push(format!("`{bad}`: no script reads it"));
        }
    }
    for (i, _) in doc.match_indices("harness-at.sh ") {
        let rev = word(&doc[i + 14..]);
        let known = std::process::Command::new("git")
            .args([
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{rev}^{{commit}}"),
            ])
            .current_dir(root())
            .output()
            .is_ok_and(|o| o.status.success());
        // A shallow clone lacks old revisions: only a full history can be checked.
        let shallow = root().join(".git/shallow").exists();
        if !known && !shallow && rev != "REV" {
            problems.push(format!("harness-at.sh {rev}: git knows no such revision"));
        }
    }
    problems.sort();
    problems.dedup();
    assert!(problems.is_empty(), "measured.md:\n{}", problems.join("\n"));
}

/// A count written in prose is checked like a table (the audit found "8 of them" for 9): the
/// number of browser tests getting-started.md says are ignored without Chromium is the number
/// of tests in harness/tests/ marked so.
#[test]
fn the_browser_test_count_in_the_book_is_the_files() {
    let marked: usize = std::fs::read_dir(root().join("harness/tests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                // (split, so that this file does not count itself)
                .matches(concat!("#[cfg_attr(", "no_chromium, ignore"))
                .count()
        })
        .sum();
    let doc = chapter("getting-started.md");
    let said = doc
        .split_once("ignored (")
        .and_then(|(_, rest)| rest.split_once(" of them)"))
        .and_then(|(n, _)| n.trim().parse::<usize>().ok())
        .expect("getting-started.md says `ignored (N of them)`");
    assert_eq!(
        said, marked,
        "getting-started.md counts {said} browser tests, html_report.rs has {marked}"
    );
}

/// The defaults the book shows are the code's (the audit found the key tables checked by name
/// only): capacity.md's `[knee]` block, which says "defaults shown", parses to `Knee::default()`,
/// and profiles.md's `[validity]` rows give `Validity::default()`.
#[test]
fn the_knee_and_validity_defaults_in_the_book_are_the_codes() {
    use harness_model::profile::{Knee, Validity};
    let doc = chapter("capacity.md");
    let block = doc
        .split("```toml")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("capacity.md opens with a toml block");
    let knee = block
        .split("\n[")
        .find(|t| t.starts_with("knee]"))
        .map(|t| t.split_once('\n').unwrap().1)
        .expect("capacity.md's block has a [knee] table");
    let shown: Knee = toml::from_str(knee).unwrap_or_else(|e| panic!("capacity.md [knee]: {e}"));
    assert_eq!(shown, Knee::default(), "capacity.md's [knee] defaults");

    let rows: String = chapter("profiles.md")
        .lines()
        .filter_map(|l| l.strip_prefix("| `validity."))
        .map(|l| {
            let (key, rest) = l.split_once("` | ").unwrap();
            format!("{key} = {}\n", rest.split(" |").next().unwrap())
        })
        .collect();
    assert_eq!(
        rows.lines().count(),
        3,
        "profiles.md's [validity] rows:\n{rows}"
    );
    let shown: Validity = toml::from_str(&rows).unwrap_or_else(|e| panic!("{e}:\n{rows}"));
    assert_eq!(
        shown,
        Validity::default(),
        "profiles.md's [validity] defaults"
    );
}

#[test]
fn the_cluster_size_limit_in_the_book_is_the_codes() {
    let max = harness_model::profile::MAX_BROKERS;
    let doc = chapter("clusters.md");
    assert!(
        doc.contains(&format!("`brokers` is 1 to {max}:")),
        "clusters.md must state the limit of {max} brokers a cell"
    );
}

/// The chapters that make claims about how RocketMQ behaves which a fidelity row measures
/// (issue 46: flow control, consumers, replication, retention): each row must be linked from one.
const FIDELITY_CHAPTERS: [&str; 8] = [
    "flow-control.md",
    "page-cache.md",
    "order.md",
    "consumers.md",
    "replication.md",
    "faults.md",
    "broker.md",
    "profiles.md",
];

/// The row ids that `fidelity.md#row-X` links in a chapter name, in order.
fn fidelity_row_links(doc: &str) -> Vec<String> {
    doc.match_indices("fidelity.md#row-")
        .map(|(i, pat)| {
            doc[i + pat.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect()
        })
        .collect()
}

/// A claim about RocketMQ that a fidelity row measured links that row (`fidelity.md#row-4a`), so
/// a reader can see whether the model agreed with Apache on it. The links must land: every row of
/// profiles/fidelity/rows.toml has its anchor in fidelity.md's "The rows" (and no anchor names a
/// row the file does not have), every `#row-X` link in the book names a row, and every row is
/// linked from at least one of the chapters that make those claims.
#[test]
fn every_fidelity_row_has_an_anchor_and_a_chapter_that_links_it() {
    let rows =
        harness_analysis::fidelity::RowsFile::load(&root().join("profiles/fidelity/rows.toml"))
            .unwrap_or_else(|e| panic!("profiles/fidelity/rows.toml: {e}"));
    let ids: Vec<String> = rows.row.iter().map(|r| r.id.clone()).collect();
    assert!(!ids.is_empty(), "profiles/fidelity/rows.toml has no row");
    let mut problems = Vec::new();

    let fidelity = chapter("fidelity.md");
    let anchors: Vec<String> = fidelity
        .match_indices("<a id=\"row-")
        .map(|(i, pat)| {
            fidelity[i + pat.len()..]
                .chars()
                .take_while(|c| *c != '"')
                .collect()
        })
        .collect();
    for id in &ids {
        match anchors.iter().filter(|a| *a == id).count() {
            1 => {}
            0 => problems.push(format!(
                "row {id} has no `<a id=\"row-{id}\"></a>` in fidelity.md's table of rows"
            )),
            n => problems.push(format!("fidelity.md has {n} anchors for row {id}")),
        }
    }
    for anchor in &anchors {
        if !ids.contains(anchor) {
            problems.push(format!(
                "fidelity.md has an anchor for row {anchor}, which rows.toml does not have"
            ));
        }
    }

    for entry in std::fs::read_dir(root().join("docs/src")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !name.ends_with(".md") {
            continue;
        }
        for id in fidelity_row_links(&chapter(&name)) {
            if !ids.contains(&id) {
                problems.push(format!(
                    "{name} links fidelity.md#row-{id}, a row rows.toml does not have"
                ));
            }
        }
    }

    let linked: Vec<String> = FIDELITY_CHAPTERS
        .iter()
        .flat_map(|name| fidelity_row_links(&chapter(name)))
        .collect();
    for id in &ids {
        if !linked.contains(id) {
            problems.push(format!(
                "fidelity row {id} is linked from none of {FIDELITY_CHAPTERS:?}: link it \
                 (`[fidelity row {id}](fidelity.md#row-{id})`) where the chapter makes the claim \
                 it measures"
            ));
        }
    }
    problems.dedup();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
