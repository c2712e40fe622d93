//! The Ollama backend against the testkit's mock over real HTTP.

use std::time::{Duration, Instant};

use bridge_llm::{ChatBackend, LlmError, OllamaBackend, OllamaConfig, collect, ollama_is_running};
use bridge_testkit::mock_llm::MOCK_OLLAMA_MODELS;
use bridge_testkit::{MockLlm, MockReply};

use crate::support::{ask, raw_upstream};

fn ollama_at(base_url: &str) -> OllamaBackend {
    let mut config = OllamaConfig::new("llama3.2");
    config.base_url = base_url.to_owned();
    config.request_timeout = Duration::from_secs(5);
    config.idle_timeout = Duration::from_secs(5);
    OllamaBackend::new(config).unwrap()
}

/// The root of a raw upstream, whose helper hands out an OpenAI-style `/v1`.
fn root_of(raw_base_url: &str) -> String {
    raw_base_url.trim_end_matches("/v1").to_owned()
}

fn http_response(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[tokio::test]
async fn chat_uses_the_openai_compatible_path_without_a_key() {
    let mock = MockLlm::start(vec![MockReply::chunks(["local ", "answer"])]).await;
    let backend = ollama_at(&format!("{}/", mock.base_url()));
    let response = collect(backend.stream(&ask("hi")).await.unwrap())
        .await
        .unwrap();
    assert_eq!(response.text, "local answer");
    let request = &mock.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.body["model"], "llama3.2");
}

#[tokio::test]
async fn models_come_from_the_native_tags_endpoint() {
    let mock = MockLlm::start(Vec::new()).await;
    let backend = ollama_at(&mock.base_url());
    assert_eq!(backend.models().await.unwrap(), MOCK_OLLAMA_MODELS);
    let request = &mock.requests()[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("GET", "/api/tags")
    );
}

#[tokio::test]
async fn a_malformed_tag_list_is_a_protocol_error_quoting_it() {
    let upstream = raw_upstream(
        vec![http_response(
            "200 OK",
            "application/json",
            r#"{"models": 5}"#,
        )],
        Duration::from_millis(100),
    )
    .await;
    let backend = ollama_at(&root_of(&upstream.base_url));
    match backend.models().await {
        Err(LlmError::Protocol { message, .. }) => {
            assert!(message.contains("/api/tags"), "{message}");
            assert!(message.contains(r#"{"models": 5}"#), "{message}");
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

#[tokio::test]
async fn detection_sees_a_running_ollama() {
    let mock = MockLlm::start(Vec::new()).await;
    assert!(ollama_is_running(&mock.base_url(), Duration::from_secs(2)).await);
}

#[tokio::test]
async fn detection_is_false_on_a_closed_port_and_quickly() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let started = Instant::now();
    assert!(!ollama_is_running(&format!("http://{address}"), Duration::from_secs(2)).await);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn detection_is_false_when_another_server_holds_the_port() {
    let upstream = raw_upstream(
        vec![http_response(
            "200 OK",
            "text/html",
            "<html>dev server</html>",
        )],
        Duration::from_millis(100),
    )
    .await;
    assert!(!ollama_is_running(&root_of(&upstream.base_url), Duration::from_secs(2)).await);
}

#[tokio::test]
async fn detection_gives_up_after_its_timeout_on_a_silent_server() {
    // Accepts the connection, reads the request, never answers.
    let upstream = raw_upstream(Vec::new(), Duration::from_secs(5)).await;
    let started = Instant::now();
    assert!(!ollama_is_running(&root_of(&upstream.base_url), Duration::from_millis(300)).await);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}
