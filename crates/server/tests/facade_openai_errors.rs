//! `POST /v1/chat/completions` refusals: upstream failures, bad input and
//! authentication, each in OpenAI's error shape with its documented code.

use std::time::Duration;

use bridge_testkit::{MockLlm, MockReply};
use serde_json::{Value, json};

use crate::facade_openai::{
    chat, chat_requests, daemon_for, no_retries, overhead_ms, sse_payloads,
};
use crate::support::{Setup, TestDaemon};

/// Status, `error.code` and `error.param` of a refusal, checking the
/// shape on the way.
async fn refusal(response: reqwest::Response) -> (u16, String, Value) {
    let status = response.status().as_u16();
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    let body: Value = response.json().await.unwrap();
    let error = &body["error"];
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert!(error["type"].is_string(), "{body}");
    assert!(error.as_object().unwrap().contains_key("param"), "{body}");
    (
        status,
        error["code"].as_str().unwrap().to_owned(),
        error["param"].clone(),
    )
}

#[tokio::test]
async fn an_upstream_rate_limit_is_a_429_with_retry_after() {
    let mock = MockLlm::start(vec![MockReply::Error {
        status: 429,
        body: "slow down".into(),
        retry_after_secs: Some(7),
    }])
    .await;
    let daemon = daemon_for(&mock).await;
    let response = daemon
        .post_json("/v1/chat/completions", &chat(false, "hi"))
        .await;
    assert_eq!(response.headers()["retry-after"].to_str().unwrap(), "7");
    // A rate limit passes: the client may retry.
    assert!(response.headers().get("x-should-retry").is_none());
    overhead_ms(&response);
    let (status, code, _) = refusal(response).await;
    assert_eq!((status, code.as_str()), (429, "rate_limit_exceeded"));
    daemon.stop().await;
}

#[tokio::test]
async fn an_upstream_server_error_is_a_502_even_when_streaming() {
    let mock = MockLlm::start(vec![
        MockReply::error(500, "boom"),
        MockReply::error(500, "boom"),
    ])
    .await;
    let daemon = daemon_for(&mock).await;
    for stream in [false, true] {
        let response = daemon
            .post_json("/v1/chat/completions", &chat(stream, "hi"))
            .await;
        let (status, code, _) = refusal(response).await;
        assert_eq!((status, code.as_str()), (502, "upstream_error"), "{stream}");
    }
    daemon.stop().await;
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_503_backend_unavailable() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let setup = no_retries(Setup::default().openai_backend(&format!("http://127.0.0.1:{closed}")));
    let daemon = TestDaemon::with(setup).await;
    let response = daemon
        .post_json("/v1/chat/completions", &chat(true, "hi"))
        .await;
    // The backend may come back: worth a retry, after a pause.
    assert_eq!(response.headers()["retry-after"], "2");
    assert!(response.headers().get("x-should-retry").is_none());
    let (status, code, _) = refusal(response).await;
    assert_eq!((status, code.as_str()), (503, "backend_unavailable"));
    daemon.stop().await;
}

#[tokio::test]
async fn without_a_backend_the_answer_is_a_503() {
    let daemon = TestDaemon::start().await;
    let response = daemon
        .post_json("/v1/chat/completions", &chat(false, "hi"))
        .await;
    overhead_ms(&response);
    // Nothing to send it to until the configuration changes: the SDKs
    // (Claude Code, Codex) give up at once instead of retrying for minutes.
    assert_eq!(response.headers()["x-should-retry"], "false");
    let (status, code, _) = refusal(response).await;
    assert_eq!((status, code.as_str()), (503, "backend_unavailable"));
    daemon.stop().await;
}

async fn post_raw(daemon: &TestDaemon, content_type: &str, body: Vec<u8>) -> reqwest::Response {
    daemon
        .http()
        .post(daemon.url("/v1/chat/completions"))
        .bearer_auth(&daemon.token)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn bad_input_is_refused_exactly_while_another_client_is_served() {
    let mock = MockLlm::start(vec![MockReply::Slow {
        chunks: vec!["still ".into(), "here".into()],
        delay_ms: 150,
    }])
    .await;
    let daemon = daemon_for(&mock).await;
    let served = daemon
        .post_json("/v1/chat/completions", &chat(true, "go"))
        .await;
    assert_eq!(served.status(), 200);

    let json_type = "application/json";
    let cases: Vec<(&str, Vec<u8>, u16, &str, Value)> = vec![
        (
            json_type,
            b"{\"messages\": [".to_vec(),
            400,
            "invalid_json",
            Value::Null,
        ),
        (
            "text/plain",
            chat(false, "hi").to_string().into_bytes(),
            415,
            "unsupported_media_type",
            Value::Null,
        ),
        (
            json_type,
            br#"{"model": "mock-model"}"#.to_vec(),
            400,
            "missing_required_parameter",
            json!("messages"),
        ),
        (
            json_type,
            br#"{"messages": {"role": "user"}}"#.to_vec(),
            400,
            "invalid_type",
            json!("messages"),
        ),
        (
            json_type,
            br#"{"messages": []}"#.to_vec(),
            400,
            "invalid_value",
            json!("messages"),
        ),
        (
            json_type,
            br#"{"messages": [{"content": "hi"}]}"#.to_vec(),
            400,
            "missing_required_parameter",
            json!("messages[0].role"),
        ),
    ];
    for (content_type, body, want_status, want_code, want_param) in cases {
        let (status, code, param) = refusal(post_raw(&daemon, content_type, body).await).await;
        assert_eq!(
            (status, code.as_str(), &param),
            (want_status, want_code, &want_param)
        );
    }
    // 17 MiB: refused from its declared length, before it is read.
    let mut huge = br#"{"messages": [{"role": "user", "content": ""#.to_vec();
    huge.resize(17 * 1024 * 1024, b'a');
    huge.extend_from_slice(br#""}]}"#);
    let (status, code, _) = refusal(post_raw(&daemon, json_type, huge).await).await;
    assert_eq!((status, code.as_str()), (413, "request_too_large"));

    let text = tokio::time::timeout(Duration::from_secs(10), served.text())
        .await
        .expect("the other client's stream ends")
        .unwrap();
    let payloads = sse_payloads(&text);
    assert_eq!(payloads.last(), Some(&json!("[DONE]")));
    assert!(text.contains("\"still \"") && text.contains("\"here\""));
    assert_eq!(
        chat_requests(&mock).len(),
        1,
        "no refused request went upstream"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn the_daemon_token_is_required_as_bearer_or_x_api_key() {
    let mock = MockLlm::start(vec![]).await;
    let daemon = daemon_for(&mock).await;
    let url = daemon.url("/v1/chat/completions");
    let body = chat(false, "hi");
    let anonymous = daemon.http().post(&url).json(&body).send().await.unwrap();
    let (status, code, _) = refusal(anonymous).await;
    assert_eq!((status, code.as_str()), (401, "invalid_api_key"));
    let wrong = daemon
        .http()
        .post(&url)
        .bearer_auth("not-the-token")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.headers()["www-authenticate"], "Bearer");
    assert_eq!(wrong.headers()["x-should-retry"], "false");
    let (status, code, _) = refusal(wrong).await;
    assert_eq!((status, code.as_str()), (401, "invalid_api_key"));
    let by_header = daemon
        .http()
        .post(&url)
        .header("x-api-key", &daemon.token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(by_header.status(), 200);
    let completion: Value = by_header.json().await.unwrap();
    assert_eq!(completion["choices"][0]["message"]["content"], "hi");
    assert_eq!(
        chat_requests(&mock).len(),
        1,
        "refused requests never went upstream"
    );
    daemon.stop().await;
}
