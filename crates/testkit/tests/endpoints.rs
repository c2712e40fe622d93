//! Model lists, Copilot token exchange, unknown routes, script format.

use bridge_testkit::mock_llm::{COPILOT_TOKEN_REFRESH_IN_SECS, MOCK_MODELS, MOCK_OLLAMA_MODELS};
use bridge_testkit::{MockLlm, MockReply, MockToolCall};
use serde_json::json;

use crate::http_client::{get, send};

#[tokio::test]
async fn lists_openai_models_on_both_paths() {
    let mock = MockLlm::start(Vec::new()).await;
    for path in ["/v1/models", "/models"] {
        let response = get(mock.address(), path).await;
        assert_eq!(response.status, 200, "{path}");
        let list = response.json();
        assert_eq!(list["object"], "list");
        let ids: Vec<&str> = list["data"]
            .as_array()
            .expect("data array")
            .iter()
            .map(|model| model["id"].as_str().expect("id"))
            .collect();
        assert_eq!(ids, MOCK_MODELS.to_vec());
        assert_eq!(list["data"][0]["object"], "model");
    }
}

#[tokio::test]
async fn model_listing_does_not_consume_the_script() {
    let mock = MockLlm::start(vec![MockReply::text("kept")]).await;
    get(mock.address(), "/v1/models").await;
    assert_eq!(mock.remaining(), 1);
}

#[tokio::test]
async fn copilot_token_exchange_points_back_at_the_mock() {
    let mock = MockLlm::start(Vec::new()).await;
    let response = send(
        mock.address(),
        "GET",
        "/copilot_internal/v2/token",
        &[("authorization", "token gho_test")],
        None,
    )
    .await;
    assert_eq!(response.status, 200);
    let token = response.json();
    assert!(
        token["token"]
            .as_str()
            .is_some_and(|token| token.starts_with("tid="))
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let expires_at = token["expires_at"].as_u64().expect("expires_at");
    assert!(
        expires_at > now && expires_at <= now + 3600,
        "{expires_at} vs {now}"
    );
    assert_eq!(token["refresh_in"], COPILOT_TOKEN_REFRESH_IN_SECS);
    assert_eq!(token["endpoints"]["api"], mock.base_url());
    assert_eq!(
        mock.requests()[0].header("authorization"),
        Some("token gho_test")
    );
}

#[tokio::test]
async fn ollama_tags_list_models() {
    let mock = MockLlm::start(Vec::new()).await;
    let tags = get(mock.address(), "/api/tags").await.json();
    let names: Vec<&str> = tags["models"]
        .as_array()
        .expect("models")
        .iter()
        .map(|model| model["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, MOCK_OLLAMA_MODELS.to_vec());
}

#[tokio::test]
async fn unknown_route_is_404_with_openai_error_and_recorded() {
    let mock = MockLlm::start(vec![MockReply::text("kept")]).await;
    let response = get(mock.address(), "/v2/nothing?x=1").await;
    assert_eq!(response.status, 404);
    assert!(
        response.json()["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("/v2/nothing"))
    );
    assert_eq!(mock.remaining(), 1);
    let recorded = mock.requests();
    assert_eq!(recorded[0].method, "GET");
    assert_eq!(recorded[0].query.as_deref(), Some("x=1"));
}

#[tokio::test]
async fn base_url_has_no_trailing_slash_and_server_stops_on_drop() {
    let mock = MockLlm::start(Vec::new()).await;
    let base = mock.base_url();
    assert!(
        base.starts_with("http://127.0.0.1:") && !base.ends_with('/'),
        "{base}"
    );
    let address = mock.address();
    drop(mock);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(tokio::net::TcpStream::connect(address).await.is_err());
}

#[test]
fn script_deserializes_with_type_tags() {
    let script: Vec<MockReply> = serde_json::from_value(json!([
        {"type": "text", "chunks": ["a", "b"]},
        {"type": "tool_calls", "calls": [{"id": "c1", "name": "f", "argument_chunks": ["{}"]}]},
        {"type": "error", "status": 429, "body": "slow", "retry_after_secs": 2},
        {"type": "raw", "status": 200, "content_type": "text/plain", "body_chunks": ["x"]},
        {"type": "slow", "chunks": ["s"], "delay_ms": 5},
        {"type": "drop_after", "chunks": ["d"]},
    ]))
    .expect("script");
    assert_eq!(
        script,
        vec![
            MockReply::chunks(["a", "b"]),
            MockReply::ToolCalls {
                text: None,
                calls: vec![MockToolCall::new("c1", "f", "{}")]
            },
            MockReply::Error {
                status: 429,
                body: "slow".to_owned(),
                retry_after_secs: Some(2)
            },
            MockReply::Raw {
                status: 200,
                content_type: "text/plain".to_owned(),
                body_chunks: vec!["x".to_owned()]
            },
            MockReply::Slow {
                chunks: vec!["s".to_owned()],
                delay_ms: 5
            },
            MockReply::DropAfter {
                chunks: vec!["d".to_owned()]
            },
        ]
    );
}

#[test]
fn script_with_unknown_type_is_rejected_with_the_variant_named() {
    let err = serde_json::from_value::<Vec<MockReply>>(json!([{"type": "txt", "chunks": []}]))
        .expect_err("unknown type");
    assert!(err.to_string().contains("txt"), "{err}");
}

#[tokio::test]
async fn a_required_key_refuses_requests_without_it_in_each_format() {
    let mock = MockLlm::start(Vec::new()).await;
    assert_eq!(get(mock.address(), "/v1/models").await.status, 200);
    mock.require_key("sk-right");
    let wrong = send(
        mock.address(),
        "GET",
        "/v1/models",
        &[("authorization", "Bearer sk-wrong")],
        None,
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.json()["error"]["code"], "invalid_api_key");
    let anthropic = send(
        mock.address(),
        "POST",
        "/v1/messages",
        &[("x-api-key", "sk-wrong")],
        Some(br#"{"model": "m", "max_tokens": 5, "messages": []}"#),
    )
    .await;
    assert_eq!(anthropic.status, 401);
    assert_eq!(anthropic.json()["error"]["type"], "authentication_error");
    for header in [
        ("authorization", "Bearer sk-right"),
        ("x-api-key", "sk-right"),
    ] {
        let right = send(mock.address(), "GET", "/v1/models", &[header], None).await;
        assert_eq!(right.status, 200, "{header:?}");
    }
}
