use serde_json::{Map, Value, json};

use super::*;
use crate::{ChatResponse, FinishReason, Usage};

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn openai(body: Value) -> Result<InboundRequest, InboundError> {
    parse_request(&object(body), UpstreamFormat::OpenAiChat)
}

/// A Claude Code-shaped conversation: system blocks, a tool round trip
/// with two parallel calls, a failed call, thinking in history.
fn conversation() -> Value {
    json!({
        "model": "claude-sonnet-4",
        "max_tokens": 1024,
        "stream": true,
        "system": [{"type": "text", "text": "You are Claude Code."},
                   {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "read a and b"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_call_1", "name": "Read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_call_2", "name": "Read", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "text", "text": "here:"},
                {"type": "tool_result", "tool_use_id": "toolu_call_1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "toolu_call_2", "is_error": true,
                 "content": [{"type": "text", "text": "no such file"}, {"type": "image",
                   "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]},
            ]},
        ],
        "tools": [{"name": "Read", "description": "Reads a file",
                   "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
        "temperature": 0.5,
        "top_p": 0.9,
        "top_k": 40,
        "stop_sequences": ["END"],
        "metadata": {"user_id": "u-1"},
        "thinking": {"type": "enabled", "budget_tokens": 2000},
    })
}

#[test]
fn a_tool_round_trip_maps_to_openai_messages_in_order() {
    let parsed = openai(conversation()).unwrap();
    assert!(parsed.stream);
    assert_eq!(parsed.model.as_deref(), Some("claude-sonnet-4"));
    let chat = parsed.chat;
    // The ids lose the `toolu_` the facade gave the upstream's own ids.
    assert_eq!(
        chat.messages,
        vec![
            Message::text(Role::System, "You are Claude Code.\n\nBe brief."),
            Message::text(Role::User, "read a and b"),
            Message {
                role: Role::Assistant,
                content: Some("Reading.".into()),
                tool_calls: vec![
                    ToolCall {
                        id: "call_1".into(),
                        name: "Read".into(),
                        arguments: r#"{"path":"a"}"#.into()
                    },
                    ToolCall {
                        id: "call_2".into(),
                        name: "Read".into(),
                        arguments: "{}".into()
                    },
                ],
                tool_call_id: None,
            },
            Message::tool_result("call_1", "A"),
            Message::tool_result(
                "call_2",
                format!("[tool error] no such file\n\n{OMITTED_IMAGE}")
            ),
            Message::text(Role::User, "here:"),
        ]
    );
    assert_eq!(chat.max_tokens, Some(1024));
    assert_eq!(chat.temperature, Some(0.5));
    assert_eq!(chat.stop, vec!["END".to_owned()]);
    assert_eq!(chat.tools.len(), 1);
    assert_eq!(chat.tools[0].name, "Read");
    assert_eq!(chat.tools[0].description, "Reads a file");
    assert_eq!(
        chat.tools[0].parameters["properties"]["path"]["type"],
        "string"
    );
    // Only what an OpenAI-wire upstream understands, translated.
    assert_eq!(
        serde_json::to_value(&chat.extra).unwrap(),
        json!({"top_p": 0.9, "tool_choice": "required", "parallel_tool_calls": false})
    );
}

#[test]
fn an_anthropic_upstream_gets_every_field_but_model_and_stream_natively() {
    let body = conversation();
    let parsed = parse_request(&object(body.clone()), UpstreamFormat::Anthropic).unwrap();
    let extra = serde_json::to_value(&parsed.chat.extra).unwrap();
    for field in [
        "system",
        "messages",
        "tools",
        "tool_choice",
        "top_p",
        "top_k",
        "metadata",
        "thinking",
    ] {
        assert_eq!(extra[field], body[field], "{field}");
    }
    for modelled in [
        "model",
        "stream",
        "max_tokens",
        "temperature",
        "stop_sequences",
    ] {
        assert!(extra.get(modelled).is_none(), "{modelled}");
    }
    // Types the OpenAI mapping refuses pass to the native upstream.
    let mut body = conversation();
    body["messages"][0]["content"] = json!([{"type": "search_result", "source": "x"}]);
    body["tools"] = json!([{"type": "web_search_20250305", "name": "web_search"}]);
    let parsed = parse_request(&object(body.clone()), UpstreamFormat::Anthropic).unwrap();
    assert!(parsed.chat.tools.is_empty());
    assert_eq!(parsed.chat.extra["tools"], body["tools"]);
}

#[test]
fn tool_choice_variants_map_to_openai_and_need_tools() {
    let tool = json!([{"name": "t", "input_schema": {"type": "object"}}]);
    for (choice, expected) in [
        (json!({"type": "auto"}), json!("auto")),
        (json!({"type": "none"}), json!("none")),
        (
            json!({"type": "tool", "name": "t"}),
            json!({"type": "function", "function": {"name": "t"}}),
        ),
    ] {
        let body = json!({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
            "tools": tool, "tool_choice": choice});
        let parsed = openai(body).unwrap();
        assert_eq!(parsed.chat.extra["tool_choice"], expected);
        assert!(!parsed.chat.extra.contains_key("parallel_tool_calls"));
    }
    let body = json!({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
        "tool_choice": {"type": "auto"}});
    assert!(openai(body).unwrap().chat.extra.is_empty());
}

#[test]
fn images_and_documents_become_placeholders_for_text_only_upstreams() {
    let body = json!({"max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
        {"type": "document", "source": {"type": "text", "data": "z"}},
        {"type": "text", "text": "what is this?"},
    ]}]});
    let parsed = openai(body).unwrap();
    assert_eq!(
        parsed.chat.messages,
        vec![Message::text(
            Role::User,
            format!("{OMITTED_IMAGE}\n\n{OMITTED_DOCUMENT}\n\nwhat is this?")
        )]
    );
}

/// What Claude Code 2.1.328 sends with its default settings: a system
/// message in the conversation, per-message `output_config`, per-block
/// `cache_control` and `citations`, a deferred tool, a tool search's
/// `tool_reference`, adaptive thinking, a server tool.
fn claude_code_default() -> Value {
    json!({
        "model": "claude-opus-4-7",
        "max_tokens": 32000,
        "stream": true,
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "high"},
        "context_management": {"edits": []},
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "find the tool", "cache_control": {"type": "ephemeral"}}]},
            {"role": "system", "content": "Today is Wednesday.", "output_config": {"effort": "low"}},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Searching.", "citations": null},
                {"type": "tool_use", "id": "toolu_01", "name": "ToolSearch", "input": {"query": "weather"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01",
                 "content": [{"type": "tool_reference", "tool_name": "mcp__weather__forecast"}]},
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            ]},
        ],
        "tools": [
            {"name": "ToolSearch", "input_schema": {"type": "object"}},
            {"name": "mcp__weather__forecast", "input_schema": {"type": "object"}, "defer_loading": true},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
        ],
    })
}

#[test]
fn claude_codes_default_request_is_accepted_and_what_is_left_out_is_named() {
    let parsed = openai(claude_code_default()).unwrap();
    let roles: Vec<Role> = parsed.chat.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::System,
            Role::Assistant,
            Role::Tool
        ]
    );
    assert_eq!(
        parsed.chat.messages[2].content.as_deref(),
        Some("Today is Wednesday.")
    );
    let result = parsed.chat.messages[4].content.as_deref().unwrap();
    assert!(result.contains("mcp__weather__forecast"), "{result}");
    let tools: Vec<&str> = parsed.chat.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["ToolSearch", "mcp__weather__forecast"]);
    assert_eq!(
        parsed.ignored,
        [
            "messages.3.content.1: a \"server_tool_use\" block",
            "tools.2: server tool \"web_search\" (web_search_20250305)",
        ]
    );
    // The native upstream takes it all and leaves nothing out.
    let native = parse_request(&object(claude_code_default()), UpstreamFormat::Anthropic).unwrap();
    assert!(native.ignored.is_empty());
    assert_eq!(
        native.chat.extra["messages"],
        claude_code_default()["messages"]
    );
}

#[test]
fn bad_input_names_the_field_and_the_problem() {
    let user = json!([{"role": "user", "content": "hi"}]);
    let cases = [
        (
            json!({"max_tokens": 5}),
            InboundErrorKind::Missing,
            "messages",
        ),
        (
            json!({"messages": user}),
            InboundErrorKind::Missing,
            "max_tokens",
        ),
        (
            json!({"max_tokens": 0, "messages": user}),
            InboundErrorKind::Invalid,
            "max_tokens",
        ),
        (
            json!({"max_tokens": "5", "messages": user}),
            InboundErrorKind::Invalid,
            "max_tokens",
        ),
        (
            json!({"max_tokens": 5, "messages": []}),
            InboundErrorKind::Invalid,
            "messages",
        ),
        (
            json!({"max_tokens": 5, "messages": "hi"}),
            InboundErrorKind::Invalid,
            "messages",
        ),
        (
            json!({"max_tokens": 5, "messages": user, "model": 3}),
            InboundErrorKind::Invalid,
            "model",
        ),
        (
            json!({"max_tokens": 5, "messages": user, "stream": "yes"}),
            InboundErrorKind::Invalid,
            "stream",
        ),
        (
            json!({"max_tokens": 5, "messages": user, "temperature": "hot"}),
            InboundErrorKind::Invalid,
            "temperature",
        ),
        (
            json!({"max_tokens": 5, "messages": user, "stop_sequences": [1]}),
            InboundErrorKind::Invalid,
            "stop_sequences.0",
        ),
        (
            json!({"max_tokens": 5, "messages": user, "system": 7}),
            InboundErrorKind::Invalid,
            "system",
        ),
        (
            json!({"max_tokens": 5, "messages": user, "system": [{"type": "image"}]}),
            InboundErrorKind::Invalid,
            "system.0.type",
        ),
        (
            json!({"max_tokens": 5, "messages": [{"role": "tool", "content": "x"}]}),
            InboundErrorKind::Invalid,
            "messages.0.role",
        ),
        (
            json!({"max_tokens": 5, "messages": [{"role": "system", "content": 7}]}),
            InboundErrorKind::Invalid,
            "messages.0.content",
        ),
        (
            json!({"max_tokens": 5, "messages": [{"content": "x"}]}),
            InboundErrorKind::Missing,
            "messages.0.role",
        ),
        (
            json!({"max_tokens": 5, "messages": [{"role": "user"}]}),
            InboundErrorKind::Missing,
            "messages.0.content",
        ),
        (
            json!({"max_tokens": 5, "messages": [{"role": "user", "content": [{"text": "x"}]}]}),
            InboundErrorKind::Missing,
            "messages.0.content.0.type",
        ),
        (
            json!({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}),
            InboundErrorKind::Missing,
            "messages.0.content.0.tool_use_id",
        ),
        (
            json!({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "b"}]}]}),
            InboundErrorKind::Invalid,
            "messages.0.content.0.type",
        ),
        (
            json!({"max_tokens": 5, "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "b", "input": "{}"}]}]}),
            InboundErrorKind::Invalid,
            "messages.0.content.0.input",
        ),
        (
            json!({"max_tokens": 5, "messages": user, "tools": [{"name": "t"}]}),
            InboundErrorKind::Missing,
            "tools.0.input_schema",
        ),
        (
            json!({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_reference"}]}]}),
            InboundErrorKind::Missing,
            "messages.0.content.0.tool_name",
        ),
        (
            json!({"max_tokens": 5, "messages": user, "tool_choice": {"type": "tool"}}),
            InboundErrorKind::Missing,
            "tool_choice.name",
        ),
        (
            json!({"max_tokens": 5, "messages": user, "tool_choice": {"type": "maybe"}}),
            InboundErrorKind::Invalid,
            "tool_choice.type",
        ),
        (
            json!({"max_tokens": 5, "messages": user, "metadata": "u"}),
            InboundErrorKind::Invalid,
            "metadata",
        ),
        (
            json!({"max_tokens": 5, "messages": user, "top_k": -1}),
            InboundErrorKind::Invalid,
            "top_k",
        ),
    ];
    for (body, kind, param) in cases {
        let err = openai(body.clone()).unwrap_err();
        assert_eq!(
            (err.kind, err.param.as_str()),
            (kind, param),
            "{body}: {err}"
        );
        assert!(!err.message.is_empty());
    }
}

#[test]
fn the_message_object_has_text_parsed_tool_input_stop_reason_and_usage() {
    let response = ChatResponse {
        text: "Reading.".into(),
        tool_calls: vec![
            ToolCall {
                id: "call_1".into(),
                name: "Read".into(),
                arguments: r#"{"path":"a"}"#.into(),
            },
            ToolCall {
                id: "call_2".into(),
                name: "Read".into(),
                arguments: "".into(),
            },
            ToolCall {
                id: "call_3".into(),
                name: "Read".into(),
                arguments: "{\"path\": ".into(),
            },
        ],
        usage: Some(Usage {
            prompt_tokens: 12,
            completion_tokens: 7,
        }),
        // Some OpenAI-compatible servers say "stop" after tool calls.
        finish: Some(FinishReason::Stop),
    };
    assert_eq!(
        response_object("msg_1", "gpt-4o", &response),
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "gpt-4o",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_call_1", "name": "Read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_call_2", "name": "Read", "input": {}},
                {"type": "tool_use", "id": "toolu_call_3", "name": "Read", "input": {"raw_arguments": "{\"path\": "}},
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 12, "output_tokens": 7},
        })
    );
}

#[test]
fn stop_reasons_follow_the_finish_reason() {
    assert_eq!(stop_reason(Some(&FinishReason::Stop), false), "end_turn");
    assert_eq!(stop_reason(None, false), "end_turn");
    assert_eq!(stop_reason(Some(&FinishReason::Length), true), "max_tokens");
    assert_eq!(
        stop_reason(Some(&FinishReason::ToolCalls), true),
        "tool_use"
    );
    assert_eq!(
        stop_reason(Some(&FinishReason::ContentFilter), false),
        "refusal"
    );
    assert_eq!(
        stop_reason(Some(&FinishReason::Other("stop_sequence".into())), false),
        "stop_sequence"
    );
    let empty = response_object("m", "x", &ChatResponse::default());
    assert_eq!(empty["content"], json!([]));
    assert_eq!(
        empty["usage"],
        json!({"input_tokens": 0, "output_tokens": 0})
    );
}

#[test]
fn token_estimates_grow_with_text_tools_and_images_and_need_no_max_tokens() {
    let small = object(json!({"messages": [{"role": "user", "content": "hi"}]}));
    let base = estimate_input_tokens(&small).unwrap();
    assert_eq!(base, 1 + 4);
    let long = object(json!({"messages": [{"role": "user", "content": "x".repeat(400)}]}));
    assert_eq!(estimate_input_tokens(&long).unwrap(), 100 + 4);
    let image = object(json!({"messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "text", "text": "hi"}]}]}));
    // The placeholder's own text is not counted, the image is.
    assert_eq!(estimate_input_tokens(&image).unwrap(), 1_600 + 1 + 4);
    let err = estimate_input_tokens(&object(json!({"max_tokens": 5}))).unwrap_err();
    assert_eq!(err.param, "messages");
}
