//! `POST /v1/chat/completions` against the mock upstream: streaming and
//! whole answers, tool calls, what reaches the upstream, disconnects.

use std::time::Duration;

use bridge_testkit::{MockLlm, MockReply, MockToolCall, RecordedRequest};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::{Setup, TestDaemon};

/// A daemon whose backend is the mock, without retries so each scripted
/// failure is seen once.
pub(crate) async fn daemon_for(mock: &MockLlm) -> TestDaemon {
    TestDaemon::with(no_retries(
        Setup::default().openai_backend(&mock.base_url()),
    ))
    .await
}

pub(crate) fn no_retries(setup: Setup) -> Setup {
    setup
        .env("COPILOT_MAX_RETRIES", "0")
        .env("COPILOT_TRANSIENT_RETRIES", "0")
}

/// The chat requests the mock received (the daemon also lists models).
pub(crate) fn chat_requests(mock: &MockLlm) -> Vec<RecordedRequest> {
    mock.requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .collect()
}

pub(crate) fn chat(stream: bool, text: &str) -> Value {
    json!({"model": "mock-model", "stream": stream, "messages": [{"role": "user", "content": text}]})
}

/// The `data:` payloads of an SSE body, in order (`[DONE]` as a string).
pub(crate) fn sse_payloads(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|event| event.strip_prefix("data: "))
        .map(|data| {
            if data == "[DONE]" {
                json!("[DONE]")
            } else {
                serde_json::from_str(data).unwrap_or_else(|err| panic!("bad chunk {data}: {err}"))
            }
        })
        .collect()
}

pub(crate) fn overhead_ms(response: &reqwest::Response) -> f64 {
    let header = response
        .headers()
        .get("x-bridge-overhead-ms")
        .expect("x-bridge-overhead-ms is set")
        .to_str()
        .unwrap();
    let ms: f64 = header.parse().unwrap();
    assert!((0.0..10_000.0).contains(&ms), "overhead {ms}");
    ms
}

/// The joined text deltas of chunks.
fn streamed_text(chunks: &[Value]) -> String {
    chunks
        .iter()
        .filter_map(|chunk| chunk.pointer("/choices/0/delta/content"))
        .filter_map(Value::as_str)
        .collect()
}

#[tokio::test]
async fn a_streamed_answer_is_openai_chunks_ending_with_done() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hel", "lo", " there"])]).await;
    let daemon = daemon_for(&mock).await;
    let mut body = chat(true, "hi");
    body["stream_options"] = json!({"include_usage": true});
    let response = daemon.post_json("/v1/chat/completions", &body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    overhead_ms(&response);
    let payloads = sse_payloads(&response.text().await.unwrap());
    assert_eq!(payloads.last(), Some(&json!("[DONE]")));
    let chunks = &payloads[..payloads.len() - 1];
    let id = chunks[0]["id"].as_str().unwrap();
    assert!(id.starts_with("chatcmpl-"), "{id}");
    for chunk in chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["id"], id);
        assert_eq!(chunk["model"], "mock-model");
    }
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    assert_eq!(streamed_text(chunks), "Hello there");
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    let usage = &chunks[chunks.len() - 1];
    assert_eq!(usage["choices"], json!([]));
    assert!(usage["usage"]["completion_tokens"].as_u64().unwrap() > 0);
    daemon.stop().await;
}

#[tokio::test]
async fn a_whole_answer_is_one_completion_object() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hel", "lo"])]).await;
    let daemon = daemon_for(&mock).await;
    let response = daemon
        .post_json("/v1/chat/completions", &chat(false, "hi"))
        .await;
    assert_eq!(response.status(), 200);
    overhead_ms(&response);
    let completion: Value = response.json().await.unwrap();
    assert_eq!(completion["object"], "chat.completion");
    assert_eq!(completion["model"], "mock-model");
    assert_eq!(completion["choices"][0]["message"]["role"], "assistant");
    assert_eq!(completion["choices"][0]["message"]["content"], "Hello");
    assert_eq!(completion["choices"][0]["finish_reason"], "stop");
    let usage = &completion["usage"];
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
    );
    // A client that wants the whole answer gets it asked for whole: no
    // event stream to decode on either side.
    let sent = chat_requests(&mock);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].body["stream"], json!(false));
    assert!(
        sent[0].body.get("stream_options").is_none(),
        "{}",
        sent[0].body
    );
    assert_eq!(sent[0].header("accept"), Some("application/json"));
    daemon.stop().await;
}

fn two_calls() -> MockReply {
    MockReply::ToolCalls {
        text: Some("Let me look.".into()),
        calls: vec![
            MockToolCall {
                id: "call_a".into(),
                name: "read_file".into(),
                argument_chunks: vec!["{\"path\":".into(), "\"a.txt\"}".into()],
            },
            MockToolCall::new("call_b", "list_files", "{}"),
        ],
    }
}

#[tokio::test]
async fn tool_calls_stream_as_openai_tool_call_deltas() {
    let mock = MockLlm::start(vec![two_calls()]).await;
    let daemon = daemon_for(&mock).await;
    let response = daemon
        .post_json("/v1/chat/completions", &chat(true, "read a.txt"))
        .await;
    assert_eq!(response.status(), 200);
    let payloads = sse_payloads(&response.text().await.unwrap());
    assert_eq!(payloads.last(), Some(&json!("[DONE]")));
    let chunks = &payloads[..payloads.len() - 1];
    assert_eq!(streamed_text(chunks), "Let me look.");
    let deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|chunk| chunk.pointer("/choices/0/delta/tool_calls/0"))
        .collect();
    assert_eq!(
        *deltas[0],
        json!({"index": 0, "id": "call_a", "type": "function",
               "function": {"name": "read_file", "arguments": ""}})
    );
    let arguments = |index: u64| -> String {
        deltas
            .iter()
            .filter(|delta| delta["index"] == index)
            .filter_map(|delta| delta.pointer("/function/arguments").and_then(Value::as_str))
            .collect()
    };
    assert_eq!(arguments(0), "{\"path\":\"a.txt\"}");
    assert_eq!(arguments(1), "{}");
    assert!(
        deltas
            .iter()
            .any(|delta| delta["index"] == 1 && delta["id"] == "call_b")
    );
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn tool_calls_are_in_the_completion_object() {
    let mock = MockLlm::start(vec![two_calls()]).await;
    let daemon = daemon_for(&mock).await;
    let completion: Value = daemon
        .post_json("/v1/chat/completions", &chat(false, "read a.txt"))
        .await
        .json()
        .await
        .unwrap();
    let choice = &completion["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Let me look.");
    assert_eq!(
        choice["message"]["tool_calls"],
        json!([
            {"id": "call_a", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}},
            {"id": "call_b", "type": "function",
             "function": {"name": "list_files", "arguments": "{}"}},
        ])
    );
    daemon.stop().await;
}

#[tokio::test]
async fn messages_tools_and_unknown_fields_reach_an_openai_upstream_unchanged() {
    let mock = MockLlm::start(vec![MockReply::text("ok")]).await;
    let daemon = daemon_for(&mock).await;
    let messages = json!([
        {"role": "developer", "content": "be brief"},
        {"role": "user", "name": "ann", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "look", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a cat"},
    ]);
    let tools = json!([{"type": "function", "function": {
        "name": "look", "strict": true,
        "parameters": {"type": "object", "properties": {}, "additionalProperties": false},
    }}]);
    let body = json!({
        "model": "mock-model",
        "messages": messages,
        "tools": tools,
        "tool_choice": "auto",
        "seed": 42,
        "response_format": {"type": "json_object"},
        "logit_bias": {"50256": -100},
        "user": "u-7",
        "max_completion_tokens": 64,
        "temperature": 0.3,
    });
    let response = daemon.post_json("/v1/chat/completions", &body).await;
    assert_eq!(response.status(), 200);
    let sent = &chat_requests(&mock)[0].body;
    assert_eq!(sent["messages"], messages);
    assert_eq!(sent["tools"], tools);
    for field in [
        "tool_choice",
        "seed",
        "response_format",
        "logit_bias",
        "user",
    ] {
        assert_eq!(sent[field], body[field], "{field}");
    }
    assert_eq!(sent["max_completion_tokens"], 64);
    assert!(sent.get("max_tokens").is_none(), "{sent}");
    assert_eq!(sent["temperature"], 0.3);
    assert_eq!(sent["model"], "mock-model");
    daemon.stop().await;
}

#[tokio::test]
async fn an_anthropic_upstream_gets_mapped_fields_and_not_openai_only_ones() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Bon", "jour"])]).await;
    let daemon = TestDaemon::with(no_retries(
        Setup::default().anthropic_backend(&mock.base_url()),
    ))
    .await;
    let body = json!({
        "model": "claude-mock",
        "stream": true,
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
        ],
        "tools": [{"type": "function", "function": {"name": "look", "description": "Looks"}}],
        "tool_choice": "required",
        "top_p": 0.5,
        "seed": 42,
        "logprobs": true,
    });
    let response = daemon.post_json("/v1/chat/completions", &body).await;
    assert_eq!(response.status(), 200);
    let payloads = sse_payloads(&response.text().await.unwrap());
    assert_eq!(streamed_text(&payloads[..payloads.len() - 1]), "Bonjour");
    let sent = &chat_requests(&mock)[0].body;
    assert_eq!(chat_requests(&mock)[0].path, "/v1/messages");
    assert_eq!(sent["system"], "be brief");
    assert_eq!(sent["top_p"], 0.5);
    assert_eq!(sent["tool_choice"], json!({"type": "any"}));
    assert_eq!(sent["tools"][0]["name"], "look");
    assert!(sent.get("seed").is_none(), "{sent}");
    assert!(sent.get("logprobs").is_none(), "{sent}");

    let image = json!({"model": "claude-mock", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
    ]}]});
    let refused = daemon.post_json("/v1/chat/completions", &image).await;
    assert_eq!(refused.status(), 400);
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["error"]["code"], "unsupported_content");
    assert_eq!(error["error"]["param"], "messages[0].content[0]");
    assert_eq!(chat_requests(&mock).len(), 1, "nothing sent upstream");
    daemon.stop().await;
}

#[tokio::test]
async fn a_client_that_hangs_up_cancels_the_upstream_request() {
    let chunks: Vec<String> = (0..100).map(|i| format!("w{i} ")).collect();
    let mock = MockLlm::start(vec![MockReply::Slow {
        chunks,
        delay_ms: 100,
    }])
    .await;
    let daemon = daemon_for(&mock).await;
    let response = daemon
        .post_json("/v1/chat/completions", &chat(true, "go"))
        .await;
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("w0 ") {
        let bytes = body.next().await.expect("a chunk").unwrap();
        seen.push_str(&String::from_utf8_lossy(&bytes));
    }
    assert_eq!(
        mock.open_chat_bodies(),
        1,
        "the upstream is still answering"
    );
    drop(body);
    // The whole answer would take 10 s; the upstream connection must close
    // as soon as the bridge notices the client is gone.
    tokio::time::timeout(Duration::from_secs(3), mock.chat_bodies_closed())
        .await
        .expect("the upstream request is cancelled");
    daemon.stop().await;
}

#[tokio::test]
async fn a_stream_cut_by_the_upstream_ends_with_an_error_chunk_and_done() {
    let mock = MockLlm::start(vec![MockReply::DropAfter {
        chunks: vec!["partial ".into(), "answer".into()],
    }])
    .await;
    let daemon = daemon_for(&mock).await;
    let read = async {
        let response = daemon
            .post_json("/v1/chat/completions", &chat(true, "go"))
            .await;
        assert_eq!(response.status(), 200);
        response.text().await.unwrap()
    };
    let text = tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("the stream ends");
    let payloads = sse_payloads(&text);
    let (done, rest) = payloads.split_last().unwrap();
    assert_eq!(*done, json!("[DONE]"));
    let (error, chunks) = rest.split_last().unwrap();
    assert_eq!(streamed_text(chunks), "partial answer");
    assert_eq!(error["error"]["type"], "server_error");
    assert_eq!(error["error"]["code"], "upstream_invalid_response");
    assert!(
        chunks
            .iter()
            .all(|chunk| chunk["choices"][0]["finish_reason"].is_null()),
        "no finish reason on a cut answer"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_single_prompt_backend_gets_one_system_and_dialog_prompt() {
    let mock = MockLlm::start(vec![MockReply::text("fine")]).await;
    let config = format!(
        "default_backend = \"legacy\"\n\n[backends.legacy]\nprovider = \"openai\"\n\
         base_url = \"{}/v1\"\nmodel = \"mock-model\"\nstyle = \"single-prompt\"\nhistory_turns = 2\n",
        mock.base_url()
    );
    let daemon = TestDaemon::with(no_retries(Setup::default().config_toml(config))).await;
    let body = json!({
        "model": "legacy/mock-model",
        "stream": true,
        "messages": [
            {"role": "system", "content": "old rules"},
            {"role": "user", "content": "u1"},
            {"role": "system", "content": "new rules"},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": [{"type": "text", "text": "u2"}]},
        ],
        "tools": [{"type": "function", "function": {"name": "look"}}],
        "seed": 1,
    });
    let response = daemon.post_json("/v1/chat/completions", &body).await;
    assert_eq!(response.status(), 200);
    let payloads = sse_payloads(&response.text().await.unwrap());
    assert_eq!(streamed_text(&payloads[..payloads.len() - 1]), "fine");
    let sent = &chat_requests(&mock)[0].body;
    assert_eq!(
        sent["messages"],
        json!([{"role": "user", "content": "[SYSTEM]\nnew rules\n[DIALOG]\nassistant: a1\nuser: u2\n"}])
    );
    assert_eq!(sent["model"], "mock-model");
    assert!(sent.get("tools").is_none(), "{sent}");
    assert!(sent.get("seed").is_none(), "{sent}");
    daemon.stop().await;
}

#[tokio::test]
async fn a_client_that_gives_up_on_a_whole_answer_cancels_the_upstream_request() {
    let chunks: Vec<String> = (0..100).map(|i| format!("w{i} ")).collect();
    let mock = MockLlm::start(vec![MockReply::Slow {
        chunks,
        delay_ms: 100,
    }])
    .await;
    let daemon = daemon_for(&mock).await;
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let gave_up = impatient
        .post(daemon.url("/v1/chat/completions"))
        .bearer_auth(&daemon.token)
        .json(&chat(false, "go"))
        .send()
        .await;
    assert!(gave_up.unwrap_err().is_timeout());
    // The bridge streams from the upstream even for a whole answer; the
    // 10 s of chunks must stop when the client is gone.
    tokio::time::timeout(Duration::from_secs(3), mock.chat_bodies_closed())
        .await
        .expect("the upstream request is cancelled");
    daemon.stop().await;
}
