//! `POST /v1/messages` (Anthropic's format) over OpenAI-wire and Anthropic
//! upstreams: streaming, whole answers, tool use, errors, bad input, and
//! the official `anthropic` Python package as a client.

use std::time::Duration;

use bridge_testkit::{MockLlm, MockReply, MockToolCall, RecordedRequest};
use serde_json::{Value, json};

use crate::support::{Setup, TestDaemon};

mod claude_code;
mod clients;
mod errors;

/// Every stream must end well within this.
const STREAM_LIMIT: Duration = Duration::from_secs(15);

/// No retries: error tests see the upstream's first answer.
fn no_retries(setup: Setup) -> Setup {
    setup
        .env("COPILOT_MAX_RETRIES", "0")
        .env("COPILOT_TRANSIENT_RETRIES", "0")
}

/// `POST /v1/messages` as an Anthropic SDK sends it (x-api-key).
async fn post_messages(daemon: &TestDaemon, body: &Value) -> reqwest::Response {
    daemon
        .http()
        .post(daemon.url("/v1/messages"))
        .header("x-api-key", &daemon.token)
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap()
}

/// The SSE records of a whole body: (event name, data).
async fn sse_records(response: reqwest::Response) -> Vec<(String, Value)> {
    let text = tokio::time::timeout(STREAM_LIMIT, response.text())
        .await
        .expect("the stream ends")
        .unwrap();
    text.split("\n\n")
        .filter(|record| !record.trim().is_empty())
        .map(|record| {
            let mut name = String::new();
            let mut data = Value::Null;
            for line in record.lines() {
                if let Some(value) = line.strip_prefix("event: ") {
                    name = value.to_owned();
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(value).unwrap();
                }
            }
            assert_eq!(data["type"], name, "data.type repeats the event name");
            (name, data)
        })
        .collect()
}

/// The chat requests the upstream received; the daemon's health probes
/// (`GET /v1/models`) left out.
fn chat_requests(mock: &MockLlm) -> Vec<RecordedRequest> {
    mock.requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .collect()
}

fn names(records: &[(String, Value)]) -> Vec<&str> {
    records.iter().map(|(name, _)| name.as_str()).collect()
}

fn overhead_ms(response: &reqwest::Response) -> f64 {
    response
        .headers()
        .get("x-bridge-overhead-ms")
        .expect("x-bridge-overhead-ms is set")
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

fn hello(stream: bool) -> Value {
    json!({
        "model": "claude-sonnet-test",
        "max_tokens": 100,
        "stream": stream,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "hi"}],
    })
}

#[tokio::test]
async fn streamed_text_from_an_openai_upstream_is_an_anthropic_event_stream() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hel", "lo!"])]).await;
    let daemon = TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await;

    let response = post_messages(&daemon, &hello(true)).await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert!(overhead_ms(&response) >= 0.0);
    let records = sse_records(response).await;
    assert_eq!(
        names(&records),
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let start = &records[0].1["message"];
    assert_eq!(start["model"], "claude-sonnet-test");
    assert_eq!(start["role"], "assistant");
    assert!(start["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(
        records[1].1["content_block"],
        json!({"type": "text", "text": ""})
    );
    assert_eq!(
        records[2].1["delta"],
        json!({"type": "text_delta", "text": "Hel"})
    );
    assert_eq!(
        records[3].1["delta"],
        json!({"type": "text_delta", "text": "lo!"})
    );
    assert_eq!(records[5].1["delta"]["stop_reason"], "end_turn");

    // What the OpenAI-wire upstream was asked.
    let sent = &chat_requests(&mock)[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    // A name the backend does not serve: its own model answers, under the
    // name the client asked for.
    assert_eq!(sent.body["model"], "mock-model");
    assert_eq!(sent.body["max_tokens"], 100);
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_whole_message_has_anthropics_shape_and_the_requested_model() {
    let mock = MockLlm::start(vec![MockReply::text("Hello there.")]).await;
    let daemon = TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await;

    let response = post_messages(&daemon, &hello(false)).await;
    assert_eq!(response.status(), 200);
    assert!(overhead_ms(&response) >= 0.0);
    let message: Value = response.json().await.unwrap();
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["model"], "claude-sonnet-test");
    assert!(message["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": "Hello there."}])
    );
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(message["stop_sequence"], Value::Null);
    assert!(message["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert!(message["usage"]["output_tokens"].as_u64().unwrap() > 0);
    daemon.stop().await;
}

#[tokio::test]
async fn tool_use_round_trips_through_an_openai_upstream() {
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: Some("Let me look.".into()),
            calls: vec![MockToolCall {
                id: "call_1".into(),
                name: "read_file".into(),
                argument_chunks: vec!["{\"path\":".into(), "\"a.txt\"}".into()],
            }],
        },
        MockReply::text("It says hi."),
    ])
    .await;
    let daemon = TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await;
    let tools = json!([{
        "name": "read_file",
        "description": "Reads a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }]);

    let response = post_messages(
        &daemon,
        &json!({
            "model": "m", "max_tokens": 200, "stream": true, "tools": tools,
            "tool_choice": {"type": "auto"},
            "messages": [{"role": "user", "content": "what is in a.txt?"}],
        }),
    )
    .await;
    assert_eq!(response.status(), 200);
    let records = sse_records(response).await;
    let starts: Vec<&Value> = records
        .iter()
        .filter(|(name, _)| name == "content_block_start")
        .map(|(_, data)| &data["content_block"])
        .collect();
    assert_eq!(
        starts,
        [
            &json!({"type": "text", "text": ""}),
            &json!({"type": "tool_use", "id": "toolu_call_1", "name": "read_file", "input": {}}),
        ]
    );
    let input: String = records
        .iter()
        .filter(|(_, data)| data["delta"]["type"] == "input_json_delta")
        .map(|(_, data)| {
            assert_eq!(data["index"], 1);
            data["delta"]["partial_json"].as_str().unwrap()
        })
        .collect();
    assert_eq!(input, r#"{"path":"a.txt"}"#);
    let delta = records.iter().find(|(name, _)| name == "message_delta");
    assert_eq!(delta.unwrap().1["delta"]["stop_reason"], "tool_use");
    assert_eq!(records.last().unwrap().0, "message_stop");

    // The client runs the tool and sends its result, as Claude Code does.
    let response = post_messages(
        &daemon,
        &json!({
            "model": "m", "max_tokens": 200, "tools": tools,
            "messages": [
                {"role": "user", "content": "what is in a.txt?"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "toolu_call_1", "name": "read_file", "input": {"path": "a.txt"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_call_1", "content": [{"type": "text", "text": "hi"}]},
                    {"type": "text", "text": "Summarise."},
                ]},
            ],
        }),
    )
    .await;
    assert_eq!(response.status(), 200);
    let message: Value = response.json().await.unwrap();
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": "It says hi."}])
    );

    let requests = chat_requests(&mock);
    assert_eq!(
        requests[0].body["tools"],
        json!([{"type": "function", "function": {
            "name": "read_file", "description": "Reads a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        }}])
    );
    assert_eq!(requests[0].body["tool_choice"], "auto");
    assert_eq!(
        requests[1].body["messages"],
        json!([
            {"role": "user", "content": "what is in a.txt?"},
            {"role": "assistant", "content": "Let me look.", "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}},
            ]},
            {"role": "tool", "content": "hi", "tool_call_id": "call_1"},
            {"role": "user", "content": "Summarise."},
        ])
    );
    daemon.stop().await;
}

#[tokio::test]
async fn an_anthropic_upstream_receives_the_request_natively() {
    let mock = MockLlm::start(vec![
        MockReply::chunks(["Hi", " there"]),
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new("toolu_1", "Read", r#"{"path":"x"}"#)],
        },
    ])
    .await;
    let daemon = TestDaemon::with(Setup::default().anthropic_backend(&mock.base_url())).await;
    let system = json!([
        {"type": "text", "text": "You are Claude Code."},
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
    ]);
    let messages = json!([{"role": "user", "content": [
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
    ]}]);

    let response = post_messages(
        &daemon,
        &json!({
            "model": "claude-mock", "max_tokens": 321, "stream": true,
            "system": system, "messages": messages,
            "metadata": {"user_id": "user-1"}, "top_k": 5,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
        }),
    )
    .await;
    assert_eq!(response.status(), 200);
    let records = sse_records(response).await;
    let text: String = records
        .iter()
        .filter_map(|(_, data)| data["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "Hi there");
    assert_eq!(records.last().unwrap().0, "message_stop");

    let sent = &chat_requests(&mock)[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.body["system"], system);
    assert_eq!(sent.body["messages"], messages);
    assert_eq!(sent.body["metadata"], json!({"user_id": "user-1"}));
    assert_eq!(sent.body["top_k"], 5);
    assert_eq!(
        sent.body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    assert_eq!(sent.body["max_tokens"], 321);
    assert_eq!(sent.body["model"], "claude-mock");
    assert_eq!(sent.body["stream"], true);
    // The upstream sees its own key, never the bridge's token.
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test-upstream-key"));

    let response = post_messages(
        &daemon,
        &json!({"model": "claude-mock", "max_tokens": 50,
                "messages": [{"role": "user", "content": "read x"}]}),
    )
    .await;
    let message: Value = response.json().await.unwrap();
    assert_eq!(
        message["content"],
        json!([{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "x"}}])
    );
    assert_eq!(message["stop_reason"], "tool_use");
    daemon.stop().await;
}

#[tokio::test]
async fn count_tokens_estimates_without_asking_the_upstream() {
    let mock = MockLlm::start(vec![]).await;
    let daemon = TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await;
    let count = |text: String| {
        let daemon = &daemon;
        async move {
            let response = daemon
                .http()
                .post(daemon.url("/v1/messages/count_tokens"))
                .header("x-api-key", &daemon.token)
                .json(&json!({"model": "m", "messages": [{"role": "user", "content": text}]}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            let body: Value = response.json().await.unwrap();
            body["input_tokens"].as_u64().unwrap()
        }
    };
    let short = count("hi".into()).await;
    let long = count("word ".repeat(400)).await;
    assert!(short > 0);
    assert_eq!(long, 2000 / 4 + 4);
    let response = daemon
        .http()
        .post(daemon.url("/v1/messages/count_tokens"))
        .header("x-api-key", &daemon.token)
        .json(&json!({"model": "m"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert!(chat_requests(&mock).is_empty());
    daemon.stop().await;
}
