//! What an invalid row's reason means and what to do about it: the one table behind the footer of
//! `harness run`'s table and the book's table in docs/src/reading-results.md (a test keeps the
//! two equal), keyed on [`InvalidKind`] (harness-results), the one list of the kinds and of how
//! their reasons start. The reasons are written by `runner/validity.rs` (the `[validity]`
//! limits), `runner/job.rs` and `runner/sampler.rs` (a broker that exited, a result file that
//! could not be written, Ctrl-C), and `consumer/job_part.rs` (consumers that did not drain),
//! each starting with its kind's [`InvalidKind::starts`].

use harness_results::InvalidKind;

/// One kind of invalid row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advice {
    pub kind: InvalidKind,
    /// The likely cause, and why the row cannot be trusted.
    pub cause: &'static str,
    /// What to do about it.
    pub fix: &'static str,
}

/// The cause and fix of each kind (a new kind does not compile without its advice).
pub const fn advice(kind: InvalidKind) -> Advice {
    match kind {
        InvalidKind::LagP99 => Advice {
            kind,
            cause: "the generator wrote its sends later than scheduled: other work on the machine took its core, or the broker's core was saturated and TCP back-pressure blocked writes; the latency measured includes the generator's own delay",
            fix: "pin broker and generator (`pin = true`, 2 cores or more) on a machine without other work, lower `workload.rate`, or accept a later generator with `--set validity.max_lag_p99_us=5000` (latency then includes up to that much of the generator's delay)",
        },
        InvalidKind::HarnessCpu => Advice {
            kind,
            cause: "the generator used nearly all of its core, so its pacing and timestamps were late or coarse",
            fix: "pin it (`pin = true`), lower `workload.rate` or `connections`, spread the load over shards (`--shard I/N`), or relax `validity.max_harness_cpu`",
        },
        InvalidKind::Achieved => Advice {
            kind,
            cause: "fewer sends went out than scheduled and no timeout, drop or connection error explains it: the generator could not keep the rate",
            fix: "lower `workload.rate`, raise `max_in_flight` or `connections`, or spread the load over shards (`--shard I/N`); `make floor` shows this machine's ceiling",
        },
        InvalidKind::BrokerExited => Advice {
            kind,
            cause: "the broker process died or failed at shutdown during the job, so the row measured a broker that was not there for all of it",
            fix: "read `broker.log` in the job's folder (its last lines name the cause: a panic, an out-of-memory kill, a full disk)",
        },
        InvalidKind::ConsumersBehind => Advice {
            kind,
            cause: "after the producers stopped, the consumers had not consumed every acknowledged message within `drain_timeout`, so lost, duplicated and end-to-end figures are incomplete",
            fix: "raise `consumer.drain_timeout`, or consume faster (`consume_threads`, `instances`, a shorter `processing_time`)",
        },
        InvalidKind::WritingResults => Advice {
            kind,
            cause: "a result file could not be written during the job (`timeseries.csv`, or a histogram of `latency.hlog`): the disk is full, the folder went away, or a histogram could not be serialized; the job's figures are incomplete",
            fix: "free disk space or choose another `--out`; a histogram that cannot be serialized is a bug: report it with the reason",
        },
        InvalidKind::Interrupted => Advice {
            kind,
            cause: "Ctrl-C stopped the job before its measured window ended",
            fix: "run the profile again; the finished cells were kept",
        },
    }
}

/// Every kind's advice, most common first.
pub const ADVICE: [Advice; InvalidKind::ALL.len()] = {
    let mut all = [advice(InvalidKind::LagP99); InvalidKind::ALL.len()];
    let mut i = 0;
    while i < all.len() {
        all[i] = advice(InvalidKind::ALL[i]);
        i += 1;
    }
    all
};

/// The advice for an invalid row's reason, one per kind it names (a merged folder's reason
/// names each failed shard's).
pub fn advice_for(reason: &str) -> Vec<&'static Advice> {
    InvalidKind::in_reason(reason)
        .into_iter()
        .map(|k| &ADVICE[InvalidKind::ALL.iter().position(|&a| a == k).unwrap_or(0)])
        .collect()
}

/// The footer under a table with invalid rows: each kind once, its cause and its fix.
pub fn footer<'a>(reasons: impl IntoIterator<Item = &'a str>) -> String {
    let mut kinds: Vec<(&'static Advice, usize)> = Vec::new();
    let mut unknown = 0;
    for reason in reasons {
        let found = advice_for(reason);
        if found.is_empty() {
            unknown += 1;
        }
        for a in found {
            match kinds.iter_mut().find(|(k, _)| *k == a) {
                Some((_, n)) => *n += 1,
                None => kinds.push((a, 1)),
            }
        }
    }
    let mut out = String::new();
    for (a, n) in kinds {
        let rows = if n == 1 { "row" } else { "rows" };
        out.push_str(&format!(
            "NO: {} ({n} {rows}): {}.\n    fix: {}.\n",
            a.kind.starts(),
            a.cause,
            a.fix
        ));
    }
    if unknown > 0 {
        out.push_str(&format!(
            "NO: {unknown} row(s) for another reason: see `invalid_reason` in summary.csv.\n"
        ));
    }
    out
}

/// The book's table (docs/src/reading-results.md, between the `invalid-reasons` markers).
pub fn markdown() -> String {
    let mut out = String::from("| reason starts | likely cause | what to do |\n|---|---|---|\n");
    for a in &ADVICE {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            a.kind.starts(),
            a.cause,
            a.fix
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reason_finds_its_advice_and_merged_reasons_find_every_kind() {
        assert_eq!(
            advice_for("lag p99 5000 µs > 1000 µs (generator late or max_in_flight exhausted)"),
            vec![&ADVICE[0]]
        );
        assert_eq!(
            advice_for(
                "s0: lag p99 3 µs > 1 µs; s2: broker exited mid-cell (signal 9); see broker.log"
            ),
            vec![&ADVICE[0], &ADVICE[3]]
        );
        assert!(advice_for("something new").is_empty());
    }

    #[test]
    fn the_footer_names_each_kind_once_with_its_count_cause_and_fix() {
        let f = footer([
            "lag p99 2000 µs > 1000 µs",
            "lag p99 9000 µs > 1000 µs",
            "odd",
        ]);
        assert!(
            f.starts_with("NO: lag p99 (2 rows): the generator wrote"),
            "{f}"
        );
        assert_eq!(f.matches("NO: lag p99").count(), 1, "{f}");
        assert!(f.contains("fix: pin broker and generator"), "{f}");
        assert!(f.contains("NO: 1 row(s) for another reason"), "{f}");
        assert_eq!(footer(Vec::<&str>::new()), "");
    }
}
