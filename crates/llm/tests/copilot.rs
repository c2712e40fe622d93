//! The GitHub Copilot backend against the testkit's mock: token exchange,
//! caching and refresh, integration headers, and the `gh` token helper.

use std::time::{Duration, Instant};

use bridge_llm::{
    ChatBackend, CopilotBackend, CopilotConfig, LlmError, collect, github_token_from_command,
};
use bridge_testkit::mock_llm::MOCK_MODELS;
use bridge_testkit::{MockLlm, MockReply, RecordedRequest, TempWorkspace};

use crate::support::{ask, raw_upstream};

const GITHUB_TOKEN: &str = "gho_test_github_token";
const TOKEN_PATH: &str = "/copilot_internal/v2/token";

fn config_for(mock: &MockLlm) -> CopilotConfig {
    let mut config = CopilotConfig::new(GITHUB_TOKEN, "gpt-4o");
    config.token_url = format!("{}{TOKEN_PATH}", mock.base_url());
    config.request_timeout = Duration::from_secs(5);
    config.idle_timeout = Duration::from_secs(5);
    config
}

fn exchanges(mock: &MockLlm) -> Vec<RecordedRequest> {
    mock.requests()
        .into_iter()
        .filter(|request| request.path == TOKEN_PATH)
        .collect()
}

fn chats(mock: &MockLlm) -> Vec<RecordedRequest> {
    mock.requests()
        .into_iter()
        .filter(|request| request.path.ends_with("/chat/completions"))
        .collect()
}

async fn answer(backend: &CopilotBackend, text: &str) -> String {
    collect(backend.stream(&ask(text)).await.unwrap())
        .await
        .unwrap()
        .text
}

#[tokio::test]
async fn two_requests_share_one_exchange_and_carry_token_and_integration_headers() {
    let mock = MockLlm::start(vec![MockReply::text("one"), MockReply::text("two")]).await;
    let backend = CopilotBackend::new(config_for(&mock)).unwrap();
    assert_eq!(answer(&backend, "a").await, "one");
    assert_eq!(answer(&backend, "b").await, "two");

    let exchanges = exchanges(&mock);
    assert_eq!(exchanges.len(), 1);
    assert_eq!(exchanges[0].method, "GET");
    assert_eq!(
        exchanges[0].header("authorization"),
        Some(format!("token {GITHUB_TOKEN}").as_str())
    );

    let chats = chats(&mock);
    assert_eq!(chats.len(), 2);
    for chat in &chats {
        // The mock's exchange names itself as `endpoints.api`.
        assert_eq!(chat.path, "/chat/completions");
        let bearer = chat.header("authorization").unwrap();
        assert!(bearer.starts_with("Bearer tid=mock"), "{bearer}");
        assert!(!bearer.contains(GITHUB_TOKEN));
        assert_eq!(chat.header("editor-version"), Some("vscode/1.99.3"));
        assert_eq!(
            chat.header("editor-plugin-version"),
            Some("copilot-chat/0.26.7")
        );
        assert_eq!(chat.header("copilot-integration-id"), Some("vscode-chat"));
        assert_eq!(chat.header("user-agent"), Some("GitHubCopilotChat/0.26.7"));
        assert_eq!(chat.body["model"], "gpt-4o");
    }
    assert_eq!(
        chats[0].header("authorization"),
        chats[1].header("authorization")
    );
}

#[tokio::test]
async fn concurrent_first_requests_exchange_once() {
    let mock = MockLlm::start(Vec::new()).await;
    let backend = CopilotBackend::new(config_for(&mock)).unwrap();
    let (first, second, third) = tokio::join!(
        answer(&backend, "x"),
        answer(&backend, "y"),
        answer(&backend, "z")
    );
    assert_eq!([first, second, third], ["x", "y", "z"]);
    assert_eq!(exchanges(&mock).len(), 1);
}

#[tokio::test]
async fn a_token_due_for_refresh_is_exchanged_again_and_the_new_one_used() {
    let mock = MockLlm::start(Vec::new()).await;
    let mut config = config_for(&mock);
    // Longer than the mock token's life: every token is due at once.
    config.refresh_margin = Duration::from_secs(3600);
    let backend = CopilotBackend::new(config).unwrap();
    answer(&backend, "a").await;
    answer(&backend, "b").await;
    assert_eq!(exchanges(&mock).len(), 2);
    let chats = chats(&mock);
    assert_ne!(
        chats[0].header("authorization"),
        chats[1].header("authorization"),
        "the second request must carry the refreshed token"
    );
}

#[tokio::test]
async fn a_refused_exchange_is_an_auth_error_that_says_what_to_check() {
    let body = r#"{"message":"Bad credentials","documentation_url":"https://docs.github.com"}"#;
    let response = format!(
        "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let upstream = raw_upstream(vec![response.into_bytes()], Duration::from_millis(100)).await;
    let mut config = CopilotConfig::new(GITHUB_TOKEN, "gpt-4o");
    config.token_url = upstream.base_url.clone();
    config.request_timeout = Duration::from_secs(5);
    let backend = CopilotBackend::new(config).unwrap();
    match backend.stream(&ask("hi")).await.err() {
        Some(LlmError::Auth { message, .. }) => {
            assert!(message.contains("Bad credentials"), "{message}");
            assert!(message.contains("COPILOT_GITHUB_TOKEN"), "{message}");
            assert!(message.contains("gh auth login"), "{message}");
            assert!(!message.contains(GITHUB_TOKEN), "{message}");
        }
        other => panic!("expected an auth error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_token_rejected_by_chat_is_exchanged_again_on_the_next_request() {
    let mock = MockLlm::start(vec![MockReply::error(401, "token expired")]).await;
    let backend = CopilotBackend::new(config_for(&mock)).unwrap();
    let err = backend.stream(&ask("a")).await.err().unwrap();
    assert!(matches!(err, LlmError::Auth { .. }), "{err}");
    assert_eq!(answer(&backend, "again").await, "again");
    assert_eq!(exchanges(&mock).len(), 2);
}

#[tokio::test]
async fn a_configured_api_base_and_custom_headers_win() {
    let mock = MockLlm::start(vec![MockReply::text("ok")]).await;
    let mut config = config_for(&mock);
    config.api_base = Some(format!("{}/v1/", mock.base_url()));
    config.integration_headers = vec![
        ("Editor-Version".into(), "Neovim/0.11.0".into()),
        ("Copilot-Integration-Id".into(), "copilot-bridge".into()),
    ];
    let backend = CopilotBackend::new(config).unwrap();
    assert_eq!(answer(&backend, "hi").await, "ok");
    let chat = &chats(&mock)[0];
    assert_eq!(chat.path, "/v1/chat/completions");
    assert_eq!(chat.header("editor-version"), Some("Neovim/0.11.0"));
    assert_eq!(
        chat.header("copilot-integration-id"),
        Some("copilot-bridge")
    );
    assert_eq!(chat.header("editor-plugin-version"), None);
}

#[tokio::test]
async fn models_are_listed_with_the_copilot_token() {
    let mock = MockLlm::start(Vec::new()).await;
    let backend = CopilotBackend::new(config_for(&mock)).unwrap();
    assert_eq!(backend.models().await.unwrap(), MOCK_MODELS);
    let list = mock
        .requests()
        .into_iter()
        .find(|request| request.path == "/models")
        .unwrap();
    assert!(
        list.header("authorization")
            .unwrap()
            .starts_with("Bearer tid=mock")
    );
}

#[test]
fn a_missing_token_program_gives_none() {
    let empty_dir = TempWorkspace::new();
    let missing = empty_dir.path().join("gh");
    let missing = missing.to_str().unwrap();
    assert_eq!(
        github_token_from_command(missing, &["auth", "token"], Duration::from_secs(2)),
        None
    );
}

#[test]
fn the_token_program_output_is_trimmed_and_failures_or_silence_give_none() {
    let run =
        |script: &str, timeout: Duration| github_token_from_command("sh", &["-c", script], timeout);
    assert_eq!(
        run("echo '  gho_from_gh  '", Duration::from_secs(5)).as_deref(),
        Some("gho_from_gh")
    );
    assert_eq!(run("echo gho_x; exit 1", Duration::from_secs(5)), None);
    assert_eq!(run("printf '\\n'", Duration::from_secs(5)), None);
    let started = Instant::now();
    assert_eq!(run("sleep 10", Duration::from_millis(200)), None);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}
