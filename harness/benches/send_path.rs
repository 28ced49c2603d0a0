//! What the pieces of one send cost the generator, in time rather than instructions (a
//! `callgrind` count treats a large `rep movsb` copy as one instruction a byte, and a small
//! call into libc as cheap): a send's frame from its template (`SendBuilder::encode_into_queue`,
//! 128-byte body, a batch's shared clock reading), its records (`Recorder::written` and
//! `Recorder::outcome`), and one monotonic clock reading with and without a subtraction. The
//! answer's header peek is `cargo bench -p remoting --bench peek`. One criterion "element" is
//! one send. `cargo bench -p harness --bench send_path`; compare lines of one run.

use std::hint::black_box;
use std::time::Instant;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use harness::recorder::{Outcome, Recorder};
use harness_model::profile::Workload;

fn pieces(c: &mut Criterion) {
    let mut group = c.benchmark_group("send_piece");
    group.throughput(Throughput::Elements(1));

    let w = Workload {
        message_size: 128,
        ..Workload::default()
    };
    let mut builder = harness::send_spec::builder(&w);
    // A connection's buffer: sends appended until it is written out.
    let mut out = BytesMut::with_capacity(1 << 20);
    let now = Instant::now();
    let mut seq = 0u64;
    group.bench_function("encode", |b| {
        b.iter(|| {
            seq += 1;
            if out.len() > 900_000 {
                out.clear();
            }
            builder.encode_into_queue(seq, None, seq as i32, now, &mut out)
        })
    });

    let mut rec = Recorder::new(3);
    let mut i = 0u64;
    group.bench_function("record", |b| {
        b.iter(|| {
            i += 1;
            rec.written(1, i % 50);
            rec.outcome(1, Outcome::Ok, Some(500 + i % 3000), Some(400 + i % 2000));
        })
    });

    group.bench_function("clock", |b| b.iter(Instant::now));
    let at = Instant::now();
    group.bench_function("clock_and_subtraction", |b| {
        b.iter(|| black_box(Instant::now()) - black_box(at))
    });
    group.finish();
}

criterion_group!(benches, pieces);
criterion_main!(benches);
