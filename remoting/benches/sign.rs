//! What signing costs the load generator per send: one JSON SEND_MESSAGE_V2 frame from the
//! `FrameTemplate` (the harness's hot path), unsigned and signed (ACL: HmacSHA1 over the ext
//! values and the body), for a 128 B and a 4 KiB body. One criterion "element" is one frame.
//!
//! Signing is process-wide, so the signed group installs credentials first and removes them
//! after; the unsigned group runs with none installed.

use std::collections::BTreeMap;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use remoting::acl::{self, Credentials};
use remoting::{FrameTemplate, RemotingCommand};

fn send_v2(body_len: usize) -> RemotingCommand {
    let ext: BTreeMap<String, String> = [
        ("a", "bench_producer"),
        ("b", "BenchTopic"),
        ("c", "TBW102"),
        ("d", "4"),
        ("e", "0"),
        ("f", "0"),
        ("g", "0"),
        ("h", "0"),
        ("i", "-"),
        ("j", "0"),
        ("m", "false"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    RemotingCommand::request(310, 0)
        .with_ext_fields(ext)
        .with_body(vec![b'a'; body_len])
}

fn encode(c: &mut Criterion) {
    let props = "WAIT\u{1}true\u{2}UNIQ_KEY\u{1}7F000001000100000000000000000000\u{2}";
    let mut group = c.benchmark_group("template_encode");
    group.throughput(Throughput::Elements(1));
    for signed in [false, true] {
        acl::install(signed.then(|| Credentials::new("bench_ak", "bench-secret-key")));
        for body_len in [128usize, 4096] {
            let t = FrameTemplate::new(&send_v2(body_len), &["e", "g", "i"]).expect("template");
            let mut out = BytesMut::with_capacity(8192);
            let label = if signed { "signed" } else { "unsigned" };
            group.bench_with_input(BenchmarkId::new(label, body_len), &body_len, |b, _| {
                let mut opaque = 0i32;
                b.iter(|| {
                    out.clear();
                    opaque = opaque.wrapping_add(1);
                    t.encode(opaque, &["1", "1700000000000", props], &mut out);
                    out.len()
                })
            });
        }
    }
    acl::install(None);
    group.finish();
}

criterion_group!(benches, encode);
criterion_main!(benches);
