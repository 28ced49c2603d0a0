//! `harness fidelity`: the model against the real thing. Rows written before any run
//! (`profiles/fidelity/rows.toml`) name a profile whose matrix runs broker-under-test and Apache
//! RocketMQ side by side (`"broker.kind" = ["in-tree", "apache"]`), the figures read from its
//! result folder, the relation expected between the two brokers' figures and the tolerance.
//! This module computes each figure per broker and release, judges agree / differ, and renders
//! the table; running the profiles is `harness`'s job.
//!
//! * rows.rs   — the row file: rows, checks, relations, validated
//! * figure.rs — one check on one result folder: both brokers' figures and the verdict
//! * table.rs  — every row's outcome as Markdown and CSV

mod figure;
mod rows;
mod table;

pub use figure::{broker_values, evaluate_check, Figure, Judged, Verdict};
pub use rows::{Aggregate, Brokers, Check, RateFrom, Relation, RowSpec, RowsError, RowsFile, Side};
pub use table::{
    apache_release, counts, load_row, render_csv, render_markdown, table_for, RowOutcome,
    RowStatus, TableLine,
};
