//! The kinds of invalid row: the reasons in `summary.csv`'s `invalid_reason` whose cause and fix
//! are known (the advice under `harness run`'s table and in the book, `harness/src/report/advice.rs`).
//!
//! The code that makes a row invalid says which kind it is, as a value ([`Invalid`]); the row
//! carries the kinds beside its reason (`SummaryRow::invalid_kinds`) and `summary.csv` writes
//! them to its `invalid_kinds` column by their [`InvalidKind::name`]s, which `harness merge` reads
//! back. The reason's text is for people: no code reads a kind out of it.

/// A kind of invalid row whose cause and fix are known. Other reasons (a cluster that did not
/// start, an incomplete order count, ...) name their cause themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InvalidKind {
    /// `[validity] max_lag_p99_us`: the generator wrote its sends late.
    LagP99,
    /// `[validity] max_harness_cpu`: the generator's core was full.
    HarnessCpu,
    /// `[validity] min_achieved_ratio`: fewer sends than scheduled, unexplained.
    Achieved,
    /// A broker process exited before it was ready, died during the job or failed at shutdown.
    BrokerExited,
    /// The consumers did not consume every acknowledged message within `drain_timeout`.
    ConsumersBehind,
    /// A result file could not be written during the job.
    WritingResults,
    /// Ctrl-C stopped the job.
    Interrupted,
}

/// Separates the names in an `invalid_kinds` cell (`,` would need CSV quoting).
const SEPARATOR: char = ';';

impl InvalidKind {
    /// Every kind, most common first (the order of the advice).
    pub const ALL: [InvalidKind; 7] = [
        InvalidKind::LagP99,
        InvalidKind::HarnessCpu,
        InvalidKind::Achieved,
        InvalidKind::BrokerExited,
        InvalidKind::ConsumersBehind,
        InvalidKind::WritingResults,
        InvalidKind::Interrupted,
    ];

    /// The kind's name in `summary.csv`'s `invalid_kinds`: stable, since scripts and `harness
    /// merge` read it back (a renamed kind keeps its name here).
    pub const fn name(self) -> &'static str {
        match self {
            InvalidKind::LagP99 => "lag_p99",
            InvalidKind::HarnessCpu => "harness_cpu",
            InvalidKind::Achieved => "achieved",
            InvalidKind::BrokerExited => "broker_exited",
            InvalidKind::ConsumersBehind => "consumers_behind",
            InvalidKind::WritingResults => "writing_results",
            InvalidKind::Interrupted => "interrupted",
        }
    }

    /// The kind a name of [`InvalidKind::name`] stands for.
    pub fn from_name(name: &str) -> Option<InvalidKind> {
        InvalidKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The words the advice names the kind by (`NO: lag p99 (2 rows): ...`); the reasons of a
    /// kind written by one broker open with them, those of a cluster's member with its name.
    pub const fn title(self) -> &'static str {
        match self {
            InvalidKind::LagP99 => "lag p99",
            InvalidKind::HarnessCpu => "harness CPU",
            InvalidKind::Achieved => "achieved",
            InvalidKind::BrokerExited => "broker exited",
            InvalidKind::ConsumersBehind => "consumers did not catch up",
            InvalidKind::WritingResults => "writing the",
            InvalidKind::Interrupted => "interrupted",
        }
    }

    /// An `invalid_kinds` cell: the names, `;`-separated, in the order given.
    pub fn cell(kinds: &[InvalidKind]) -> String {
        kinds
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(&SEPARATOR.to_string())
    }

    /// The kinds of an `invalid_kinds` cell, each once, in order. A name this build does not
    /// know (written by a newer harness) is skipped: the row then gets no advice, as a reason
    /// of no kind.
    pub fn parse_cell(cell: &str) -> Vec<InvalidKind> {
        let mut kinds = Vec::new();
        InvalidKind::add_all(
            &mut kinds,
            cell.split(SEPARATOR)
                .filter_map(|n| InvalidKind::from_name(n.trim())),
        );
        kinds
    }

    /// Adds each of `more` to `kinds` unless it is there already (a merged row's kinds are the
    /// union of its shards').
    pub fn add_all(kinds: &mut Vec<InvalidKind>, more: impl IntoIterator<Item = InvalidKind>) {
        for k in more {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
    }
}

/// Why a row is not scored: the text for `invalid_reason` and its kind, when its cause and fix
/// are known (None: the text names its cause itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub kind: Option<InvalidKind>,
    pub reason: String,
}

impl Invalid {
    /// A reason of a known kind.
    pub fn new(kind: InvalidKind, reason: impl Into<String>) -> Invalid {
        Invalid {
            kind: Some(kind),
            reason: reason.into(),
        }
    }

    /// A reason of no kind (it names its cause itself).
    pub fn other(reason: impl Into<String>) -> Invalid {
        Invalid {
            kind: None,
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_as_its_kind_and_a_cell_keeps_the_order() {
        for k in InvalidKind::ALL {
            assert_eq!(InvalidKind::from_name(k.name()), Some(k));
            // A name is one snake_case word: no separator, no CSV quoting.
            assert!(
                k.name()
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{k:?}"
            );
        }
        let kinds = [InvalidKind::BrokerExited, InvalidKind::LagP99];
        assert_eq!(InvalidKind::cell(&kinds), "broker_exited;lag_p99");
        assert_eq!(InvalidKind::parse_cell("broker_exited;lag_p99"), kinds);
        assert_eq!(
            InvalidKind::parse_cell("lag_p99;from_the_future;lag_p99"),
            [InvalidKind::LagP99],
            "unknown names are skipped, repeats kept once"
        );
        assert!(InvalidKind::parse_cell("").is_empty());
        assert_eq!(InvalidKind::cell(&[]), "");
    }

    #[test]
    fn add_all_keeps_each_kind_once_in_first_seen_order() {
        let mut kinds = vec![InvalidKind::LagP99];
        InvalidKind::add_all(
            &mut kinds,
            [
                InvalidKind::BrokerExited,
                InvalidKind::LagP99,
                InvalidKind::BrokerExited,
            ],
        );
        assert_eq!(kinds, [InvalidKind::LagP99, InvalidKind::BrokerExited]);
    }
}
