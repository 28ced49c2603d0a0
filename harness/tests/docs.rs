//! The READMEs are a contract: every CSV column, exit code, recipe and shipped profile the code
//! has is documented, so adding one without its documentation fails here.

use std::path::Path;

use harness::report::{summary_header, TIMESERIES_COLUMNS};

fn read(rel: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn results_readme_lists_every_column() {
    let doc = read("results/README.md");
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
fn readme_documents_every_exit_code_recipe_and_profile() {
    let doc = read("README.md");
    for code in [
        harness::exit::SUCCESS,
        harness::exit::VERDICT_NO,
        harness::exit::INCONCLUSIVE,
        harness::exit::INVALID_INPUT,
        harness::exit::RUN_FAILED,
        harness::exit::USAGE,
        harness::exit::INTERRUPTED,
    ] {
        assert!(
            doc.contains(&format!("\n| {code} | ")),
            "exit code {code} is missing from the README's exit-code table"
        );
    }
    for r in harness::recipe::RECIPES {
        assert!(
            doc.contains(&format!("| `{}` |", r.name)),
            "recipe `{}` is missing from the README's recipe table",
            r.name
        );
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for entry in std::fs::read_dir(root.join("profiles")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".toml") {
            assert!(
                doc.contains(&format!("[`{name}`](profiles/{name})")),
                "profiles/{name} is missing from the README's shipped-profiles table"
            );
        }
    }
}
