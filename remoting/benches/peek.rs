//! What reading `code`, `opaque` and `flag` off a send's answer costs the load generator per
//! response: the answer a 5.3 broker sends to SEND_MESSAGE_V2 (JSON, fastjson's sorted keys), read
//! from its ends, against the same answer with one space after its closing brace, which sends the
//! peek down the walk every answer took before, and against the layout of the previous answer
//! (`PeekCache`, what the harness's reader uses). One criterion "element" is one frame.
//! `cargo bench -p remoting --bench peek`; compare the two lines of one run.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use remoting::{peek_frame, PeekCache};

/// The frame after its length field (what `peek_frame` takes), as the null responder and a 5.3
/// broker write it.
fn send_ok(offset: u64, trailing_space: bool) -> Vec<u8> {
    let mut header = format!(
        "{{\"code\":0,\"extFields\":{{\"MSG_REGION\":\"DefaultRegion\",\"TRACE_ON\":\"true\",\
         \"msgId\":\"7F00000100002A9F{offset:016X}\",\"queueId\":\"0\",\"queueOffset\":\"{offset}\"}},\
         \"flag\":1,\"language\":\"JAVA\",\"opaque\":{offset},\"serializeTypeCurrentRPC\":\"JSON\",\
         \"version\":479}}"
    );
    if trailing_space {
        header.push(' ');
    }
    let mut frame = (header.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(header.as_bytes());
    frame
}

fn peek(c: &mut Criterion) {
    let mut group = c.benchmark_group("peek_send_ok");
    group.throughput(Throughput::Elements(1));
    for (label, trailing_space) in [("from_the_ends", false), ("walked", true)] {
        let frames: Vec<Vec<u8>> = (0..256u64)
            .map(|i| send_ok(1_000_000 + i * 977, trailing_space))
            .collect();
        assert!(frames.iter().all(|f| peek_frame(f).is_some()));
        group.bench_with_input(BenchmarkId::new(label, 256), &frames, |b, frames| {
            let mut i = 0usize;
            b.iter(|| {
                i = (i + 1) & 255;
                peek_frame(std::hint::black_box(&frames[i]))
            })
        });
    }
    // What the harness's reader does: each answer compared with the layout of the last.
    let frames: Vec<Vec<u8>> = (0..256u64)
        .map(|i| send_ok(1_000_000 + i * 977, false))
        .collect();
    let mut cache = PeekCache::new();
    assert!(frames
        .iter()
        .all(|f| cache.peek_frame(f) == peek_frame(f) && peek_frame(f).is_some()));
    group.bench_with_input(
        BenchmarkId::new("against_the_last_layout", 256),
        &frames,
        |b, frames| {
            let mut i = 0usize;
            b.iter(|| {
                i = (i + 1) & 255;
                cache.peek_frame(std::hint::black_box(&frames[i]))
            })
        },
    );
    group.finish();
}

criterion_group!(benches, peek);
criterion_main!(benches);
