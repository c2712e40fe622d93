use futures::StreamExt;

use super::*;
use crate::sse::DEFAULT_MAX_LINE_BYTES;

fn sse(payloads: &[&str]) -> String {
    payloads
        .iter()
        .map(|payload| format!("data: {payload}\n\n"))
        .collect()
}

/// Runs `body` split into `parts` and returns every item of the stream.
fn run_parts(parts: Vec<Vec<u8>>, max_line_bytes: usize) -> Vec<Result<ChatEvent, LlmError>> {
    let body = futures::stream::iter(parts.into_iter().map(|part| Ok(Bytes::from(part))));
    let stream = chat_stream("test".into(), body, max_line_bytes);
    futures::executor::block_on(stream.collect())
}

fn run(body: &str) -> Vec<Result<ChatEvent, LlmError>> {
    run_parts(vec![body.as_bytes().to_vec()], DEFAULT_MAX_LINE_BYTES)
}

fn events(body: &str) -> Vec<ChatEvent> {
    run(body).into_iter().map(|item| item.unwrap()).collect()
}

fn final_error(body: &str) -> LlmError {
    let mut items = run(body);
    items.pop().unwrap().unwrap_err()
}

fn text(value: &str) -> ChatEvent {
    ChatEvent::TextDelta { text: value.into() }
}

const TEXT_ANSWER: &[&str] = &[
    r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":"Grüß "}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":"dich 👋"}}]}"#,
    r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}"#,
    "[DONE]",
];

fn text_answer_events() -> Vec<ChatEvent> {
    vec![
        text("Grüß "),
        text("dich 👋"),
        ChatEvent::Usage {
            usage: Usage {
                prompt_tokens: 9,
                completion_tokens: 4,
            },
        },
        ChatEvent::Finish {
            reason: FinishReason::Stop,
        },
    ]
}

#[test]
fn text_usage_and_finish_come_in_order_with_finish_last() {
    assert_eq!(events(&sse(TEXT_ANSWER)), text_answer_events());
}

#[test]
fn every_split_point_of_the_body_gives_the_same_events() {
    let body = sse(TEXT_ANSWER).replace('\n', "\r\n").into_bytes();
    for split in 0..=body.len() {
        let parts = vec![body[..split].to_vec(), body[split..].to_vec()];
        let items: Vec<ChatEvent> = run_parts(parts, DEFAULT_MAX_LINE_BYTES)
            .into_iter()
            .map(|item| item.unwrap())
            .collect();
        assert_eq!(items, text_answer_events(), "split at {split}");
    }
}

#[test]
fn tool_calls_split_across_chunks_are_started_streamed_and_ended() {
    let body = sse(&[
        r#"{"choices":[{"index":0,"delta":{"content":"Let me look."}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"list_dir","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ]);
    assert_eq!(
        events(&body),
        vec![
            text("Let me look."),
            ChatEvent::ToolCallStart {
                index: 0,
                id: "call_a".into(),
                name: "read_file".into()
            },
            ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                arguments: "{\"pa".into()
            },
            ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                arguments: "th\":\"a\"}".into()
            },
            ChatEvent::ToolCallStart {
                index: 1,
                id: "call_b".into(),
                name: "list_dir".into()
            },
            ChatEvent::ToolCallArgumentsDelta {
                index: 1,
                arguments: "{}".into()
            },
            ChatEvent::ToolCallEnd { index: 0 },
            ChatEvent::ToolCallEnd { index: 1 },
            ChatEvent::Finish {
                reason: FinishReason::ToolCalls
            },
        ]
    );
}

#[test]
fn arguments_before_the_name_are_held_and_calls_without_index_follow_their_id() {
    let body = sse(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"id":"x1","function":{"arguments":"{\"a\":"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"first","arguments":"1}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"id":"x2","function":{"name":"second","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ]);
    let response = futures::executor::block_on(crate::collect(chat_stream(
        "test".into(),
        futures::stream::iter([Ok(Bytes::from(body))]),
        DEFAULT_MAX_LINE_BYTES,
    )))
    .unwrap();
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(response.tool_calls[0].id, "x1");
    assert_eq!(response.tool_calls[0].name, "first");
    assert_eq!(response.tool_calls[0].arguments, "{\"a\":1}");
    assert_eq!(response.tool_calls[1].id, "x2");
    assert_eq!(response.tool_calls[1].arguments, "{}");
}

#[test]
fn a_tool_call_that_never_gets_a_name_is_a_protocol_error() {
    let err = final_error(&sse(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
    ]));
    assert!(
        err.to_string()
            .contains("tool call 0 ended without a function name"),
        "{err}"
    );
}

#[test]
fn invalid_json_is_a_protocol_error_naming_the_chunk_and_ends_the_stream() {
    let body = sse(&[
        r#"{"choices":[{"delta":{"content":"ok"}}]}"#,
        r#"{"choices":[{"delta":{"content":"broken"#,
        r#"{"choices":[{"delta":{"content":"never seen"}}]}"#,
    ]);
    let items = run(&body);
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0], Ok(text("ok")));
    let err = items[1].clone().unwrap_err();
    assert!(matches!(err, LlmError::Protocol { .. }));
    let message = err.to_string();
    assert!(
        message.contains("invalid JSON in stream chunk 2"),
        "{message}"
    );
    assert!(
        message.contains(r#"{"choices":[{"delta":{"content":"broken"#),
        "{message}"
    );
}

#[test]
fn a_body_ending_without_finish_or_done_ended_early() {
    let err = final_error(&sse(&[r#"{"choices":[{"delta":{"content":"partial"}}]}"#]));
    assert!(matches!(err, LlmError::Protocol { .. }));
    assert!(err.to_string().contains("stream ended early"), "{err}");
    let err = final_error("");
    assert!(err.to_string().contains("stream ended early"), "{err}");
}

#[test]
fn a_finish_reason_without_done_is_a_complete_answer() {
    let body = sse(&[
        r#"{"choices":[{"delta":{"content":"cut"}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
    ]);
    assert_eq!(
        events(&body),
        vec![
            text("cut"),
            ChatEvent::Finish {
                reason: FinishReason::Length
            }
        ]
    );
}

#[test]
fn done_without_a_finish_reason_finishes_with_stop() {
    let body = sse(&[r#"{"choices":[{"delta":{"content":"hi"}}]}"#, "[DONE]"]);
    assert_eq!(
        events(&body),
        vec![
            text("hi"),
            ChatEvent::Finish {
                reason: FinishReason::Stop
            }
        ]
    );
}

#[test]
fn nothing_after_done_is_read() {
    let body = format!("{}data: not json\n\n", sse(&["[DONE]"]));
    assert_eq!(
        events(&body),
        vec![ChatEvent::Finish {
            reason: FinishReason::Stop
        }]
    );
}

#[test]
fn unknown_finish_reasons_and_other_choices_are_kept_apart() {
    let body = sse(&[
        r#"{"choices":[{"index":1,"delta":{"content":"second choice"}},{"index":0,"delta":{"content":"first"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"guardrail"}]}"#,
        "[DONE]",
    ]);
    assert_eq!(
        events(&body),
        vec![
            text("first"),
            ChatEvent::Finish {
                reason: FinishReason::Other("guardrail".into())
            }
        ]
    );
}

#[test]
fn an_error_inside_the_stream_is_reported_with_its_message() {
    let err = final_error(&sse(&[
        r#"{"error":{"message":"The server had an error while processing your request"}}"#,
    ]));
    assert!(
        err.to_string()
            .contains("upstream error in stream: The server had an error"),
        "{err}"
    );
    let err = final_error("event: error\ndata: {\"error\":{\"message\":\"overloaded\"}}\n\n");
    assert!(err.to_string().contains("overloaded"), "{err}");
}

#[test]
fn an_overlong_line_is_a_protocol_error() {
    let body = format!("data: {}", "x".repeat(200));
    let items = run_parts(vec![body.into_bytes()], 64);
    let err = items.last().unwrap().clone().unwrap_err();
    assert!(matches!(err, LlmError::Protocol { .. }));
    assert!(err.to_string().contains("longer than 64 bytes"), "{err}");
}

#[test]
fn an_idle_timeout_of_the_body_ends_the_stream_with_it() {
    let timeout = LlmError::Timeout {
        backend: "test".into(),
        after: std::time::Duration::from_secs(3),
    };
    let body = futures::stream::iter(vec![
        Ok(Bytes::from(sse(&[
            r#"{"choices":[{"delta":{"content":"a"}}]}"#,
        ]))),
        Err(BodyError::Idle(timeout.clone())),
        Ok(Bytes::from(sse(&["[DONE]"]))),
    ]);
    let items: Vec<_> =
        futures::executor::block_on(chat_stream("test".into(), body, 1024).collect());
    assert_eq!(items, vec![Ok(text("a")), Err(timeout)]);
}
