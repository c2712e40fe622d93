use serde_json::json;

use futures::StreamExt;

use super::*;
use crate::translate::anthropic::encode_events;
use crate::{ChatResponse, collect};

fn record(name: &str, data: serde_json::Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// A real-shaped answer: text, then two tool calls whose input arrives in
/// many fragments, a ping in between.
fn sample() -> String {
    [
        record(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "content": [], "model": "claude",
                "usage": {"input_tokens": 25, "output_tokens": 1}}}),
        ),
        record("ping", json!({"type": "ping"})),
        record(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        record(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Wörld 🌍, "}}),
        ),
        record(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "日本"}}),
        ),
        record(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        record(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}}}),
        ),
        record(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        ),
        record(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
        ),
        record(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "th\": \"é"}}),
        ),
        record(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ".rs\"}"}}),
        ),
        record(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        record(
            "content_block_start",
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_b", "name": "list_dir", "input": {}}}),
        ),
        record(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
        ),
        record(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 2}),
        ),
        record(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 42}}),
        ),
        record("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}

fn expected() -> Vec<ChatEvent> {
    vec![
        ChatEvent::TextDelta {
            text: "Wörld 🌍, ".into(),
        },
        ChatEvent::TextDelta {
            text: "日本".into(),
        },
        ChatEvent::ToolCallStart {
            index: 0,
            id: "toolu_a".into(),
            name: "read_file".into(),
        },
        ChatEvent::ToolCallArgumentsDelta {
            index: 0,
            arguments: "{\"pa".into(),
        },
        ChatEvent::ToolCallArgumentsDelta {
            index: 0,
            arguments: "th\": \"é".into(),
        },
        ChatEvent::ToolCallArgumentsDelta {
            index: 0,
            arguments: ".rs\"}".into(),
        },
        ChatEvent::ToolCallEnd { index: 0 },
        ChatEvent::ToolCallStart {
            index: 1,
            id: "toolu_b".into(),
            name: "list_dir".into(),
        },
        ChatEvent::ToolCallArgumentsDelta {
            index: 1,
            arguments: "{}".into(),
        },
        ChatEvent::ToolCallEnd { index: 1 },
        ChatEvent::Usage {
            usage: Usage {
                prompt_tokens: 25,
                completion_tokens: 42,
            },
        },
        ChatEvent::Finish {
            reason: FinishReason::ToolCalls,
        },
    ]
}

fn ok_events(items: Vec<Result<ChatEvent, LlmError>>) -> Vec<ChatEvent> {
    items
        .into_iter()
        .map(|item| item.unwrap_or_else(|err| panic!("unexpected error: {err}")))
        .collect()
}

fn last_error(items: Vec<Result<ChatEvent, LlmError>>) -> LlmError {
    match items.into_iter().last() {
        Some(Err(err)) => err,
        other => panic!("expected an error at the end, got {other:?}"),
    }
}

fn response_of(events: Vec<ChatEvent>) -> ChatResponse {
    let stream: ChatStream = futures::stream::iter(events.into_iter().map(Ok)).boxed();
    futures::executor::block_on(collect(stream)).unwrap()
}

#[test]
fn maps_text_parallel_tool_calls_usage_and_stop_reason() {
    let body = sample();
    assert_eq!(ok_events(decode_chunks(&[body.as_bytes()])), expected());
}

#[test]
fn every_byte_split_gives_the_same_events_even_inside_characters() {
    let body = sample();
    let bytes = body.as_bytes();
    let mut inside_a_character = 0;
    for split in 0..=bytes.len() {
        if !body.is_char_boundary(split) {
            inside_a_character += 1;
        }
        let (a, b) = bytes.split_at(split);
        assert_eq!(
            ok_events(decode_chunks(&[a, b])),
            expected(),
            "split at {split}"
        );
    }
    assert!(inside_a_character > 5, "the sample must split characters");
    let single_bytes: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(ok_events(decode_chunks(&single_bytes)), expected());
}

#[test]
fn a_tool_call_without_text_is_call_zero_and_stop_reasons_map() {
    let body = [
        record(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "run", "input": {}}}),
        ),
        record(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        record(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 3}}),
        ),
        record("message_stop", json!({"type": "message_stop"})),
    ]
    .concat();
    let events = ok_events(decode_chunks(&[body.as_bytes()]));
    assert_eq!(
        events,
        vec![
            ChatEvent::ToolCallStart {
                index: 0,
                id: "t".into(),
                name: "run".into()
            },
            ChatEvent::ToolCallEnd { index: 0 },
            ChatEvent::Usage {
                usage: Usage {
                    prompt_tokens: 0,
                    completion_tokens: 3
                }
            },
            ChatEvent::Finish {
                reason: FinishReason::Length
            },
        ]
    );
    assert_eq!(finish_reason("end_turn"), FinishReason::Stop);
    assert_eq!(finish_reason("stop_sequence"), FinishReason::Stop);
    assert_eq!(
        finish_reason("pause_turn"),
        FinishReason::Other("pause_turn".into())
    );
}

#[test]
fn error_events_bad_json_and_early_ends_are_protocol_errors() {
    let overloaded = record(
        "error",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    let err = last_error(decode_chunks(&[overloaded.as_bytes()]));
    assert!(matches!(err, LlmError::Protocol { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("upstream error in stream: Overloaded"),
        "{err}"
    );

    let bad = "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"ind\n\n";
    let err = last_error(decode_chunks(&[bad.as_bytes()]));
    assert!(
        err.to_string().contains("invalid JSON in stream event 1"),
        "{err}"
    );
    assert!(err.to_string().contains("content_block_delta"), "{err}");

    let body = sample();
    let cut_at = body.find("event: message_delta").unwrap();
    let items = decode_chunks(&[&body.as_bytes()[..cut_at]]);
    assert!(
        items.iter().any(|item| item.is_ok()),
        "events before the cut"
    );
    let err = last_error(items);
    assert!(err.to_string().contains("stream ended early"), "{err}");

    let stray = record(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 4, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
    );
    let err = last_error(decode_chunks(&[stray.as_bytes()]));
    assert!(err.to_string().contains("content block 4"), "{err}");
}

#[test]
fn unknown_events_and_blocks_are_skipped() {
    let body = [
        record("future_event", json!({"type": "future_event", "x": 1})),
        record(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        ),
        record(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
        ),
        record(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        record("message_stop", json!({"type": "message_stop"})),
    ]
    .concat();
    assert_eq!(
        ok_events(decode_chunks(&[body.as_bytes()])),
        vec![ChatEvent::Finish {
            reason: FinishReason::Stop
        }]
    );
}

#[test]
fn encoder_round_trips_our_own_events() {
    let records = encode_events("msg_x", "claude", &expected());
    assert!(records[0].starts_with("event: message_start\n"));
    assert!(records.last().unwrap().starts_with("event: message_stop\n"));
    let body = records.concat();
    assert_eq!(ok_events(decode_chunks(&[body.as_bytes()])), expected());
    // And in one-byte pieces, as a client might read it.
    let pieces: Vec<&[u8]> = body.as_bytes().chunks(1).collect();
    assert_eq!(ok_events(decode_chunks(&pieces)), expected());
}

#[test]
fn encoder_keeps_block_indexes_right_when_calls_and_text_interleave() {
    let start = |index: usize, id: &str| ChatEvent::ToolCallStart {
        index,
        id: id.into(),
        name: format!("tool_{id}"),
    };
    let args = |index: usize, arguments: &str| ChatEvent::ToolCallArgumentsDelta {
        index,
        arguments: arguments.into(),
    };
    let text = |text: &str| ChatEvent::TextDelta { text: text.into() };
    let interleaved = vec![
        text("Let me look. "),
        start(0, "a"),
        start(1, "b"),
        args(1, "{\"y\":"),
        args(0, "{\"x\":"),
        text("(still thinking) "),
        args(1, "2}"),
        args(0, "1}"),
        ChatEvent::ToolCallEnd { index: 1 },
        ChatEvent::ToolCallEnd { index: 0 },
        start(2, "c"),
        ChatEvent::Finish {
            reason: FinishReason::ToolCalls,
        },
    ];
    let records = encode_events("m", "claude", &interleaved);
    // Blocks are numbered in order, each started once and stopped once.
    let mut starts = Vec::new();
    let mut stops = Vec::new();
    for record in &records {
        let data = record
            .lines()
            .nth(1)
            .unwrap()
            .strip_prefix("data: ")
            .unwrap();
        let value: serde_json::Value = serde_json::from_str(data).unwrap();
        match value["type"].as_str().unwrap() {
            "content_block_start" => starts.push(value["index"].as_u64().unwrap()),
            "content_block_stop" => stops.push(value["index"].as_u64().unwrap()),
            _ => {}
        }
    }
    assert_eq!(starts, [0, 1, 2, 3, 4]);
    assert_eq!(stops, [0, 1, 2, 3, 4]);

    let decoded = ok_events(decode_chunks(&[records.concat().as_bytes()]));
    let got = response_of(decoded);
    let want = response_of(interleaved);
    assert_eq!(got.text, want.text);
    // The client sees Anthropic-shaped ids: the upstream's own, prefixed.
    let ids: Vec<&str> = got.tool_calls.iter().map(|call| call.id.as_str()).collect();
    assert_eq!(ids, ["toolu_a", "toolu_b", "toolu_c"]);
    let names = |calls: &[crate::ToolCall]| -> Vec<String> {
        calls.iter().map(|call| call.name.clone()).collect()
    };
    assert_eq!(names(&got.tool_calls), names(&want.tool_calls));
    assert_eq!(got.finish, Some(FinishReason::ToolCalls));
    assert_eq!(got.tool_calls[0].arguments, "{\"x\":1}");
    assert_eq!(got.tool_calls[1].arguments, "{\"y\":2}");
    assert_eq!(got.tool_calls[2].arguments, "");
}

#[test]
fn encoder_ignores_events_after_finish() {
    let mut encoder = crate::translate::anthropic::StreamEncoder::new("m", "claude");
    let records = encoder.encode(&ChatEvent::Finish {
        reason: FinishReason::Stop,
    });
    assert_eq!(records.len(), 3, "start, delta, stop: {records:?}");
    assert!(records[1].contains("\"end_turn\""));
    assert!(
        encoder
            .encode(&ChatEvent::TextDelta {
                text: "late".into()
            })
            .is_empty()
    );
}
