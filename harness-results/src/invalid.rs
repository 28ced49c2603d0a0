//! The kinds of invalid row: the reasons in `summary.csv`'s `invalid_reason` whose cause and fix
//! are known (the advice under `harness run`'s table and in the book, `harness/src/report/advice.rs`).
//!
//! One list: the job writes each reason of a kind starting with [`InvalidKind::starts`], and
//! [`InvalidKind::in_reason`] reads the kinds back from a reason's text, as written by this run or
//! by the shards of a merged one. No other code looks at the start of a reason.

/// A kind of invalid row whose cause and fix are known. Other reasons (a cluster that did not
/// start, an incomplete order count, ...) name their cause themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InvalidKind {
    /// `[validity] max_lag_p99_us`: the generator wrote its sends late.
    LagP99,
    /// `[validity] max_harness_cpu`: the generator's core was full.
    HarnessCpu,
    /// `[validity] min_achieved_ratio`: fewer sends than scheduled, unexplained.
    Achieved,
    /// The broker process died or failed at shutdown during the job.
    BrokerExited,
    /// The consumers did not consume every acknowledged message within `drain_timeout`.
    ConsumersBehind,
    /// A result file could not be written during the job.
    WritingResults,
    /// Ctrl-C stopped the job.
    Interrupted,
}

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

    /// How every reason of this kind starts in `invalid_reason` (and after `NO: ` in the table).
    pub const fn starts(self) -> &'static str {
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

    /// The kind a reason opens with, if any.
    fn of_text(text: &str) -> Option<InvalidKind> {
        InvalidKind::ALL
            .into_iter()
            .find(|k| text.starts_with(k.starts()))
    }

    /// The kinds named by an `invalid_reason`, each once, in the order they appear. A merged
    /// folder's reason names each failed shard (`s0: lag p99 ...; s2: ...`), so every part is
    /// looked at: the part itself, or what follows its first `: ` (a shard's folder name, or
    /// a cluster member's: `broker-0: broker exited before it was ready`).
    pub fn in_reason(reason: &str) -> Vec<InvalidKind> {
        let mut found = Vec::new();
        for part in reason.split("; ") {
            let kind = InvalidKind::of_text(part).or_else(|| {
                part.split_once(": ")
                    .and_then(|(_, rest)| InvalidKind::of_text(rest))
            });
            if let Some(k) = kind {
                if !found.contains(&k) {
                    found.push(k);
                }
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_names_its_kinds_and_a_merged_one_every_shard_s() {
        assert_eq!(
            InvalidKind::in_reason("lag p99 5000 µs > 1000 µs (generator late)"),
            [InvalidKind::LagP99]
        );
        assert_eq!(
            InvalidKind::in_reason(
                "s0: lag p99 3 µs > 1 µs; s2: broker exited mid-cell (signal 9); see broker.log; s3: lag p99 4 µs > 1 µs"
            ),
            [InvalidKind::LagP99, InvalidKind::BrokerExited]
        );
        assert!(InvalidKind::in_reason("something new").is_empty());
        assert!(InvalidKind::in_reason("").is_empty());
    }

    #[test]
    fn no_kind_starts_with_another_s_text() {
        for a in InvalidKind::ALL {
            for b in InvalidKind::ALL.into_iter().filter(|&b| b != a) {
                assert!(!a.starts().starts_with(b.starts()), "{a:?} / {b:?}");
            }
        }
    }
}
