//! The backends' own cost per streamed chunk: a whole answer, one network
//! read per SSE event (as a token-by-token stream arrives), through the same
//! SSE decoder and event mapping the backends use. No network, so what is
//! measured is what the bridge adds to every chunk. Target: < 2 µs a chunk.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Chunks in each answer: text deltas, then one tool call whose arguments
/// arrive in pieces (a tenth of the chunks), then the end of the answer.
const CHUNKS: usize = 10_000;
const ARGUMENT_CHUNKS: usize = CHUNKS / 10;
const TEXT_CHUNKS: usize = CHUNKS - ARGUMENT_CHUNKS;

fn openai_answer() -> Vec<Bytes> {
    let head = r#""id":"chatcmpl-9xYz","object":"chat.completion.chunk","created":1763725000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_1234567890""#;
    let mut reads = Vec::with_capacity(CHUNKS + 3);
    for index in 0..TEXT_CHUNKS {
        reads.push(format!(
            "data: {{{head},\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" token{index} é\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
        ));
    }
    reads.push(format!(
        "data: {{{head},\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"id\":\"call_abc123\",\"type\":\"function\",\"function\":{{\"name\":\"write_file\",\"arguments\":\"\"}}}}]}},\"finish_reason\":null}}]}}\n\n"
    ));
    for index in 0..ARGUMENT_CHUNKS - 1 {
        reads.push(format!(
            "data: {{{head},\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":\"line {index}\\\\n\"}}}}]}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    reads.push(format!(
        "data: {{{head},\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"tool_calls\"}}]}}\n\n"
    ));
    reads.push(format!(
        "data: {{{head},\"choices\":[],\"usage\":{{\"prompt_tokens\":1200,\"completion_tokens\":{CHUNKS},\"total_tokens\":11200}}}}\n\n"
    ));
    reads.push("data: [DONE]\n\n".to_owned());
    reads.into_iter().map(Bytes::from).collect()
}

fn anthropic_answer() -> Vec<Bytes> {
    let mut reads = Vec::with_capacity(CHUNKS + 6);
    reads.push(r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_01XyZ","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1200,"output_tokens":1}}}

"#.to_owned());
    reads.push("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n".to_owned());
    for index in 0..TEXT_CHUNKS {
        reads.push(format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\" token{index} é\"}}}}\n\n"
        ));
    }
    reads.push(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
            .to_owned(),
    );
    reads.push("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01A\",\"name\":\"write_file\",\"input\":{}}}\n\n".to_owned());
    for index in 0..ARGUMENT_CHUNKS {
        reads.push(format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"line {index}\\\\n\"}}}}\n\n"
        ));
    }
    reads.push(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
            .to_owned(),
    );
    reads.push(format!(
        "event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"tool_use\",\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":{CHUNKS}}}}}\n\n"
    ));
    reads.push("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".to_owned());
    reads.into_iter().map(Bytes::from).collect()
}

fn per_chunk(c: &mut Criterion) {
    let mut group = c.benchmark_group("backend_per_chunk");
    group.throughput(Throughput::Elements(CHUNKS as u64));

    let openai = openai_answer();
    let events = bridge_llm::openai::decode_stream_for_bench(&openai)
        .unwrap_or_else(|err| panic!("the OpenAI sample must decode: {err}"));
    assert!(
        events >= CHUNKS,
        "only {events} events from {CHUNKS} chunks"
    );
    group.bench_function("openai_10k_chunks", |b| {
        b.iter(|| bridge_llm::openai::decode_stream_for_bench(black_box(&openai)));
    });

    let anthropic = anthropic_answer();
    let events = bridge_llm::anthropic::decode_stream_for_bench(&anthropic)
        .unwrap_or_else(|err| panic!("the Anthropic sample must decode: {err}"));
    assert!(
        events >= CHUNKS,
        "only {events} events from {CHUNKS} chunks"
    );
    group.bench_function("anthropic_10k_chunks", |b| {
        b.iter(|| bridge_llm::anthropic::decode_stream_for_bench(black_box(&anthropic)));
    });

    group.finish();
}

criterion_group!(benches, per_chunk);
criterion_main!(benches);
