//! The validity rules: when a measured row says more about the generator than the broker.
//! Each reason carries its `InvalidKind` (harness-results), which `report/advice.rs` explains
//! (cause and fix) under the table and in the book.

use crate::report::SummaryRow;
use harness_model::profile::Validity;
use harness_results::{Invalid, InvalidKind};

/// Why `row` cannot be trusted under the profile's `[validity]` limits, if it cannot.
pub fn validity_problem(v: &Validity, row: &SummaryRow) -> Option<Invalid> {
    let lag_p99 = row.seg.lag_us[1] as f64;
    if lag_p99 > v.max_lag_p99_us {
        return Some(Invalid::new(
            InvalidKind::LagP99,
            format!(
                "lag p99 {lag_p99:.0} µs > {:.0} µs (generator late or max_in_flight exhausted)",
                v.max_lag_p99_us
            ),
        ));
    }
    if let Some(cpu) = row.res.harness_cpu_max {
        if cpu > v.max_harness_cpu {
            return Some(Invalid::new(
                InvalidKind::HarnessCpu,
                format!("harness CPU {cpu:.0}% > {:.0}%", v.max_harness_cpu),
            ));
        }
    }
    if let Some(target) = row.target_rate {
        let explained =
            row.seg.counts.dropped + row.seg.counts.timeouts + row.seg.counts.connection_errors > 0;
        if row.achieved_rate() < v.min_achieved_ratio * target && !explained {
            return Some(Invalid::new(
                InvalidKind::Achieved,
                format!(
                    "achieved {:.0}/s < {:.0}% of target {target:.0}/s with no errors to explain it",
                    row.achieved_rate(),
                    v.min_achieved_ratio * 100.0
                ),
            ));
        }
    }
    None
}

/// Whether a run did nothing at all: every row invalid, no job sent anything and no consumer
/// consumed anything (a producer that could not connect, a broker that refused every send).
/// Invalid rows of a job that ran are a result. A job meant to send nothing (consumers alone,
/// `rate = 0`) ran if its consumers consumed: `make floor`'s consume run against the null
/// responder, whose backlog never ends, failed with "no job sent anything" whenever its drain
/// check (empty process queues) found a message cached at every look.
pub fn nothing_ran(rows: &[SummaryRow]) -> bool {
    let ran = |r: &SummaryRow| {
        r.valid || r.seg.sent > 0 || r.consumer.as_ref().is_some_and(|c| c.consumed > 0)
    };
    !rows.is_empty() && !rows.iter().any(ran)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Resources, SegmentFigures};

    fn row(lag_p99_us: u64, sent: u64, timeouts: u64) -> SummaryRow {
        SummaryRow {
            profile: "p".into(),
            cell_id: "c".into(),
            label: "l".into(),
            repetition: 0,
            step: None,
            params: Vec::new(),
            target_rate: Some(1000.0),
            duration_s: 1.0,
            seg: SegmentFigures {
                sent,
                counts: crate::recorder::Counts {
                    timeouts,
                    ..Default::default()
                },
                lag_us: [0, lag_p99_us, lag_p99_us],
                ..SegmentFigures::default()
            },
            res: Resources::default(),
            valid: true,
            invalid_reason: String::new(),
            invalid_kinds: Vec::new(),
            consumer: None,
            fault: Default::default(),
            knee: Default::default(),
            order: Default::default(),
        }
    }

    #[test]
    fn a_run_of_invalid_rows_failed_only_if_nothing_was_sent_or_consumed() {
        let invalid = |sent: u64, consumed: Option<u64>| SummaryRow {
            valid: false,
            consumer: consumed.map(|consumed| crate::consumer::ConsumerFigures {
                consumed,
                ..Default::default()
            }),
            ..row(10, sent, 0)
        };
        assert!(!nothing_ran(&[]));
        assert!(nothing_ran(&[invalid(0, None), invalid(0, Some(0))]));
        assert!(
            !nothing_ran(&[invalid(0, None), invalid(5, None)]),
            "one job sent"
        );
        assert!(
            !nothing_ran(&[invalid(0, Some(3_000_000))]),
            "consumers alone, not drained"
        );
        let valid = SummaryRow {
            valid: true,
            ..row(10, 0, 0)
        };
        assert!(!nothing_ran(&[valid]));
    }

    #[test]
    fn late_generator_and_unexplained_shortfall_invalidate() {
        let v = Validity::default();
        assert_eq!(validity_problem(&v, &row(10, 1000, 0)), None);
        assert_eq!(
            validity_problem(&v, &row(5000, 1000, 0)).unwrap().reason,
            "lag p99 5000 µs > 1000 µs (generator late or max_in_flight exhausted)"
        );
        assert_eq!(
            validity_problem(&v, &row(10, 500, 0)).unwrap().reason,
            "achieved 500/s < 95% of target 1000/s with no errors to explain it"
        );
        // Timeouts explain a shortfall.
        assert_eq!(validity_problem(&v, &row(10, 500, 3)), None);
        // Every reason written here carries its kind, whose cause and fix the advice gives.
        let mut cpu = row(10, 1000, 0);
        cpu.res.harness_cpu_max = Some(99.0);
        for (r, kind) in [
            (row(5000, 1000, 0), InvalidKind::LagP99),
            (row(10, 500, 0), InvalidKind::Achieved),
            (cpu, InvalidKind::HarnessCpu),
        ] {
            let why = validity_problem(&v, &r).unwrap();
            assert_eq!(why.kind, Some(kind), "{}", why.reason);
            assert!(why.reason.starts_with(kind.title()), "{}", why.reason);
        }
    }

    /// A row made invalid by its lag is written with kind `lag_p99` and read back as LagP99,
    /// as `harness merge` reads a shard's rows.
    #[test]
    fn a_late_generator_s_row_reads_back_as_lag_p99() {
        let mut late = row(5000, 1000, 0);
        let why = validity_problem(&Validity::default(), &late).unwrap();
        late.invalidate(why);
        let csv = crate::report::summary_csv(&[], &[late]).unwrap();
        let text = String::from_utf8(csv.clone()).unwrap();
        assert!(
            text.contains("false,lag p99 5000 µs > 1000 µs (generator late or max_in_flight exhausted),lag_p99,"),
            "{text}"
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("summary.csv"), csv).unwrap();
        let run = harness_results::read::load(dir.path()).unwrap();
        assert_eq!(run.rows[0].valid(), Some(false));
        assert_eq!(run.rows[0].invalid_kinds(), [InvalidKind::LagP99]);
    }
}
