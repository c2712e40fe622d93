#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use super::*;

fn parse(value: serde_json::Value) -> Result<ProviderMessage, ParseError> {
    parse_provider_message(&value.to_string())
}

#[test]
fn the_specs_hello_example_parses_with_every_field() {
    let hello = json!({
        "type": "hello", "name": "my-provider", "protocolVersion": 2, "session": "abc123",
        "instance": "tab-a3f8", "reconnectToken": "tok-xyz789",
        "startup_context": "Provider loaded.", "metadata": {"url": "https://app.example.com"},
        "tools": [{"name": "my_tool", "description": "Does something useful", "timeout": 15000,
                   "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}],
        "hooks": {
            "onPreToolUse": [{"match": {"tool": "shell", "args": "git push"}, "action": "gate",
                              "gateId": "check-before-push"}],
            "transforms": {"code_change_rules": {"action": "callback"},
                           "custom_instructions": {"action": "append", "content": "pnpm"}}
        },
        "subscribe": ["user.message"], "context": "CI passing",
        "concurrency": {"max": 1, "scope": "instance"}
    });
    let ProviderMessage::Hello(hello) = parse(hello).unwrap() else {
        panic!("not a hello")
    };
    assert_eq!(hello.name, "my-provider");
    assert_eq!(hello.startup_context.as_deref(), Some("Provider loaded."));
    assert_eq!(hello.tools[0].timeout, Some(15000));
    let hooks = hello.hooks.unwrap();
    assert_eq!(hooks.on_pre_tool_use[0].action, HookAction::Gate);
    assert_eq!(
        hooks.on_pre_tool_use[0].gate_id.as_deref(),
        Some("check-before-push")
    );
    assert_eq!(
        hooks.transforms["custom_instructions"]
            .as_ref()
            .unwrap()
            .action,
        TransformAction::Append
    );
    assert_eq!(hello.concurrency.unwrap().scope, ConcurrencyScope::Instance);
}

#[test]
fn unknown_fields_are_ignored() {
    let message =
        parse(json!({"type": "goodbye", "reason": "bye", "futureField": [1, 2]})).unwrap();
    assert_eq!(
        message,
        ProviderMessage::Goodbye(Goodbye {
            reason: Some("bye".into())
        })
    );
}

#[test]
fn unknown_types_are_their_own_error_with_the_type_named() {
    let err = parse(json!({"type": "telemetry.v3", "x": 1})).unwrap_err();
    assert_eq!(err.code(), ErrorCode::UnknownType);
    assert_eq!(err.type_name.as_deref(), Some("telemetry.v3"));
}

/// An error quotes at most a short excerpt of what it refuses: a 1 MB
/// `type` (or a 1 MB value of the wrong type) must not come back whole.
#[test]
fn errors_quote_a_bounded_excerpt_of_huge_input() {
    let huge = "t".repeat(1024 * 1024);
    let unknown = parse(json!({"type": huge})).unwrap_err();
    assert_eq!(unknown.code(), ErrorCode::UnknownType);
    let wrong_type =
        parse(json!({"type": "hello", "name": "p", "protocolVersion": huge})).unwrap_err();
    assert_eq!(wrong_type.code(), ErrorCode::InvalidJson);
    let bad_variant = parse(json!({"type": "push", "event": "x", "level": huge})).unwrap_err();
    for err in [unknown, wrong_type, bad_variant] {
        assert!(err.message.len() < 600, "{} bytes", err.message.len());
        assert!(err.message.contains("ttt"), "{}", err.message);
        let reply = ErrorMessage::new(err.code(), err.message)
            .reply_to(err.type_name.unwrap_or_default())
            .session_id(&huge);
        assert!(
            GatewayMessage::Error(reply).to_json().len() < 1200,
            "the error reply stays small"
        );
    }
}

#[test]
fn malformed_frames_are_invalid_json_with_a_reason() {
    let cases = [
        ("{not json", "not valid JSON"),
        ("[1,2]", "must be a JSON object"),
        (r#"{"token":"x"}"#, "no \"type\""),
        (r#"{"type":7}"#, "must be a string"),
        (
            r#"{"type":"hello","name":"p","protocolVersion":"two"}"#,
            "invalid hello message",
        ),
        (r#"{"type":"tools.update","tools":[]}"#, "requestId"),
        (
            r#"{"type":"push","event":"x","level":"loud"}"#,
            "invalid push message",
        ),
    ];
    for (text, expected) in cases {
        let err = parse_provider_message(text).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidJson, "{text}");
        assert!(err.message.contains(expected), "{text}: {}", err.message);
    }
}

#[test]
fn every_provider_message_type_round_trips() {
    let examples = [
        json!({"type": "auth", "token": "ptk-1"}),
        json!({"type": "auth.confirm", "code": "847293"}),
        json!({"type": "hello", "name": "p", "protocolVersion": 2}),
        json!({"type": "goodbye"}),
        json!({"type": "session.ready", "sessionId": "s"}),
        json!({"type": "tool.result", "id": "c-1", "data": "ok"}),
        json!({"type": "tool.progress", "id": "c-1", "message": "60%"}),
        json!({"type": "gate.result", "callId": "g", "decision": "context", "reason": "r"}),
        json!({"type": "transform.result", "callId": "t", "content": "c"}),
        json!({"type": "push", "event": "e", "level": "keep"}),
        json!({"type": "tools.update", "requestId": "r", "tools": [], "remove": ["x"]}),
        json!({"type": "hooks.update", "requestId": "r", "transforms": {"a": null}}),
        json!({"type": "context.update", "requestId": "r", "context": "c"}),
        json!({"type": "filter.set", "requestId": "r", "stream": "s",
               "rules": [{"match": ".*", "outcome": "drop"}]}),
        json!({"type": "stream.query", "queryId": "q", "streams": ["a@b"], "last": 5}),
        json!({"type": "shutdown.ready", "sessionId": "s"}),
    ];
    assert_eq!(examples.len(), 16);
    for example in examples {
        let message = parse(example.clone()).unwrap();
        assert_eq!(message.type_name(), example["type"].as_str().unwrap());
        let again = parse(serde_json::to_value(&message).unwrap()).unwrap();
        assert_eq!(again, message);
    }
}

#[test]
fn gateway_messages_serialize_to_the_specs_shapes() {
    let ack = GatewayMessage::Ack(Ack {
        request_id: "req-42".into(),
        session_id: "abc123".into(),
        revision: 3,
    });
    assert_eq!(
        serde_json::to_value(&ack).unwrap(),
        json!({"type": "ack", "requestId": "req-42", "sessionId": "abc123", "revision": 3})
    );
    let error = GatewayMessage::Error(
        ErrorMessage::new(ErrorCode::ToolConflict, "taken")
            .reply_to("tools.update")
            .provider_id("p-1")
            .session_id("abc123"),
    );
    assert_eq!(
        serde_json::to_value(&error).unwrap(),
        json!({"type": "error", "code": "TOOL_CONFLICT", "message": "taken",
               "replyTo": "tools.update", "providerId": "p-1", "sessionId": "abc123"})
    );
    let lifecycle = GatewayMessage::SessionLifecycle(SessionLifecycle {
        session_id: "s".into(),
        state: LifecycleState::ShutdownPending,
        deadline: Some(10000),
    });
    assert_eq!(
        serde_json::to_value(&lifecycle).unwrap(),
        json!({"type": "session.lifecycle", "sessionId": "s", "state": "shutdown.pending",
               "deadline": 10000})
    );
    assert!(ErrorCode::AuthFailed.is_fatal() && ErrorCode::UnsupportedVersion.is_fatal());
    assert!(!ErrorCode::RateLimited.is_fatal());
    assert!(!ErrorCode::ReconnectExpired.is_fatal());
    assert_eq!(
        serde_json::to_value(ErrorCode::ReconnectExpired).unwrap(),
        ErrorCode::ReconnectExpired.as_str()
    );
}
