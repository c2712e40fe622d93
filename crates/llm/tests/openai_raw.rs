//! The OpenAI backend against a hand-written upstream: byte-exact splits and
//! the state of the connection itself.

use std::time::{Duration, SystemTime};

use bridge_llm::{ChatBackend, ChatEvent, FinishReason, LlmError, collect};
use futures::StreamExt;

use crate::support::{SSE_HEAD, ask, backend, raw_upstream};

const IDLE: Duration = Duration::from_secs(5);

#[tokio::test]
async fn characters_and_line_endings_split_between_reads_are_reassembled() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Grüße 🌍\"}}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\n",
        "data: [DONE]\r\n\r\n",
    )
    .as_bytes();
    let umlaut = body.windows(2).position(|w| w == "ü".as_bytes()).unwrap();
    let globe = body.windows(4).position(|w| w == "🌍".as_bytes()).unwrap();
    let first_crlf = body.windows(2).position(|w| w == b"\r\n").unwrap();
    // Inside `ü`, inside `🌍` (after 2 of its 4 bytes), between `\r` and `\n`.
    let cuts = [umlaut + 1, globe + 2, first_crlf + 1];
    let mut parts = vec![SSE_HEAD.to_vec()];
    let mut from = 0;
    for cut in cuts {
        parts.push(body[from..cut].to_vec());
        from = cut;
    }
    parts.push(body[from..].to_vec());
    let upstream = raw_upstream(parts, Duration::from_secs(1)).await;

    let backend = backend(&upstream.base_url, IDLE);
    let events: Vec<ChatEvent> = backend
        .stream(&ask("x"))
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(
        events,
        [
            ChatEvent::TextDelta {
                text: "Grüße 🌍".into()
            },
            ChatEvent::Finish {
                reason: FinishReason::Stop
            },
        ]
    );
}

#[tokio::test]
async fn dropping_the_stream_closes_the_upstream_connection() {
    let first = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"thinking\"}}]}\n\n";
    // The upstream then stays silent, as a model still generating would.
    let upstream = raw_upstream(
        vec![SSE_HEAD.to_vec(), first.to_vec()],
        Duration::from_secs(3),
    )
    .await;
    let backend = backend(&upstream.base_url, IDLE);
    let mut stream = backend.stream(&ask("x")).await.unwrap();
    assert_eq!(
        stream.next().await,
        Some(Ok(ChatEvent::TextDelta {
            text: "thinking".into()
        }))
    );
    drop(stream);
    assert!(
        upstream.client_closed.await.unwrap(),
        "the upstream connection stayed open after the stream was dropped"
    );
}

#[tokio::test]
async fn a_retry_after_http_date_becomes_a_duration() {
    let at = SystemTime::now() + Duration::from_secs(90);
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: {}\r\nconnection: close\r\n\r\n",
        httpdate::fmt_http_date(at)
    );
    let body = r#"{"error":{"message":"The engine is currently overloaded"}}"#;
    let upstream = raw_upstream(
        vec![head.into_bytes(), body.as_bytes().to_vec()],
        Duration::from_millis(10),
    )
    .await;
    let err = backend(&upstream.base_url, IDLE)
        .stream(&ask("x"))
        .await
        .err()
        .unwrap();
    let LlmError::Http {
        status,
        message,
        retry_after,
        ..
    } = &err
    else {
        panic!("expected an HTTP error, got {err:?}");
    };
    assert_eq!(*status, 503);
    assert_eq!(message, "The engine is currently overloaded");
    let retry_after = retry_after.unwrap();
    assert!(
        retry_after > Duration::from_secs(80) && retry_after <= Duration::from_secs(90),
        "{retry_after:?}"
    );
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error_naming_the_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let base_url = format!("http://{address}/v1");
    let err = backend(&base_url, IDLE)
        .stream(&ask("x"))
        .await
        .err()
        .unwrap();
    let LlmError::Transport { url, message, .. } = &err else {
        panic!("expected a transport error, got {err:?}");
    };
    assert_eq!(url, &format!("{base_url}/chat/completions"));
    assert!(message.to_lowercase().contains("refused"), "{message}");
}

#[tokio::test]
async fn a_server_that_never_answers_is_a_timeout() {
    // Accepts the connection, reads the request, and says nothing.
    let upstream = raw_upstream(Vec::new(), Duration::from_secs(3)).await;
    let mut config = bridge_llm::OpenAiConfig::new("slow", upstream.base_url.clone(), "m");
    config.request_timeout = Duration::from_millis(300);
    let backend = bridge_llm::OpenAiBackend::new(config).unwrap();
    let err = backend.stream(&ask("x")).await.err().unwrap();
    assert_eq!(
        err,
        LlmError::Timeout {
            backend: "slow".into(),
            after: Duration::from_millis(300)
        }
    );
}

#[tokio::test]
async fn a_finished_answer_without_done_still_completes() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"short\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
    );
    let upstream = raw_upstream(
        vec![SSE_HEAD.to_vec(), body.as_bytes().to_vec()],
        Duration::from_millis(10),
    )
    .await;
    let response = collect(
        backend(&upstream.base_url, IDLE)
            .stream(&ask("x"))
            .await
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(response.text, "short");
    assert_eq!(response.finish, Some(FinishReason::Length));
}

#[test]
fn invalid_configuration_is_refused_at_construction() {
    let config = |base_url: &str| bridge_llm::OpenAiConfig::new("cfg", base_url, "m");
    let err = bridge_llm::OpenAiBackend::new(config("localhost:8080/v1")).unwrap_err();
    assert!(matches!(err, LlmError::NotConfigured(_)), "{err:?}");
    let err = bridge_llm::OpenAiBackend::new(config("ftp://example.com/v1")).unwrap_err();
    assert!(err.to_string().contains("not http(s)"), "{err}");
    let mut bad_header = config("http://127.0.0.1:1/v1");
    bad_header.extra_headers = vec![("bad header".into(), "x".into())];
    let err = bridge_llm::OpenAiBackend::new(bad_header).unwrap_err();
    assert!(err.to_string().contains("invalid header name"), "{err}");
    let mut key = config("http://127.0.0.1:1/v1");
    key.api_key = Some("sk-secret\nvalue".into());
    let err = bridge_llm::OpenAiBackend::new(key.clone()).unwrap_err();
    assert!(!err.to_string().contains("sk-secret"), "{err}");
    assert!(!format!("{key:?}").contains("sk-secret"));
}
