//! The Azure OpenAI backend against the testkit's mock over real HTTP.

use std::time::Duration;

use bridge_llm::{AzureBackend, AzureConfig, ChatBackend, FinishReason, LlmError, collect};
use bridge_testkit::{MockLlm, MockReply, MockToolCall};

use crate::support::ask;

const AZURE_KEY: &str = "azure-key-456";

fn azure_for(mock: &MockLlm, deployment: &str) -> AzureBackend {
    let mut config = AzureConfig::new(
        format!("{}/", mock.base_url()),
        deployment,
        "2024-10-21",
        AZURE_KEY,
    );
    config.request_timeout = Duration::from_secs(5);
    config.idle_timeout = Duration::from_secs(5);
    AzureBackend::new(config).unwrap()
}

#[tokio::test]
async fn chat_goes_to_the_deployment_path_with_api_version_and_api_key_header() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hi ", "from ", "Azure"])]).await;
    let backend = azure_for(&mock, "gpt-4o-prod");
    let response = collect(backend.stream(&ask("hello")).await.unwrap())
        .await
        .unwrap();
    assert_eq!(response.text, "Hi from Azure");
    assert_eq!(response.finish, Some(FinishReason::Stop));

    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(
        request.path,
        "/openai/deployments/gpt-4o-prod/chat/completions"
    );
    assert_eq!(request.query.as_deref(), Some("api-version=2024-10-21"));
    assert_eq!(request.header("api-key"), Some(AZURE_KEY));
    assert_eq!(
        request.header("authorization"),
        None,
        "Azure keys are not bearer tokens"
    );
    assert_eq!(request.body["model"], "gpt-4o-prod");
    assert_eq!(request.body["stream"], true);
}

#[tokio::test]
async fn streamed_tool_calls_are_reassembled() {
    let mock = MockLlm::start(vec![MockReply::ToolCalls {
        text: None,
        calls: vec![
            MockToolCall {
                id: "call_a".into(),
                name: "read_file".into(),
                argument_chunks: vec!["{\"path\":".into(), "\"ä.rs\"}".into()],
            },
            MockToolCall::new("call_b", "list_dir", "{}"),
        ],
    }])
    .await;
    let backend = azure_for(&mock, "dep");
    let response = collect(backend.stream(&ask("go")).await.unwrap())
        .await
        .unwrap();
    let calls: Vec<(&str, &str, &str)> = response
        .tool_calls
        .iter()
        .map(|call| {
            (
                call.id.as_str(),
                call.name.as_str(),
                call.arguments.as_str(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a", "read_file", "{\"path\":\"ä.rs\"}"),
            ("call_b", "list_dir", "{}"),
        ]
    );
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn a_deployment_name_cannot_escape_its_path_segment() {
    let mock = MockLlm::start(vec![MockReply::text("ok")]).await;
    let backend = azure_for(&mock, "a/../b?x=1");
    collect(backend.stream(&ask("hi")).await.unwrap())
        .await
        .unwrap();
    let request = &mock.requests()[0];
    assert_eq!(
        request.path,
        "/openai/deployments/a%2F..%2Fb%3Fx=1/chat/completions"
    );
    assert_eq!(request.query.as_deref(), Some("api-version=2024-10-21"));
}

#[tokio::test]
async fn models_is_the_deployment_and_errors_keep_their_class() {
    let mock = MockLlm::start(vec![MockReply::error(
        401,
        "Access denied due to invalid key",
    )])
    .await;
    let backend = azure_for(&mock, "my-deployment");
    assert_eq!(backend.models().await.unwrap(), ["my-deployment"]);
    match backend.stream(&ask("hi")).await.err() {
        Some(LlmError::Auth { message, .. }) => {
            assert!(message.contains("invalid key"), "{message}")
        }
        other => panic!("expected an auth error, got {other:?}"),
    }
}

#[test]
fn bad_configuration_is_refused_up_front_without_showing_the_key() {
    let err = AzureBackend::new(AzureConfig::new("https://x.example", "", "v", "k")).unwrap_err();
    assert!(err.to_string().contains("no deployment"), "{err}");
    let err = AzureBackend::new(AzureConfig::new("not a url", "d", "v", "k")).unwrap_err();
    assert!(err.to_string().contains("not a url"), "{err}");
    let err =
        AzureBackend::new(AzureConfig::new("https://x.example", "d", "v", "bad\nkey")).unwrap_err();
    assert!(!err.to_string().contains("bad\nkey"), "{err}");
    let config = AzureConfig::new("https://x.example", "d", "v", "secret-key");
    assert!(!format!("{config:?}").contains("secret-key"));
}
