use serde_json::{Map, Value, json};

use super::*;
use crate::{ChatEvent, ChatResponse, FinishReason, Message, Role, ToolCall, Usage};

/// The body Codex 0.169.0 sent for `codex exec "Say hello"` (captured from
/// the released package; long texts shortened).
const CODEX_REQUEST: &str = include_str!("codex_request.json");

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn records(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .map(|record| {
            let data = record
                .lines()
                .find_map(|line| line.strip_prefix("data: "))
                .unwrap();
            let value: Value = serde_json::from_str(data).unwrap();
            let name = record
                .lines()
                .next()
                .unwrap()
                .strip_prefix("event: ")
                .unwrap();
            assert_eq!(value["type"], name, "the event name repeats the type");
            value
        })
        .collect()
}

fn head(custom_tools: &[&str]) -> ResponseHead {
    ResponseHead {
        id: "resp_1".into(),
        model: "gpt-test".into(),
        created_at: 7,
        custom_tools: custom_tools.iter().map(|name| (*name).to_owned()).collect(),
        previous_response_id: None,
        store: false,
    }
}

/// The records of `events` through a fresh encoder of `head`, its end
/// included, and the encoder.
fn stream_of(head: ResponseHead, events: Vec<ChatEvent>) -> (Vec<Value>, StreamEncoder) {
    let mut encoder = StreamEncoder::new(head);
    let mut lines = encoder.start();
    for event in &events {
        lines.extend(encoder.encode(event));
    }
    lines.extend(encoder.end());
    (records(&lines), encoder)
}

#[test]
fn codexs_request_becomes_a_chat_request_and_names_what_it_left_out() {
    let body: Value = serde_json::from_str(CODEX_REQUEST).unwrap();
    let parsed = parse_request(&object(body)).unwrap();
    assert!(parsed.stream);
    assert!(!parsed.store);
    assert_eq!(parsed.model.as_deref(), Some("mock-model"));
    let roles: Vec<Role> = parsed.chat.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::System, Role::User, Role::User]);
    assert_eq!(
        parsed.chat.messages[3].content.as_deref(),
        Some("Say hello")
    );
    let tools: Vec<&str> = parsed.chat.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        tools.contains(&"exec_command") && tools.contains(&"view_image"),
        "{tools:?}"
    );
    assert_eq!(parsed.openai_extra["tool_choice"], "auto");
    assert_eq!(parsed.openai_extra["parallel_tool_calls"], true);
    let ignored = parsed.ignored.join("\n");
    assert!(
        ignored.contains("the \"namespace\" tool \"multi_agent_v1\""),
        "{ignored}"
    );
    assert!(ignored.contains("the \"web_search\" tool"), "{ignored}");
    assert!(ignored.contains("reasoning: not used"), "{ignored}");
}

#[test]
fn a_tool_round_trip_in_the_input_maps_to_chat_messages() {
    let body = json!({
        "model": "m",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "run ls"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xyz"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Running."}]},
            {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"},
            {"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
            {"type": "custom_tool_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "done"}]},
        ],
        "tools": [{"type": "custom", "name": "apply_patch", "description": "Patches files",
                   "format": {"type": "grammar"}}],
        "max_output_tokens": 300,
        "temperature": 0.2,
    });
    let parsed = parse_request(&object(body)).unwrap();
    assert_eq!(parsed.custom_tools, ["apply_patch"]);
    assert_eq!(parsed.chat.max_tokens, Some(300));
    assert_eq!(parsed.chat.temperature, Some(0.2));
    assert_eq!(
        parsed.chat.messages,
        vec![
            Message::text(Role::System, "Be brief."),
            Message::text(Role::User, "run ls"),
            Message {
                role: Role::Assistant,
                content: Some("Running.".into()),
                tool_calls: vec![
                    ToolCall {
                        id: "call_1".into(),
                        name: "exec_command".into(),
                        arguments: "{\"cmd\":\"ls\"}".into(),
                    },
                    ToolCall {
                        id: "call_2".into(),
                        name: "apply_patch".into(),
                        arguments: json!({"input": "*** Begin Patch"}).to_string(),
                    },
                ],
                tool_call_id: None,
            },
            Message::tool_result("call_1", "a.txt"),
            Message::tool_result("call_2", "done"),
        ]
    );
    assert_eq!(
        parsed.conversation().len(),
        4,
        "everything but the instructions"
    );
    assert_eq!(parsed.ignored, ["input[1]: a \"reasoning\" item"]);
}

#[test]
fn a_stored_conversation_goes_between_the_instructions_and_the_input() {
    let body = json!({"instructions": "Sys", "input": "and now?"});
    let mut parsed = parse_request(&object(body)).unwrap();
    parsed.continue_from(vec![
        Message::text(Role::User, "hi"),
        Message::text(Role::Assistant, "hello"),
    ]);
    let texts: Vec<&str> = parsed
        .chat
        .messages
        .iter()
        .map(|m| m.content.as_deref().unwrap())
        .collect();
    assert_eq!(texts, ["Sys", "hi", "hello", "and now?"]);
    assert_eq!(parsed.conversation().len(), 3);
}

#[test]
fn bad_input_names_the_field_in_openais_shape() {
    let cases = [
        (json!({"model": "m"}), "input", "missing_required_parameter"),
        (json!({"input": 5}), "input", "invalid_type"),
        (json!({"input": [7]}), "input[0]", "invalid_type"),
        (
            json!({"input": [{"role": "robot", "content": "x"}]}),
            "input[0].role",
            "invalid_value",
        ),
        (
            json!({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}),
            "input[0].call_id",
            "missing_required_parameter",
        ),
        (
            json!({"input": [{"type": "function_call_output", "call_id": "c", "output": 3}]}),
            "input[0].output",
            "invalid_type",
        ),
        (
            json!({"input": "x", "tools": [{"type": "function"}]}),
            "tools[0].name",
            "missing_required_parameter",
        ),
        (
            json!({"input": "x", "tools": [{"type": "function", "name": "f"}], "tool_choice": "sometimes"}),
            "tool_choice",
            "invalid_value",
        ),
        (
            json!({"input": "x", "max_output_tokens": 0}),
            "max_output_tokens",
            "invalid_value",
        ),
        (
            json!({"input": "x", "stream": "yes"}),
            "stream",
            "invalid_type",
        ),
        (
            json!({"input": "x", "previous_response_id": 9}),
            "previous_response_id",
            "invalid_type",
        ),
    ];
    for (body, param, code) in cases {
        let err = parse_request(&object(body.clone())).unwrap_err();
        assert_eq!((err.param.as_str(), err.code), (param, code), "{body}");
    }
}

#[test]
fn the_stream_is_openais_event_sequence_with_sequence_numbers() {
    let (events, encoder) = stream_of(
        head(&[]),
        vec![
            ChatEvent::TextDelta {
                text: "Let me ".into(),
            },
            ChatEvent::TextDelta {
                text: "look.".into(),
            },
            ChatEvent::ToolCallStart {
                index: 0,
                id: "call_9".into(),
                name: "exec_command".into(),
            },
            ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                arguments: "{\"cmd\":".into(),
            },
            ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                arguments: "\"ls\"}".into(),
            },
            ChatEvent::ToolCallEnd { index: 0 },
            ChatEvent::Usage {
                usage: Usage {
                    prompt_tokens: 10,
                    completion_tokens: 4,
                },
            },
            ChatEvent::Finish {
                reason: FinishReason::ToolCalls,
            },
        ],
    );
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let numbers: Vec<u64> = events
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, (0..15).collect::<Vec<u64>>());
    let completed = &events[14]["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"][0]["content"][0]["text"], "Let me look.");
    assert_eq!(completed["output"][1]["type"], "function_call");
    assert_eq!(completed["output"][1]["call_id"], "call_9");
    assert_eq!(completed["output"][1]["arguments"], "{\"cmd\":\"ls\"}");
    assert_eq!(completed["usage"]["total_tokens"], 14);
    let answer = encoder.answer().unwrap();
    assert_eq!(answer.text, "Let me look.");
    assert_eq!(answer.tool_calls[0].arguments, "{\"cmd\":\"ls\"}");
}

#[test]
fn a_custom_tools_call_is_a_custom_tool_call_with_its_input() {
    let (events, _) = stream_of(
        head(&["apply_patch"]),
        vec![
            ChatEvent::ToolCallStart {
                index: 0,
                id: "call_p".into(),
                name: "apply_patch".into(),
            },
            ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                arguments: json!({"input": "*** Begin Patch"}).to_string(),
            },
            ChatEvent::Finish {
                reason: FinishReason::ToolCalls,
            },
        ],
    );
    let done = events
        .iter()
        .find(|e| e["type"] == "response.output_item.done")
        .unwrap();
    assert_eq!(done["item"]["type"], "custom_tool_call");
    assert_eq!(done["item"]["input"], "*** Begin Patch");
    assert!(
        events
            .iter()
            .all(|e| e["type"] != "response.function_call_arguments.delta")
    );
}

#[test]
fn a_whole_response_and_a_cut_off_one() {
    let whole = ChatResponse {
        text: "Hi.".into(),
        tool_calls: vec![],
        usage: Some(Usage {
            prompt_tokens: 3,
            completion_tokens: 1,
        }),
        finish: Some(FinishReason::Length),
    };
    let object = serde_json::to_value(response_object(&head(&[]), &whole)).unwrap();
    assert_eq!(object["object"], "response");
    assert_eq!(object["status"], "incomplete");
    assert_eq!(object["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(object["output"][0]["content"][0]["text"], "Hi.");

    let mut encoder = StreamEncoder::new(head(&[]));
    encoder.encode(&ChatEvent::TextDelta { text: "Hal".into() });
    let failed = records(&encoder.fail("upstream_error", "the backend broke off"));
    assert_eq!(failed[0]["type"], "response.failed");
    assert_eq!(failed[0]["response"]["error"]["code"], "upstream_error");
    assert!(encoder.answer().is_none(), "a failed answer is not stored");
}

#[test]
fn every_record_of_a_stream_is_the_object_openais_api_sends() {
    let (records, _) = stream_of(
        head(&[]),
        vec![
            ChatEvent::TextDelta { text: "Hi".into() },
            ChatEvent::ToolCallStart {
                index: 0,
                id: "call_1".into(),
                name: "exec".into(),
            },
            ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                arguments: "{}".into(),
            },
            ChatEvent::Usage {
                usage: Usage {
                    prompt_tokens: 10,
                    completion_tokens: 4,
                },
            },
            ChatEvent::Finish {
                reason: FinishReason::ToolCalls,
            },
        ],
    );
    // The item ids are random: taken from the records that name them first.
    let msg = records[2]["item"]["id"].as_str().unwrap().to_owned();
    let fc = records[8]["item"]["id"].as_str().unwrap().to_owned();
    let response = |status: &str, output: Value, usage: Value| {
        json!({"id": "resp_1", "object": "response", "created_at": 7, "status": status,
            "error": null, "incomplete_details": null, "model": "gpt-test", "output": output,
            "parallel_tool_calls": true, "previous_response_id": null, "store": false,
            "usage": usage})
    };
    let text_part = |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
    let message = json!({"id": msg, "type": "message", "status": "completed", "role": "assistant",
        "content": [text_part("Hi")]});
    let call = |status: &str, arguments: &str| {
        json!({"id": fc, "type": "function_call", "status": status, "call_id": "call_1",
            "name": "exec", "arguments": arguments})
    };
    let usage = json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 4, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 14});
    let expected = [
        json!({"response": response("in_progress", json!([]), Value::Null)}),
        json!({"response": response("in_progress", json!([]), Value::Null)}),
        json!({"output_index": 0, "item": {"id": msg, "type": "message",
            "status": "in_progress", "role": "assistant", "content": []}}),
        json!({"item_id": msg, "output_index": 0, "content_index": 0, "part": text_part("")}),
        json!({"item_id": msg, "output_index": 0, "content_index": 0, "delta": "Hi"}),
        json!({"item_id": msg, "output_index": 0, "content_index": 0, "text": "Hi"}),
        json!({"item_id": msg, "output_index": 0, "content_index": 0, "part": text_part("Hi")}),
        json!({"output_index": 0, "item": message}),
        json!({"output_index": 1, "item": call("in_progress", "")}),
        json!({"item_id": fc, "output_index": 1, "delta": "{}"}),
        json!({"item_id": fc, "output_index": 1, "arguments": "{}"}),
        json!({"output_index": 1, "item": call("completed", "{}")}),
        json!({"response": response("completed", json!([message, call("completed", "{}")]), usage)}),
    ];
    assert_eq!(records.len(), expected.len(), "{records:#?}");
    for (sequence, (record, mut expected)) in records.into_iter().zip(expected).enumerate() {
        expected["type"] = record["type"].clone();
        expected["sequence_number"] = json!(sequence);
        assert_eq!(record, expected, "record {sequence}");
    }
}
