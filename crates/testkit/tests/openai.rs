//! OpenAI chat completions: every reply kind, streaming and not.

use std::time::{Duration, Instant};

use bridge_testkit::{MockLlm, MockReply, MockToolCall};
use serde_json::{Value, json};

use crate::http_client::{post_json, send, timed_post};

fn chat_request(stream: bool) -> Value {
    json!({
        "model": "gpt-4o-mini",
        "stream": stream,
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "say hello world"},
        ],
    })
}

/// The concatenated `delta.content` of a chat stream.
fn streamed_text(chunks: &[Value]) -> String {
    chunks
        .iter()
        .filter_map(|chunk| {
            chunk
                .pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
        })
        .collect()
}

#[tokio::test]
async fn streams_text_one_delta_per_chunk_then_done() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hel", "lo", " world"])]).await;
    let response = post_json(mock.address(), "/v1/chat/completions", &chat_request(true)).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    assert!(response.complete);
    assert!(
        response.body.ends_with("data: [DONE]\n\n"),
        "{}",
        response.body
    );
    let chunks = response.sse_data();
    // role chunk, three content chunks, finish chunk
    assert_eq!(chunks.len(), 5, "{chunks:?}");
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "gpt-4o-mini");
        assert!(
            chunk["id"]
                .as_str()
                .is_some_and(|id| id.starts_with("chatcmpl-"))
        );
        assert!(chunk.get("usage").is_none(), "usage only when asked for");
    }
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(chunks[1]["choices"][0]["delta"]["content"], "Hel");
    assert_eq!(chunks[1]["choices"][0]["finish_reason"], Value::Null);
    assert_eq!(streamed_text(&chunks), "Hello world");
    assert_eq!(chunks[4]["choices"][0]["finish_reason"], "stop");
}

#[tokio::test]
async fn usage_chunk_only_with_include_usage() {
    let mock = MockLlm::start(vec![MockReply::text("one two three")]).await;
    let mut request = chat_request(true);
    request["stream_options"] = json!({"include_usage": true});
    let chunks = post_json(mock.address(), "/v1/chat/completions", &request)
        .await
        .sse_data();
    let last = chunks.last().expect("chunks");
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"]["completion_tokens"], 3);
    assert_eq!(last["usage"]["prompt_tokens"], 5);
    assert_eq!(last["usage"]["total_tokens"], 8);
    assert_eq!(
        chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
        "stop"
    );
}

#[tokio::test]
async fn non_streaming_text_is_joined_with_usage() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hel", "lo"])]).await;
    let response = post_json(mock.address(), "/chat/completions", &chat_request(false)).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let completion = response.json();
    assert_eq!(completion["object"], "chat.completion");
    assert_eq!(completion["choices"][0]["message"]["role"], "assistant");
    assert_eq!(completion["choices"][0]["message"]["content"], "Hello");
    assert!(
        completion["choices"][0]["message"]
            .get("tool_calls")
            .is_none()
    );
    assert_eq!(completion["choices"][0]["finish_reason"], "stop");
    assert_eq!(completion["usage"]["prompt_tokens"], 5);
}

fn two_calls() -> MockReply {
    MockReply::ToolCalls {
        text: Some("Let me look.".to_owned()),
        calls: vec![
            MockToolCall {
                id: "call_1".to_owned(),
                name: "read_file".to_owned(),
                argument_chunks: vec!["{\"path\":".to_owned(), "\"a.txt\"}".to_owned()],
            },
            MockToolCall::new("call_2", "list_dir", "{}"),
        ],
    }
}

#[tokio::test]
async fn streams_tool_calls_with_id_and_name_only_first() {
    let mock = MockLlm::start(vec![two_calls()]).await;
    let chunks = post_json(mock.address(), "/v1/chat/completions", &chat_request(true))
        .await
        .sse_data();
    assert_eq!(streamed_text(&chunks), "Let me look.");
    let call_deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|chunk| chunk.pointer("/choices/0/delta/tool_calls/0"))
        .collect();
    assert_eq!(call_deltas.len(), 5, "{call_deltas:?}");
    assert_eq!(
        *call_deltas[0],
        json!({"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": ""}})
    );
    assert_eq!(
        *call_deltas[1],
        json!({"index": 0, "function": {"arguments": "{\"path\":"}})
    );
    assert_eq!(
        *call_deltas[2],
        json!({"index": 0, "function": {"arguments": "\"a.txt\"}"}})
    );
    assert_eq!(call_deltas[3]["id"], "call_2");
    assert_eq!(call_deltas[3]["index"], 1);
    assert_eq!(call_deltas[4]["function"]["arguments"], "{}");
    let last = chunks.last().expect("chunks");
    assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn non_streaming_tool_calls_in_message() {
    let mock = MockLlm::start(vec![two_calls()]).await;
    let completion = post_json(mock.address(), "/v1/chat/completions", &chat_request(false))
        .await
        .json();
    let message = &completion["choices"][0]["message"];
    assert_eq!(message["content"], "Let me look.");
    assert_eq!(
        message["tool_calls"][0],
        json!({"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}})
    );
    assert_eq!(message["tool_calls"][1]["function"]["name"], "list_dir");
    assert_eq!(completion["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn rate_limit_error_has_retry_after_and_openai_body() {
    let mock = MockLlm::start(vec![MockReply::Error {
        status: 429,
        body: "Rate limit reached".to_owned(),
        retry_after_secs: Some(7),
    }])
    .await;
    let response = post_json(mock.address(), "/v1/chat/completions", &chat_request(true)).await;
    assert_eq!(response.status, 429);
    assert_eq!(response.header("retry-after"), Some("7"));
    let error = response.json();
    assert_eq!(error["error"]["message"], "Rate limit reached");
    assert_eq!(error["error"]["code"], "rate_limit_exceeded");
    assert!(error["error"]["type"].is_string());
}

#[tokio::test]
async fn server_error_without_retry_after() {
    let mock = MockLlm::start(vec![MockReply::error(500, "boom")]).await;
    let response = post_json(mock.address(), "/v1/chat/completions", &chat_request(false)).await;
    assert_eq!(response.status, 500);
    assert_eq!(response.header("retry-after"), None);
    assert_eq!(response.json()["error"]["type"], "server_error");
}

#[tokio::test]
async fn raw_reply_is_sent_byte_for_byte() {
    let mock = MockLlm::start(vec![MockReply::Raw {
        status: 502,
        content_type: "text/html".to_owned(),
        body_chunks: vec!["<html>Bad ".to_owned(), "Gateway</html>".to_owned()],
    }])
    .await;
    let response = post_json(mock.address(), "/v1/chat/completions", &chat_request(true)).await;
    assert_eq!(response.status, 502);
    assert_eq!(response.header("content-type"), Some("text/html"));
    assert_eq!(response.body, "<html>Bad Gateway</html>");
}

#[tokio::test]
async fn raw_reply_can_be_malformed_sse() {
    let garbage = "data: {\"choices\": [\n\ndata: [DONE]\n\n";
    let mock = MockLlm::start(vec![MockReply::Raw {
        status: 200,
        content_type: "text/event-stream".to_owned(),
        body_chunks: vec![garbage.to_owned()],
    }])
    .await;
    let response = post_json(mock.address(), "/v1/chat/completions", &chat_request(true)).await;
    assert_eq!(response.body, garbage);
}

#[tokio::test]
async fn slow_reply_waits_before_each_chunk() {
    let mock = MockLlm::start(vec![
        MockReply::Slow {
            chunks: vec!["a".to_owned(), "b".to_owned(), "c".to_owned()],
            delay_ms: 80,
        },
        MockReply::Slow {
            chunks: vec!["a".to_owned(), "b".to_owned()],
            delay_ms: 80,
        },
    ])
    .await;
    let started = Instant::now();
    let response = post_json(mock.address(), "/v1/chat/completions", &chat_request(true)).await;
    assert!(
        started.elapsed() >= Duration::from_millis(240),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(streamed_text(&response.sse_data()), "abc");
    assert!(response.complete);

    let started = Instant::now();
    let completion = post_json(mock.address(), "/v1/chat/completions", &chat_request(false))
        .await
        .json();
    assert!(
        started.elapsed() >= Duration::from_millis(160),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(completion["choices"][0]["message"]["content"], "ab");
}

#[tokio::test]
async fn drop_after_cuts_the_stream_without_done() {
    let mock = MockLlm::start(vec![
        MockReply::DropAfter {
            chunks: vec!["par".to_owned(), "tial".to_owned()],
        },
        MockReply::DropAfter {
            chunks: vec!["partial".to_owned()],
        },
    ])
    .await;
    let response = post_json(mock.address(), "/v1/chat/completions", &chat_request(true)).await;
    assert_eq!(response.status, 200);
    assert!(!response.complete, "the HTTP body must not end cleanly");
    assert!(!response.body.contains("[DONE]"), "{}", response.body);
    let chunks = response.sse_data();
    assert_eq!(streamed_text(&chunks), "partial");
    assert!(
        chunks
            .iter()
            .all(|chunk| chunk["choices"][0]["finish_reason"].is_null())
    );

    let response = post_json(mock.address(), "/v1/chat/completions", &chat_request(false)).await;
    assert!(!response.complete);
    assert!(
        serde_json::from_str::<Value>(&response.body).is_err(),
        "body must be cut: {}",
        response.body
    );
}

#[tokio::test]
async fn empty_script_echoes_last_user_message() {
    let mock = MockLlm::start(Vec::new()).await;
    let request = json!({"model": "m", "stream": true, "messages": [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ignored"},
        {"role": "user", "content": [{"type": "text", "text": "echo "}, {"type": "text", "text": "me please"}]},
    ]});
    let chunks = post_json(mock.address(), "/v1/chat/completions", &request)
        .await
        .sse_data();
    assert_eq!(streamed_text(&chunks), "echo me please");
    assert!(chunks.len() > 3, "echo streams word by word: {chunks:?}");

    let mut request = request;
    request["stream"] = json!(false);
    let completion = post_json(mock.address(), "/v1/chat/completions", &request)
        .await
        .json();
    assert_eq!(
        completion["choices"][0]["message"]["content"],
        "echo me please"
    );
}

#[tokio::test]
async fn script_is_consumed_in_order_then_echoes_and_push_appends() {
    let mock = MockLlm::start(vec![MockReply::text("one")]).await;
    mock.push(MockReply::text("two"));
    assert_eq!(mock.remaining(), 2);
    let mut answers = Vec::new();
    for _ in 0..3 {
        let completion = post_json(mock.address(), "/v1/chat/completions", &chat_request(false))
            .await
            .json();
        answers.push(completion["choices"][0]["message"]["content"].clone());
    }
    assert_eq!(
        answers,
        vec![json!("one"), json!("two"), json!("say hello world")]
    );
    assert_eq!(mock.remaining(), 0);
}

#[tokio::test]
async fn azure_deployment_path_is_served_and_query_recorded() {
    let mock = MockLlm::start(vec![MockReply::text("azure")]).await;
    let path = "/openai/deployments/gpt4/chat/completions?api-version=2024-10-21";
    let completion = post_json(mock.address(), path, &chat_request(false))
        .await
        .json();
    assert_eq!(completion["choices"][0]["message"]["content"], "azure");
    let recorded = mock.requests();
    assert_eq!(
        recorded[0].path,
        "/openai/deployments/gpt4/chat/completions"
    );
    assert_eq!(recorded[0].query.as_deref(), Some("api-version=2024-10-21"));
}

#[tokio::test]
async fn records_method_path_headers_and_body() {
    let mock = MockLlm::start(vec![MockReply::text("ok")]).await;
    let body = chat_request(false);
    send(
        mock.address(),
        "POST",
        "/v1/chat/completions",
        &[
            ("Authorization", "Bearer sk-test"),
            ("content-type", "application/json"),
        ],
        Some(body.to_string().as_bytes()),
    )
    .await;
    let rejected = send(
        mock.address(),
        "POST",
        "/v1/chat/completions",
        &[],
        Some(b"not json"),
    )
    .await;
    assert_eq!(rejected.status, 400);
    assert_eq!(rejected.json()["error"]["type"], "invalid_request_error");
    let recorded = mock.requests();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0].method, "POST");
    assert_eq!(recorded[0].path, "/v1/chat/completions");
    assert_eq!(recorded[0].query, None);
    assert_eq!(recorded[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(recorded[0].body, body);
    assert_eq!(recorded[1].body, Value::Null);
}

#[tokio::test]
async fn slow_stream_sends_headers_and_role_before_the_first_delay() {
    let mock = MockLlm::start(vec![MockReply::Slow {
        chunks: vec!["a".to_owned(), "b".to_owned()],
        delay_ms: 300,
    }])
    .await;
    let (first_bytes, closed) =
        timed_post(mock.address(), "/v1/chat/completions", &chat_request(true)).await;
    assert!(first_bytes < Duration::from_millis(250), "{first_bytes:?}");
    assert!(closed >= Duration::from_millis(600), "{closed:?}");
}
