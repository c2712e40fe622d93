//! Retries around the OpenAI backend against the mock upstream over real
//! HTTP: what is retried, how long it waits, and what is never retried.

use std::time::{Duration, Instant};

use bridge_llm::{
    ChatBackend, ChatEvent, LlmError, OpenAiBackend, RetryConfig, RetryingBackend, collect,
};
use bridge_testkit::{MockLlm, MockReply};
use bridge_util::ErrorPolicy;
use futures::StreamExt;

use crate::support::{ask, backend, texts};

fn config(max_retries: u32, transient_retries: u32) -> RetryConfig {
    RetryConfig {
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        max_retry_after: Duration::from_secs(2),
        policy: ErrorPolicy {
            max_retries,
            transient_retries,
        },
    }
}

fn retrying(mock: &MockLlm, config: RetryConfig) -> RetryingBackend<OpenAiBackend> {
    let inner = backend(&format!("{}/v1", mock.base_url()), Duration::from_secs(5));
    RetryingBackend::new(inner, config)
}

fn rate_limited(retry_after_secs: Option<u64>) -> MockReply {
    MockReply::Error {
        status: 429,
        body: "Rate limit reached for requests".into(),
        retry_after_secs,
    }
}

#[tokio::test]
async fn a_rate_limit_waits_for_retry_after_then_succeeds() {
    let mock = MockLlm::start(vec![rate_limited(Some(1)), MockReply::text("finally")]).await;
    let backend = retrying(&mock, config(3, 2));
    let started = Instant::now();
    let response = collect(backend.stream(&ask("hi")).await.unwrap())
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(response.text, "finally");
    assert!(
        elapsed >= Duration::from_secs(1),
        "Retry-After 1 must be waited: {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn unavailable_twice_then_success_is_retried_within_the_transient_budget() {
    let mock = MockLlm::start(vec![
        MockReply::error(503, "temporarily unavailable"),
        MockReply::error(503, "temporarily unavailable"),
        MockReply::chunks(["all ", "good"]),
    ])
    .await;
    let backend = retrying(&mock, config(3, 2));
    let response = collect(backend.stream(&ask("hi")).await.unwrap())
        .await
        .unwrap();
    assert_eq!(response.text, "all good");
    assert_eq!(mock.requests().len(), 3);
    let bodies: Vec<_> = mock.requests().into_iter().map(|r| r.body).collect();
    assert!(
        bodies.windows(2).all(|pair| pair[0] == pair[1]),
        "every retry must resend the same request"
    );
}

#[tokio::test]
async fn unavailable_beyond_the_transient_budget_returns_the_last_error() {
    let mock = MockLlm::start(vec![
        MockReply::error(503, "down 1"),
        MockReply::error(503, "down 2"),
        MockReply::error(503, "down 3"),
        MockReply::text("never asked for"),
    ])
    .await;
    let backend = retrying(&mock, config(3, 2));
    let Err(error) = backend.stream(&ask("hi")).await else {
        panic!("three 503s with two retries allowed must fail");
    };
    match &error {
        LlmError::Http {
            status, message, ..
        } => {
            assert_eq!(*status, 503);
            assert!(message.contains("down 3"), "{message}");
        }
        other => panic!("expected the HTTP error, got {other:?}"),
    }
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn an_auth_failure_is_not_retried() {
    let mock = MockLlm::start(vec![
        MockReply::error(401, "Incorrect API key provided"),
        MockReply::text("never asked for"),
    ])
    .await;
    let backend = retrying(&mock, config(3, 2));
    let result = backend.stream(&ask("hi")).await;
    assert!(
        matches!(result, Err(LlmError::Auth { .. })),
        "{:?}",
        result.err()
    );
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn a_bad_request_is_not_retried() {
    let mock = MockLlm::start(vec![
        MockReply::error(400, "context length exceeded"),
        MockReply::text("never asked for"),
    ])
    .await;
    let backend = retrying(&mock, config(3, 2));
    let result = backend.stream(&ask("hi")).await;
    assert!(
        matches!(result, Err(LlmError::Http { status: 400, .. })),
        "{:?}",
        result.err()
    );
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn a_failure_after_the_first_event_is_passed_through_not_retried() {
    let mock = MockLlm::start(vec![
        MockReply::DropAfter {
            chunks: vec!["Hel".into(), "lo".into()],
        },
        MockReply::text("never asked for"),
    ])
    .await;
    let backend = retrying(&mock, config(3, 2));
    let items: Vec<Result<ChatEvent, LlmError>> =
        backend.stream(&ask("hi")).await.unwrap().collect().await;
    assert_eq!(texts(&items), ["Hel", "lo"]);
    assert!(
        matches!(items.last(), Some(Err(_))),
        "the cut answer must end with its error: {items:?}"
    );
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn no_retry_when_the_rate_limit_budget_is_zero() {
    let mock = MockLlm::start(vec![rate_limited(None), MockReply::text("never asked for")]).await;
    let backend = retrying(&mock, config(0, 2));
    let result = backend.stream(&ask("hi")).await;
    assert!(
        matches!(result, Err(LlmError::Http { status: 429, .. })),
        "{:?}",
        result.err()
    );
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn a_retry_after_over_the_cap_fails_at_once() {
    let mock = MockLlm::start(vec![rate_limited(Some(30)), MockReply::text("never")]).await;
    let backend = retrying(&mock, config(3, 2));
    let started = Instant::now();
    let result = backend.stream(&ask("hi")).await;
    assert!(started.elapsed() < Duration::from_secs(1));
    match result {
        Err(LlmError::Http {
            status: 429,
            retry_after,
            ..
        }) => assert_eq!(retry_after, Some(Duration::from_secs(30))),
        other => panic!(
            "expected the 429 with its Retry-After, got {:?}",
            other.err()
        ),
    }
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn dropping_the_request_while_waiting_stops_retrying() {
    let mock = MockLlm::start(vec![rate_limited(Some(1)), MockReply::text("never")]).await;
    let backend = retrying(&mock, config(3, 2));
    let waited = tokio::time::timeout(Duration::from_millis(300), backend.stream(&ask("hi"))).await;
    assert!(waited.is_err(), "the retry must still be waiting");
    // Past the moment the retry would have been sent.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn an_unreachable_upstream_is_retried_then_reported() {
    // A port nobody listens on: bind, learn it, close it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let inner = backend(&format!("http://{address}/v1"), Duration::from_secs(5));
    let backend = RetryingBackend::new(inner, config(3, 2));
    let started = Instant::now();
    let result = backend.stream(&ask("hi")).await;
    assert!(
        matches!(result, Err(LlmError::Transport { .. })),
        "{:?}",
        result.err()
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}
