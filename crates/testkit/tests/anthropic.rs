//! Anthropic messages: event sequence, tool_use blocks, errors.

use bridge_testkit::{MockLlm, MockReply, MockToolCall};
use serde_json::{Value, json};

use crate::http_client::{post_json, send};

fn messages_request(stream: bool) -> Value {
    json!({
        "model": "claude-sonnet-4",
        "max_tokens": 1024,
        "stream": stream,
        "system": "be brief",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello there"}]}],
    })
}

fn event_names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(name, _)| name.as_str()).collect()
}

#[tokio::test]
async fn streams_text_as_text_deltas_in_the_real_event_order() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hi", " you"])]).await;
    let response = post_json(mock.address(), "/v1/messages", &messages_request(true)).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    let events = response.sse_events();
    assert_eq!(
        event_names(&events),
        vec![
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    for (name, data) in &events {
        assert_eq!(
            data["type"],
            name.as_str(),
            "data.type matches the event name"
        );
    }
    let start = &events[0].1["message"];
    assert_eq!(start["role"], "assistant");
    assert_eq!(start["model"], "claude-sonnet-4");
    assert_eq!(start["usage"]["input_tokens"], 4);
    assert_eq!(
        events[2].1["content_block"],
        json!({"type": "text", "text": ""})
    );
    assert_eq!(
        events[3].1["delta"],
        json!({"type": "text_delta", "text": "Hi"})
    );
    assert_eq!(events[4].1["delta"]["text"], " you");
    assert_eq!(events[6].1["delta"]["stop_reason"], "end_turn");
    assert_eq!(events[6].1["usage"]["output_tokens"], 2);
}

#[tokio::test]
async fn streams_tool_use_blocks_with_input_json_delta() {
    let mock = MockLlm::start(vec![MockReply::ToolCalls {
        text: None,
        calls: vec![MockToolCall {
            id: "toolu_1".to_owned(),
            name: "read_file".to_owned(),
            argument_chunks: vec!["{\"path\"".to_owned(), ":\"a.txt\"}".to_owned()],
        }],
    }])
    .await;
    let events = post_json(mock.address(), "/v1/messages", &messages_request(true))
        .await
        .sse_events();
    assert_eq!(
        event_names(&events),
        vec![
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    assert_eq!(
        events[2].1,
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}})
    );
    assert_eq!(
        events[3].1["delta"],
        json!({"type": "input_json_delta", "partial_json": "{\"path\""})
    );
    assert_eq!(events[4].1["delta"]["partial_json"], ":\"a.txt\"}");
    assert_eq!(events[6].1["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn text_then_tool_use_get_separate_block_indexes() {
    let mock = MockLlm::start(vec![MockReply::ToolCalls {
        text: Some("Reading.".to_owned()),
        calls: vec![MockToolCall::new("toolu_2", "list_dir", "{}")],
    }])
    .await;
    let events = post_json(mock.address(), "/v1/messages", &messages_request(true))
        .await
        .sse_events();
    let starts: Vec<&Value> = events
        .iter()
        .filter(|(name, _)| name == "content_block_start")
        .map(|(_, data)| data)
        .collect();
    assert_eq!(starts[0]["index"], 0);
    assert_eq!(starts[0]["content_block"]["type"], "text");
    assert_eq!(starts[1]["index"], 1);
    assert_eq!(starts[1]["content_block"]["type"], "tool_use");
}

#[tokio::test]
async fn non_streaming_message_has_text_and_tool_use_content() {
    let mock = MockLlm::start(vec![
        MockReply::chunks(["Hi", " you"]),
        MockReply::ToolCalls {
            text: Some("Reading.".to_owned()),
            calls: vec![MockToolCall::new(
                "toolu_3",
                "read_file",
                "{\"path\":\"a\"}",
            )],
        },
    ])
    .await;
    let message = post_json(mock.address(), "/v1/messages", &messages_request(false))
        .await
        .json();
    assert_eq!(message["type"], "message");
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": "Hi you"}])
    );
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(message["usage"]["input_tokens"], 4);

    let message = post_json(mock.address(), "/v1/messages", &messages_request(false))
        .await
        .json();
    assert_eq!(
        message["content"][1],
        json!({"type": "tool_use", "id": "toolu_3", "name": "read_file", "input": {"path": "a"}})
    );
    assert_eq!(message["stop_reason"], "tool_use");
}

#[tokio::test]
async fn errors_use_the_anthropic_shape() {
    let mock = MockLlm::start(vec![
        MockReply::Error {
            status: 429,
            body: "slow down".to_owned(),
            retry_after_secs: Some(3),
        },
        MockReply::error(529, "Overloaded"),
    ])
    .await;
    let response = post_json(mock.address(), "/v1/messages", &messages_request(true)).await;
    assert_eq!(response.status, 429);
    assert_eq!(response.header("retry-after"), Some("3"));
    assert_eq!(
        response.json(),
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
    );
    let response = post_json(mock.address(), "/v1/messages", &messages_request(false)).await;
    assert_eq!(response.status, 529);
    assert_eq!(response.json()["error"]["type"], "overloaded_error");
}

#[tokio::test]
async fn drop_after_ends_without_message_stop() {
    let mock = MockLlm::start(vec![MockReply::DropAfter {
        chunks: vec!["cut".to_owned()],
    }])
    .await;
    let response = post_json(mock.address(), "/v1/messages", &messages_request(true)).await;
    assert!(!response.complete);
    let events = response.sse_events();
    assert_eq!(
        events.last().map(|(name, _)| name.as_str()),
        Some("content_block_delta")
    );
}

#[tokio::test]
async fn empty_script_echoes_in_anthropic_format() {
    let mock = MockLlm::start(Vec::new()).await;
    let message = post_json(mock.address(), "/v1/messages", &messages_request(false))
        .await
        .json();
    assert_eq!(message["content"][0]["text"], "hello there");
}

#[tokio::test]
async fn malformed_body_is_400_and_keeps_the_script() {
    let mock = MockLlm::start(vec![MockReply::text("kept")]).await;
    let response = send(
        mock.address(),
        "POST",
        "/v1/messages",
        &[("content-type", "application/json")],
        Some(b"{\"model\": \"claude\", \"messages\": ["),
    )
    .await;
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["type"], "error");
    assert_eq!(response.json()["error"]["type"], "invalid_request_error");
    assert_eq!(mock.remaining(), 1);
    assert_eq!(mock.requests()[0].body, Value::Null);
}
