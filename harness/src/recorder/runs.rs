//! Final outcomes recorded a run at a time: the answers to one closed-loop refill that one read
//! brings share their segment, outcome, latency and service time (every send of the refill was
//! written at the refill's instant and answered at the read's), so the reader records each run
//! with one histogram record per histogram instead of one per send.

use super::outcome::Outcome;

/// Consecutive final outcomes with the same segment, outcome, latency and service time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct OutcomeRun {
    pub(super) seg: usize,
    pub(super) outcome: Outcome,
    pub(super) latency_us: Option<u64>,
    pub(super) service_us: Option<u64>,
    pub(super) n: u64,
}

impl OutcomeRun {
    /// A run of one outcome.
    pub(super) fn one(
        seg: usize,
        outcome: Outcome,
        latency_us: Option<u64>,
        service_us: Option<u64>,
    ) -> OutcomeRun {
        OutcomeRun {
            seg,
            outcome,
            latency_us,
            service_us,
            n: 1,
        }
    }

    /// Adds `next` (a run of one) to this run if it is alike; false if it starts another.
    pub(super) fn grow(&mut self, next: &OutcomeRun) -> bool {
        let alike = OutcomeRun { n: 1, ..*self } == *next;
        if alike {
            self.n += next.n;
        }
        alike
    }
}

#[cfg(test)]
mod tests {
    use crate::recorder::{BusyClass, Segment};
    use crate::recorder::{Interval, Outcome, Recorder};
    use hdrhistogram::Histogram;
    use proptest::prelude::*;

    fn recorded(h: &Histogram<u64>) -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    }

    fn same(a: &Segment, b: &Segment) -> Result<(), TestCaseError> {
        prop_assert_eq!(&a.counts, &b.counts);
        for (x, y) in [
            (&a.latency, &b.latency),
            (&a.ok_latency, &b.ok_latency),
            (&a.busy_latency, &b.busy_latency),
            (&a.service, &b.service),
        ] {
            prop_assert_eq!(recorded(x), recorded(y));
        }
        Ok(())
    }

    proptest! {
        /// Outcomes (few distinct values, so that runs form) recorded in calls of `runs`, each
        /// holding any number of them, give the segments and seconds that recording each one
        /// alone gives.
        #[test]
        fn runs_record_what_single_outcomes_record(
            chunks in prop::collection::vec(
                prop::collection::vec(
                    (0usize..3, 0u8..3, prop::option::of(0u64..3), prop::option::of(0u64..2)),
                    0..30,
                ),
                0..12,
            ),
            take_after in prop::collection::vec(any::<bool>(), 12),
        ) {
            let outcome = |k: u8| match k {
                0 => Outcome::Ok,
                1 => Outcome::Busy(BusyClass::TimeoutCleanQueue),
                _ => Outcome::Timeout,
            };
            let (mut alone, mut in_runs) = (Recorder::new(2), Recorder::new(2));
            let (mut a_total, mut r_total) = (Interval::default(), Interval::default());
            for (i, chunk) in chunks.iter().enumerate() {
                for &(seg, k, l, s) in chunk {
                    alone.outcome(seg, outcome(k), l.map(|l| 100 + l), s.map(|s| 7 + s));
                }
                in_runs.runs(|rec| {
                    for &(seg, k, l, s) in chunk {
                        rec.outcome(seg, outcome(k), l.map(|l| 100 + l), s.map(|s| 7 + s));
                    }
                });
                if take_after[i] {
                    a_total.reset();
                    r_total.reset();
                    alone.move_interval_into(&mut a_total);
                    in_runs.move_interval_into(&mut r_total);
                    prop_assert_eq!(&a_total.counts, &r_total.counts);
                    prop_assert_eq!(recorded(&a_total.latency), recorded(&r_total.latency));
                    prop_assert_eq!(recorded(&a_total.service), recorded(&r_total.service));
                }
            }
            for (a, r) in alone.segments.iter().zip(&in_runs.segments) {
                same(a, r)?;
            }
        }
    }

    #[test]
    fn a_run_is_recorded_once_per_histogram() {
        let mut rec = Recorder::new(1);
        rec.runs(|rec| {
            for _ in 0..500 {
                rec.outcome(0, Outcome::Ok, Some(250), Some(250));
            }
            // Not recorded before the call returns.
            assert_eq!(rec.segments[0].latency.len(), 0);
        });
        let s = &rec.segments[0];
        assert_eq!(
            (s.counts.ok, s.latency.len(), s.ok_latency.len()),
            (500, 500, 500)
        );
        assert_eq!(recorded(&s.service), vec![(250, 500)]);
    }
}
