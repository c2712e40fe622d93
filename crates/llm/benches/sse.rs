//! Throughput of the SSE decoder on a chat-completion-like stream delivered
//! in network-sized chunks.

use std::hint::black_box;

use bridge_llm::sse::SseDecoder;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn sample_stream() -> Vec<u8> {
    let mut body = String::new();
    for index in 0..5_000 {
        body.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"token {index} é🌍\"}},\"finish_reason\":null}}]}}\r\n\r\n"
        ));
    }
    body.push_str("data: [DONE]\r\n\r\n");
    body.into_bytes()
}

fn decode(c: &mut Criterion) {
    let stream = sample_stream();
    let mut group = c.benchmark_group("sse");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.bench_function("decode_1460_byte_chunks", |b| {
        b.iter(|| {
            let mut decoder = SseDecoder::default();
            let mut events = 0;
            for chunk in stream.chunks(1460) {
                events += decoder.push(black_box(chunk)).map(|e| e.len()).unwrap_or(0);
            }
            events
        });
    });
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
