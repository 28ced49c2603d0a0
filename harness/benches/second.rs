//! What a recorder pays once a second for the time series (`Recorder::move_interval_into`):
//! since 0226fa6 a second's histograms are what the segments' histograms gained since the last
//! take (`harness/src/recorder/second.rs`), found by a subtraction; before, each value was also
//! recorded into the second's own histograms, which the take added to the total. Both are run
//! here on histograms grown to the same spread (latencies up to 10 s, about 15,000 distinct
//! values), with 1,000 new sends a second; one criterion "element" is one take. The group
//! `second_per_send` measures what that saves on each send: one send's records now, against the
//! same with the three records into the second's own histograms that it had before.
//! `cargo bench -p harness --bench second`; the take's cost over the saving per send is the
//! rate per connection above which the change pays.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use harness::recorder::{Interval, Outcome, Recorder};

/// A value spread like a long run's latencies, in µs.
fn spread(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40 // up to about 16.7 M µs
}

fn take(c: &mut Criterion) {
    let mut group = c.benchmark_group("second_take");
    group.throughput(Throughput::Elements(1));

    let mut rec = Recorder::new(3);
    for i in 0..200_000 {
        rec.written(1, spread(i) % 5_000);
        rec.outcome(
            1,
            Outcome::Ok,
            Some(spread(i) % 10_000_000),
            Some(spread(i) % 5_000_000),
        );
    }
    let mut total = Interval::default();
    let mut i = 0u64;
    group.bench_function("segments_gain", |b| {
        b.iter(|| {
            for _ in 0..1000 {
                i += 1;
                rec.written(1, spread(i) % 5_000);
                rec.outcome(
                    1,
                    Outcome::Ok,
                    Some(spread(i) % 10_000_000),
                    Some(i % 5_000),
                );
            }
            total.reset();
            rec.move_interval_into(&mut total);
        })
    });

    // Before: the second's own histograms, grown to the same spread, added to the total.
    let mut second = Interval::default();
    for i in 0..200_000 {
        let l = spread(i) % 10_000_000;
        for (h, v) in [
            (&mut second.latency, l),
            (&mut second.service, spread(i) % 5_000_000),
            (&mut second.lag, spread(i) % 5_000),
            (&mut second.busy_latency, l),
        ] {
            h.record(v).expect("auto-resizing");
        }
    }
    // The second's histograms were reset after the add; a reset costs the same whatever they
    // hold, so a grown copy stands in for them.
    let mut spent = second.clone();
    group.bench_function("own_histograms_added", |b| {
        b.iter(|| {
            total.reset();
            total.merge(&second);
            spent.reset();
        })
    });
    group.finish();
}

fn per_send(c: &mut Criterion) {
    let mut group = c.benchmark_group("second_per_send");
    group.throughput(Throughput::Elements(1));
    let mut rec = Recorder::new(3);
    let mut i = 0u64;
    group.bench_function("segments_only", |b| {
        b.iter(|| {
            i += 1;
            let (lag, latency) = (spread(i) % 5_000, spread(i) % 10_000_000);
            rec.written(1, lag);
            rec.outcome(1, Outcome::Ok, Some(latency), Some(latency / 2));
        })
    });
    let mut second = Interval::default();
    group.bench_function("with_second_copies", |b| {
        b.iter(|| {
            i += 1;
            let (lag, latency) = (spread(i) % 5_000, spread(i) % 10_000_000);
            rec.written(1, lag);
            rec.outcome(1, Outcome::Ok, Some(latency), Some(latency / 2));
            // What the recorder did besides, before: lag, latency and service time again.
            second.lag.record(lag).expect("auto-resizing");
            second.latency.record(latency).expect("auto-resizing");
            second.service.record(latency / 2).expect("auto-resizing");
        })
    });
    group.finish();
}

criterion_group!(benches, take, per_send);
criterion_main!(benches);
