use serde_json::{Value, json};

use super::*;

fn parse(body: Value) -> Result<InboundRequest, InboundError> {
    match body {
        Value::Object(map) => parse_request(map),
        other => panic!("test body must be an object: {other}"),
    }
}

fn refusal(body: Value) -> (String, &'static str) {
    let err = parse(body).expect_err("the body is refused");
    (err.param, err.code)
}

#[test]
fn parses_messages_of_every_role_tools_and_sampling_fields() {
    let inbound = parse(json!({
        "model": "gpt-4o",
        "stream": true,
        "stream_options": {"include_usage": true},
        "temperature": 0.2,
        "max_tokens": 50,
        "stop": "END",
        "messages": [
            {"role": "developer", "content": "be brief"},
            {"role": "user", "content": [
                {"type": "text", "text": "line one"},
                {"type": "text", "text": "line two"},
            ]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
        ],
        "tools": [{"type": "function", "function": {"name": "read", "description": "Reads",
                   "parameters": {"type": "object"}}}],
    }))
    .unwrap();
    assert!(inbound.stream);
    assert!(inbound.include_usage);
    let request = &inbound.request;
    assert_eq!(request.model.as_deref(), Some("gpt-4o"));
    assert_eq!(request.temperature, Some(0.2));
    assert_eq!(request.max_tokens, Some(50));
    assert_eq!(request.stop, vec!["END".to_owned()]);
    assert_eq!(
        request.messages,
        vec![
            Message::text(Role::System, "be brief"),
            Message::text(Role::User, "line one\nline two"),
            Message {
                role: Role::Assistant,
                content: None,
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    arguments: "{\"path\":\"a\"}".into(),
                }],
                tool_call_id: None,
            },
            Message::tool_result("call_1", "hello"),
        ]
    );
    assert_eq!(
        request.tools,
        vec![ToolDefinition {
            name: "read".into(),
            description: "Reads".into(),
            parameters: json!({"type": "object"}),
        }]
    );
    assert!(request.extra.is_empty(), "{:?}", request.extra);
    assert!(inbound.beyond_normalized().is_none());
}

#[test]
fn unknown_fields_are_kept_unchanged_in_extra_and_modelled_ones_are_not() {
    let inbound = parse(json!({
        "messages": [{"role": "user", "content": "hi"}],
        "seed": 7,
        "response_format": {"type": "json_object"},
        "logit_bias": null,
        "n": 1,
        "stream": false,
    }))
    .unwrap();
    let extra = &inbound.request.extra;
    assert_eq!(extra.get("seed"), Some(&json!(7)));
    assert_eq!(
        extra.get("response_format"),
        Some(&json!({"type": "json_object"}))
    );
    assert_eq!(extra.get("logit_bias"), Some(&Value::Null));
    assert_eq!(extra.len(), 3, "{extra:?}");
    assert!(inbound.request.model.is_none());
    assert!(!inbound.stream);
}

#[test]
fn stop_may_be_an_array_and_max_completion_tokens_wins() {
    let inbound = parse(json!({
        "messages": [{"role": "user", "content": "hi"}],
        "stop": ["a", "b"],
        "max_tokens": 10,
        "max_completion_tokens": 20,
    }))
    .unwrap();
    assert_eq!(inbound.request.stop, vec!["a".to_owned(), "b".to_owned()]);
    assert_eq!(inbound.request.max_tokens, Some(20));
}

#[test]
fn native_sends_the_clients_messages_and_tools_verbatim() {
    let messages = json!([
        {"role": "user", "name": "ann", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ]},
    ]);
    let tools = json!([{"type": "function", "function": {"name": "f", "strict": true}}]);
    let inbound = parse(json!({
        "messages": messages,
        "tools": tools,
        "max_completion_tokens": 30,
        "top_p": 0.5,
    }))
    .unwrap();
    assert_eq!(
        inbound.beyond_normalized(),
        Some((
            "messages[0].content[1]",
            "a content part of type \"image_url\""
        ))
    );
    let refused = inbound.refuse_beyond_normalized("claude").unwrap();
    let native = inbound.native();
    assert_eq!(native.extra.get("messages"), Some(&messages));
    assert_eq!(native.extra.get("tools"), Some(&tools));
    assert_eq!(native.extra.get("top_p"), Some(&json!(0.5)));
    // Reasoning models refuse `max_tokens`: the client's name is kept.
    assert_eq!(native.max_tokens, None);
    assert_eq!(native.extra.get("max_completion_tokens"), Some(&json!(30)));
    assert_eq!(refused.code, "unsupported_content");
    assert_eq!(refused.param, "messages[0].content[1]");
}

#[test]
fn a_tool_without_parameters_takes_none_and_other_tool_types_are_noted() {
    let inbound = parse(json!({
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {"type": "function", "function": {"name": "now"}},
            {"type": "custom", "custom": {"name": "grammar"}},
        ],
    }))
    .unwrap();
    assert_eq!(inbound.request.tools.len(), 1);
    assert_eq!(
        inbound.request.tools[0].parameters,
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(inbound.beyond_normalized().unwrap().0, "tools[1]");
}

#[test]
fn bad_messages_are_refused_naming_the_field() {
    assert_eq!(
        refusal(json!({"model": "m"})),
        ("messages".into(), "missing_required_parameter")
    );
    assert_eq!(
        refusal(json!({"messages": "hi"})),
        ("messages".into(), "invalid_type")
    );
    assert_eq!(
        refusal(json!({"messages": []})),
        ("messages".into(), "invalid_value")
    );
    assert_eq!(
        refusal(json!({"messages": ["hi"]})),
        ("messages[0]".into(), "invalid_type")
    );
    assert_eq!(
        refusal(json!({"messages": [{"content": "hi"}]})),
        ("messages[0].role".into(), "missing_required_parameter")
    );
    assert_eq!(
        refusal(json!({"messages": [{"role": 1, "content": "hi"}]})),
        ("messages[0].role".into(), "invalid_type")
    );
    assert_eq!(
        refusal(json!({"messages": [{"role": "function", "content": "hi"}]})),
        ("messages[0].role".into(), "invalid_value")
    );
    assert_eq!(
        refusal(json!({"messages": [{"role": "user"}]})),
        ("messages[0].content".into(), "missing_required_parameter")
    );
    assert_eq!(
        refusal(json!({"messages": [{"role": "user", "content": 5}]})),
        ("messages[0].content".into(), "invalid_type")
    );
    assert_eq!(
        refusal(json!({"messages": [{"role": "user", "content": [{"text": "x"}]}]})),
        (
            "messages[0].content[0].type".into(),
            "missing_required_parameter"
        )
    );
    assert_eq!(
        refusal(json!({"messages": [{"role": "tool", "content": "x"}]})),
        (
            "messages[0].tool_call_id".into(),
            "missing_required_parameter"
        )
    );
    assert_eq!(
        refusal(json!({"messages": [
            {"role": "user", "content": "x"},
            {"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]},
        ]})),
        (
            "messages[1].tool_calls[0].function.name".into(),
            "missing_required_parameter"
        )
    );
}

#[test]
fn bad_sampling_and_streaming_fields_are_refused_naming_the_field() {
    let user = json!([{"role": "user", "content": "hi"}]);
    let with = |field: &str, value: Value| {
        let mut body = json!({"messages": user.clone()});
        body[field] = value;
        refusal(body)
    };
    assert_eq!(with("model", json!(3)), ("model".into(), "invalid_type"));
    assert_eq!(
        with("temperature", json!("hot")),
        ("temperature".into(), "invalid_type")
    );
    assert_eq!(
        with("max_tokens", json!(-1)),
        ("max_tokens".into(), "invalid_value")
    );
    assert_eq!(with("stop", json!([1])), ("stop[0]".into(), "invalid_type"));
    assert_eq!(
        with("stream", json!("yes")),
        ("stream".into(), "invalid_type")
    );
    assert_eq!(
        with("stream_options", json!({"include_usage": 1})),
        ("stream_options.include_usage".into(), "invalid_type")
    );
    assert_eq!(with("n", json!(2)), ("n".into(), "unsupported_value"));
    assert_eq!(with("tools", json!({})), ("tools".into(), "invalid_type"));
    assert_eq!(
        with("tools", json!([{"type": "function"}])),
        ("tools[0].function".into(), "missing_required_parameter")
    );
}

#[test]
fn anthropic_gets_mapped_equivalents_and_loses_the_rest() {
    let inbound = parse(json!({
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "parallel_tool_calls": false,
        "top_p": 0.9,
        "user": "u-1",
        "seed": 3,
        "logprobs": true,
    }))
    .unwrap();
    let (request, mut dropped) = inbound.for_anthropic().unwrap();
    dropped.sort();
    assert_eq!(dropped, vec!["logprobs".to_owned(), "seed".to_owned()]);
    assert_eq!(request.extra.get("top_p"), Some(&json!(0.9)));
    assert_eq!(
        request.extra.get("metadata"),
        Some(&json!({"user_id": "u-1"}))
    );
    assert_eq!(
        request.extra.get("tool_choice"),
        Some(&json!({"type": "tool", "name": "f", "disable_parallel_tool_use": true}))
    );
    assert_eq!(request.extra.len(), 3);
}

#[test]
fn anthropic_tool_choice_modes_map_and_need_tools() {
    let with_choice = |choice: Value, tools: bool| {
        let mut body =
            json!({"messages": [{"role": "user", "content": "hi"}], "tool_choice": choice});
        if tools {
            body["tools"] = json!([{"type": "function", "function": {"name": "f"}}]);
        }
        parse(body)
            .unwrap()
            .for_anthropic()
            .unwrap()
            .0
            .extra
            .get("tool_choice")
            .cloned()
    };
    assert_eq!(
        with_choice(json!("required"), true),
        Some(json!({"type": "any"}))
    );
    assert_eq!(
        with_choice(json!("none"), true),
        Some(json!({"type": "none"}))
    );
    assert_eq!(with_choice(json!("auto"), false), None);
}

#[test]
fn anthropic_refuses_tool_call_arguments_that_are_not_an_object() {
    let inbound = parse(json!({"messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "[1"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "r"},
    ]}))
    .unwrap();
    let err = inbound.for_anthropic().unwrap_err();
    assert_eq!(err.param, "messages[1].tool_calls[0].function.arguments");
    assert_eq!(err.code, "invalid_value");
}
