//! A second of the time series, derived from the segments: each send's latency, service time
//! and lag are recorded once, in its segment's histograms, and a second's histograms are what
//! the segments gained since the sampler last took one.
//!
//! Recording every value twice (its segment's histogram and the second's) made seven histogram
//! records per send, a tenth of the generator's instructions per send in `make floor`
//! (`callgrind`). The price is paid once a second per recorder (the pacer's and one per
//! connection): a take walks each histogram that changed, and `Histogram::subtract` finds each
//! value's slot anew. With about 15,000 distinct values per histogram (latencies spread up to
//! 10 s) a take with 1,000 new sends measured 0.58 ms, where adding a second's own histograms
//! had cost 0.03 ms; one send's records take 49 ns, against 81 ns with the second's copies
//! (`cargo bench -p harness --bench second`, means). So this pays above about 16,000 sends a
//! second per connection, where the generator is busy, and costs up to 0.05% of a core per
//! connection below that.

use hdrhistogram::Histogram;

use super::segment::{histogram, Interval, Segment};

/// What one segment's histograms held at the last take.
#[derive(Debug, Clone)]
pub struct Taken {
    latency: Histogram<u64>,
    service: Histogram<u64>,
    lag: Histogram<u64>,
    busy_latency: Histogram<u64>,
}

impl Default for Taken {
    fn default() -> Self {
        Taken {
            latency: histogram(),
            service: histogram(),
            lag: histogram(),
            busy_latency: histogram(),
        }
    }
}

impl Taken {
    /// Each histogram of a second: the segment's, what it held at the last take, and where
    /// the difference goes.
    fn parts<'a>(
        &'a mut self,
        seg: &'a Segment,
        out: &'a mut Interval,
    ) -> [(
        &'a Histogram<u64>,
        &'a mut Histogram<u64>,
        &'a mut Histogram<u64>,
    ); 4] {
        [
            (&seg.latency, &mut self.latency, &mut out.latency),
            (&seg.service, &mut self.service, &mut out.service),
            (&seg.lag, &mut self.lag, &mut out.lag),
            (
                &seg.busy_latency,
                &mut self.busy_latency,
                &mut out.busy_latency,
            ),
        ]
    }

    pub fn merge(&mut self, o: &Taken) {
        // Equal precision and auto-resizing: adding cannot fail.
        let _ = self.latency.add(&o.latency);
        let _ = self.service.add(&o.service);
        let _ = self.lag.add(&o.lag);
        let _ = self.busy_latency.add(&o.busy_latency);
    }
}

/// Adds to `out` what each segment's histograms gained since the last take, and remembers what
/// they hold now. `scratch` is reused, so nothing is allocated once the histograms have grown
/// to the run's range (a fresh histogram a second let the allocator's arenas creep up).
pub fn take(
    segments: &[Segment],
    taken: &mut [Taken],
    scratch: &mut Histogram<u64>,
    out: &mut Interval,
) {
    for (seg, t) in segments.iter().zip(taken.iter_mut()) {
        for (now, then, into) in t.parts(seg, out) {
            // Histograms only gain: an equal count means nothing was recorded since.
            if now.len() == then.len() {
                continue;
            }
            scratch.reset();
            // `then` is `now` as it was, so it fits in `now`'s range and no count goes below
            // zero: neither call can fail.
            let _ = scratch.add(now);
            let _ = scratch.subtract(&*then);
            let _ = into.add(&*scratch);
            let _ = then.add(&*scratch);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::recorder::{histogram, Interval, Outcome, Recorder};
    use crate::recorder::{BusyClass, NotAvailableClass};
    use hdrhistogram::Histogram;
    use proptest::prelude::*;

    /// One recorded event: a write's lag, or an outcome with its latency and service time.
    #[derive(Debug, Clone)]
    enum Event {
        Written {
            seg: usize,
            lag: u64,
        },
        Outcome {
            seg: usize,
            outcome: Outcome,
            latency: Option<u64>,
            service: Option<u64>,
        },
        Take,
    }

    fn event() -> impl Strategy<Value = Event> {
        let outcome = prop_oneof![
            Just(Outcome::Ok),
            Just(Outcome::Busy(BusyClass::TimeoutCleanQueue)),
            Just(Outcome::Timeout),
            Just(Outcome::NotAvailable(NotAvailableClass::DiskFull)),
        ];
        prop_oneof![
            (0usize..4, 0u64..50_000).prop_map(|(seg, lag)| Event::Written { seg, lag }),
            (
                0usize..4,
                outcome,
                proptest::option::of(0u64..200_000),
                proptest::option::of(1u64..1000)
            )
                .prop_map(|(seg, outcome, latency, service)| Event::Outcome {
                    seg,
                    outcome,
                    latency,
                    service
                }),
            Just(Event::Take),
        ]
    }

    /// A histogram's count, extremes and values with their counts: equal histograms of
    /// different sizes (one grew further once) compare unequal with `==`.
    fn recorded(h: &Histogram<u64>) -> (u64, u64, u64, Vec<(u64, u64)>) {
        let values = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        (h.len(), h.min(), h.max(), values)
    }

    /// A second as the recorder had kept it before: every value recorded into it directly.
    #[derive(Default)]
    struct Direct(Option<Interval>);

    impl Direct {
        fn get(&mut self) -> &mut Interval {
            self.0.get_or_insert_with(Interval::default)
        }
    }

    proptest! {
        // Each case grows histograms to a few thousand buckets and walks them at every take:
        // slow in a debug build, so fewer cases than the default.
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Every second's histograms are the values recorded in that second, whatever the
        /// segments (one past the last is the last's, as the recorder clamps it), and the
        /// segments keep every value once.
        #[test]
        fn a_second_holds_what_was_recorded_in_it(events in prop::collection::vec(event(), 0..120)) {
            let mut rec = Recorder::new(3);
            let mut direct = Direct::default();
            let mut all_latency = histogram();
            let mut total = Interval::default();
            let check = |total: &Interval, want: &mut Direct| -> Result<(), TestCaseError> {
                let want = want.get();
                for (got, want) in [
                    (&total.latency, &want.latency),
                    (&total.service, &want.service),
                    (&total.lag, &want.lag),
                    (&total.busy_latency, &want.busy_latency),
                ] {
                    prop_assert_eq!(recorded(got), recorded(want));
                }
                prop_assert_eq!(&total.counts, &want.counts);
                prop_assert_eq!(total.written, want.written);
                Ok(())
            };
            for e in events {
                match e {
                    Event::Written { seg, lag } => {
                        rec.written(seg, lag);
                        let d = direct.get();
                        d.written += 1;
                        d.lag.record(lag).unwrap();
                    }
                    Event::Outcome { seg, outcome, latency, service } => {
                        rec.outcome(seg, outcome, latency, service);
                        let d = direct.get();
                        crate::recorder::segment::count(&mut d.counts, outcome);
                        if let Some(l) = latency {
                            d.latency.record(l).unwrap();
                            all_latency.record(l).unwrap();
                            if matches!(outcome, Outcome::Busy(_)) {
                                d.busy_latency.record(l).unwrap();
                            }
                        }
                        if let Some(s) = service {
                            d.service.record(s).unwrap();
                        }
                    }
                    Event::Take => {
                        total.reset();
                        rec.move_interval_into(&mut total);
                        check(&total, &mut direct)?;
                        direct = Direct::default();
                    }
                }
            }
            total.reset();
            rec.move_interval_into(&mut total);
            check(&total, &mut direct)?;
            let mut kept = histogram();
            for s in &rec.segments {
                kept.add(&s.latency).unwrap();
            }
            prop_assert_eq!(recorded(&kept), recorded(&all_latency));
        }
    }
}
