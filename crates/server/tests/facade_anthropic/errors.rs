//! `/v1/messages` when something goes wrong: an upstream that refuses or
//! drops mid-stream, and bad requests, each answered in Anthropic's error
//! shape.

use bridge_testkit::{MockLlm, MockReply};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{
    STREAM_LIMIT, chat_requests, hello, names, no_retries, overhead_ms, post_messages, sse_records,
};
use crate::support::{Setup, TestDaemon};

#[tokio::test]
async fn upstream_failures_before_the_answer_are_http_errors_in_anthropics_shape() {
    let cases = [
        (
            MockReply::Error {
                status: 429,
                body: "slow down".into(),
                retry_after_secs: Some(7),
            },
            429,
            "rate_limit_error",
        ),
        (MockReply::error(500, "boom"), 502, "api_error"),
    ];
    for (reply, status, kind) in cases {
        let mock = MockLlm::start(vec![reply]).await;
        let daemon = TestDaemon::with(no_retries(
            Setup::default().openai_backend(&mock.base_url()),
        ))
        .await;
        // Streaming asked: still a plain HTTP error, not a 200 stream.
        let response = post_messages(&daemon, &hello(true)).await;
        assert_eq!(response.status(), status, "{kind}");
        assert!(overhead_ms(&response) >= 0.0);
        if status == 429 {
            assert_eq!(response.headers()["retry-after"], "7");
        }
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], kind);
        assert!(body["error"]["message"].as_str().unwrap().contains("HTTP"));
        daemon.stop().await;
    }

    // Nothing listens on the upstream's port.
    let unreachable = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let daemon = TestDaemon::with(no_retries(Setup::default().openai_backend(&unreachable))).await;
    let response = post_messages(&daemon, &hello(false)).await;
    assert_eq!(response.status(), 503);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "overloaded_error");
    assert_eq!(body["error"]["code"], "backend_unavailable");
    daemon.stop().await;
}

#[tokio::test]
async fn an_upstream_that_drops_mid_stream_ends_the_stream_with_an_error_event() {
    let mock = MockLlm::start(vec![MockReply::DropAfter {
        chunks: vec!["partial".into()],
    }])
    .await;
    let daemon = TestDaemon::with(no_retries(
        Setup::default().openai_backend(&mock.base_url()),
    ))
    .await;

    let response = post_messages(&daemon, &hello(true)).await;
    assert_eq!(response.status(), 200);
    let records = sse_records(response).await;
    assert_eq!(
        names(&records),
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "error"
        ]
    );
    let error = &records[3].1["error"];
    assert_eq!(error["type"], "api_error");
    assert!(!error["message"].as_str().unwrap().is_empty());
    daemon.stop().await;
}

#[tokio::test]
async fn bad_requests_are_refused_with_anthropic_errors() {
    let mock = MockLlm::start(vec![]).await;
    let daemon = TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await;
    let user = json!([{"role": "user", "content": "hi"}]);
    let cases: Vec<(&str, String, u16, &str, &str)> = vec![
        (
            "text/plain",
            hello(false).to_string(),
            415,
            "invalid_request_error",
            "unsupported_media_type",
        ),
        (
            "application/json",
            "{\"model\": ".into(),
            400,
            "invalid_request_error",
            "invalid_json",
        ),
        (
            "application/json",
            "[1, 2]".into(),
            400,
            "invalid_request_error",
            "invalid_json",
        ),
        (
            "application/json",
            json!({"model": "m", "max_tokens": 5}).to_string(),
            400,
            "invalid_request_error",
            "missing_field",
        ),
        (
            "application/json",
            json!({"model": "m", "messages": user}).to_string(),
            400,
            "invalid_request_error",
            "missing_field",
        ),
        (
            "application/json",
            json!({"model": "m", "max_tokens": "ten", "messages": user}).to_string(),
            400,
            "invalid_request_error",
            "invalid_field",
        ),
        (
            "application/json",
            json!({"model": "m", "max_tokens": 5, "messages": {"role": "user"}}).to_string(),
            400,
            "invalid_request_error",
            "invalid_field",
        ),
        (
            "application/json",
            json!({"model": "m", "max_tokens": 5, "messages": [{"role": "tool", "content": "x"}]})
                .to_string(),
            400,
            "invalid_request_error",
            "invalid_field",
        ),
        (
            "application/json",
            json!({"model": "m", "max_tokens": 5, "messages": user, "stream": "yes"}).to_string(),
            400,
            "invalid_request_error",
            "invalid_field",
        ),
    ];
    for (content_type, body, status, kind, code) in cases {
        let response = daemon
            .http()
            .post(daemon.url("/v1/messages"))
            .header("x-api-key", &daemon.token)
            .header("content-type", content_type)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["type"], "error", "{body}");
        assert_eq!(error["error"]["type"], kind, "{body}");
        assert_eq!(error["error"]["code"], code, "{body}");
    }
    // The field at fault is named.
    let response = post_messages(&daemon, &json!({"model": "m", "messages": user})).await;
    let error: Value = response.json().await.unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("max_tokens:"),
        "{error}"
    );

    // No key, or a wrong one.
    let response = daemon
        .http()
        .post(daemon.url("/v1/messages"))
        .header("x-api-key", "wrong")
        .json(&hello(false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["x-should-retry"], "false");
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["type"], "authentication_error");

    // A huge body is refused from its declared length, before it is read.
    let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", daemon.port))
        .await
        .unwrap();
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nx-api-key: {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        daemon.port,
        daemon.token,
        64 * 1024 * 1024
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(STREAM_LIMIT, socket.read_to_end(&mut answer))
        .await
        .expect("the daemon answers without the body")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("\"request_too_large\""), "{answer}");

    assert!(
        chat_requests(&mock).is_empty(),
        "no bad request reached upstream"
    );
    daemon.stop().await;
}
