//! What an invalid row's reason means and what to do about it: the one table behind the footer of
//! `harness run`'s (and `harness merge`'s) table and the book's table in
//! docs/src/reading-results.md (a test keeps the two equal), keyed on [`InvalidKind`]
//! (harness-results), the one list of the kinds. The code that makes a row invalid names its
//! kind as a value (`runner/validity.rs` for the `[validity]` limits, `runner/job_error.rs`,
//! `runner/job.rs` and `runner/sampler.rs` for a broker that exited, a result file that could not
//! be written or Ctrl-C, `consumer/job_part.rs` for consumers that did not drain); the rows carry
//! the kinds (`invalid_kinds`), and the footer reads them there, never in the reason's text.

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
            cause: "a broker process exited before it was ready, died during the job or failed at shutdown, so the row measured a broker that was not there for all of it",
            fix: "read the broker's log in the job's folder (`broker.log`, or the member's `broker-<i>.log` in a cluster; its last lines name the cause: a panic, an out-of-memory kill, a full disk)",
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

/// The advice of one kind.
pub fn advice_for(kind: InvalidKind) -> &'static Advice {
    &ADVICE[InvalidKind::ALL
        .iter()
        .position(|&a| a == kind)
        .expect("ALL lists every kind")]
}

/// The footer under a table with invalid rows, from each invalid row's kinds: each kind once,
/// the rows it made invalid, its cause and its fix; then how many rows were invalid for a
/// reason of no kind.
pub fn footer<'a>(rows_kinds: impl IntoIterator<Item = &'a [InvalidKind]>) -> String {
    let mut kinds: Vec<(InvalidKind, usize)> = Vec::new();
    let mut unknown = 0;
    for row in rows_kinds {
        if row.is_empty() {
            unknown += 1;
        }
        for &k in row {
            match kinds.iter_mut().find(|(seen, _)| *seen == k) {
                Some((_, n)) => *n += 1,
                None => kinds.push((k, 1)),
            }
        }
    }
    let mut out = String::new();
    for (k, n) in kinds {
        let a = advice_for(k);
        let rows = if n == 1 { "row" } else { "rows" };
        out.push_str(&format!(
            "NO: {} ({n} {rows}): {}.\n    fix: {}.\n",
            k.title(),
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
    let mut out = String::from(
        "| `invalid_kinds` | the footer says | likely cause | what to do |\n|---|---|---|---|\n",
    );
    for a in &ADVICE {
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} |\n",
            a.kind.name(),
            a.kind.title(),
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
    fn each_kind_finds_its_own_advice() {
        for k in InvalidKind::ALL {
            assert_eq!(advice_for(k).kind, k);
        }
    }

    /// The footer counts the kinds the rows carry; a row of two kinds (a merged row whose
    /// shards failed differently) counts under each.
    #[test]
    fn the_footer_names_each_kind_once_with_its_count_cause_and_fix() {
        use InvalidKind::{BrokerExited, LagP99};
        let f = footer([&[LagP99][..], &[LagP99, BrokerExited], &[]]);
        assert!(
            f.starts_with("NO: lag p99 (2 rows): the generator wrote"),
            "{f}"
        );
        assert_eq!(f.matches("NO: lag p99").count(), 1, "{f}");
        assert!(f.contains("fix: pin broker and generator"), "{f}");
        assert!(
            f.contains("NO: broker exited (1 row): a broker process"),
            "{f}"
        );
        assert!(f.contains("NO: 1 row(s) for another reason"), "{f}");
        assert_eq!(footer(Vec::<&[InvalidKind]>::new()), "");
    }
}
