//! Choosing the backend: explicit provider, auto-detection order, and the
//! message when nothing is configured.

use bridge_llm::select::NOTHING_CONFIGURED;
use bridge_llm::{BackendKind, BackendSettings, LlmError, select_backend};
use bridge_testkit::MockLlm;
use bridge_testkit::mock_llm::MOCK_OLLAMA_MODELS;
use bridge_util::Secret;

/// A URL where nothing listens: the port was free a moment ago.
fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// Settings that find nothing on this machine: no gh, no Ollama.
fn isolated() -> BackendSettings {
    BackendSettings {
        gh_program: None,
        ollama_base_url: dead_url(),
        ..BackendSettings::default()
    }
}

fn some(text: &str) -> Option<String> {
    Some(text.to_owned())
}

fn secret(text: &str) -> Option<Secret> {
    Some(Secret::new(text))
}

#[tokio::test]
async fn explicit_provider_beats_every_detected_key() {
    let settings = BackendSettings {
        provider: Some(BackendKind::Anthropic),
        api_key: secret("byok-key"),
        github_token: secret("ghp_token"),
        openai_api_key: secret("sk-openai"),
        ..isolated()
    };
    let selected = select_backend(settings).await.unwrap();
    assert_eq!(selected.kind.as_str(), "anthropic");
    assert_eq!(selected.source, "COPILOT_BYOK_PROVIDER=anthropic");
    assert_eq!(selected.base_url, "https://api.anthropic.com");
}

#[tokio::test]
async fn explicit_openai_uses_the_configured_base_url_and_model() {
    let settings = BackendSettings {
        provider: Some(BackendKind::OpenAi),
        api_key: secret("k"),
        base_url: some("http://127.0.0.1:9/v1"),
        model: some("my-model"),
        ..isolated()
    };
    let selected = select_backend(settings).await.unwrap();
    assert_eq!(selected.kind.as_str(), "openai");
    assert_eq!(selected.base_url, "http://127.0.0.1:9/v1");
    assert_eq!(selected.model.as_deref(), Some("my-model"));
    assert_eq!(selected.backend.name(), "openai");
}

#[tokio::test]
async fn explicit_openai_defaults_to_the_public_api() {
    let settings = BackendSettings {
        provider: Some(BackendKind::OpenAi),
        api_key: secret("k"),
        ..isolated()
    };
    let selected = select_backend(settings).await.unwrap();
    assert_eq!(selected.base_url, "https://api.openai.com/v1");
}

#[tokio::test]
async fn explicit_azure_without_endpoint_or_deployment_names_the_missing_setting() {
    let settings = BackendSettings {
        provider: Some(BackendKind::Azure),
        api_key: secret("k"),
        model: some("deploy"),
        ..isolated()
    };
    let err = select_backend(settings).await.unwrap_err();
    assert!(
        matches!(&err, LlmError::NotConfigured(msg) if msg.contains("COPILOT_BYOK_BASE_URL")),
        "{err}"
    );

    let settings = BackendSettings {
        provider: Some(BackendKind::Azure),
        api_key: secret("k"),
        base_url: some("https://res.openai.azure.com"),
        ..isolated()
    };
    let err = select_backend(settings).await.unwrap_err();
    assert!(err.to_string().contains("COPILOT_BYOK_MODEL"), "{err}");
}

#[tokio::test]
async fn explicit_provider_without_a_key_is_an_error_not_a_fallback() {
    let settings = BackendSettings {
        provider: Some(BackendKind::OpenAi),
        anthropic_api_key: secret("sk-ant"),
        ..isolated()
    };
    let err = select_backend(settings).await.unwrap_err();
    assert!(err.to_string().contains("COPILOT_BYOK_API_KEY"), "{err}");
}

#[tokio::test]
async fn auto_detection_prefers_copilot_then_openai_then_anthropic() {
    let all = BackendSettings {
        github_token: secret("ghp_token"),
        openai_api_key: secret("sk-openai"),
        anthropic_api_key: secret("sk-ant"),
        ..isolated()
    };
    let selected = select_backend(all.clone()).await.unwrap();
    assert_eq!(selected.kind.as_str(), "copilot");
    assert_eq!(selected.source, "auto-detected: COPILOT_GITHUB_TOKEN");

    let no_copilot = BackendSettings {
        github_token: None,
        ..all.clone()
    };
    let selected = select_backend(no_copilot.clone()).await.unwrap();
    assert_eq!(selected.kind.as_str(), "openai");
    assert_eq!(selected.source, "auto-detected: OPENAI_API_KEY");

    let only_anthropic = BackendSettings {
        openai_api_key: None,
        ..no_copilot
    };
    let selected = select_backend(only_anthropic).await.unwrap();
    assert_eq!(selected.kind.as_str(), "anthropic");
    assert_eq!(selected.source, "auto-detected: ANTHROPIC_API_KEY");
}

#[tokio::test]
async fn empty_keys_count_as_unset() {
    let settings = BackendSettings {
        github_token: secret("  "),
        openai_api_key: secret(""),
        anthropic_api_key: secret("sk-ant"),
        ..isolated()
    };
    let selected = select_backend(settings).await.unwrap();
    assert_eq!(selected.kind.as_str(), "anthropic");
}

#[tokio::test]
async fn gh_token_is_used_before_api_keys() {
    // `echo auth token` prints a non-empty line: it stands in for `gh auth token`.
    let settings = BackendSettings {
        gh_program: some("echo"),
        openai_api_key: secret("sk-openai"),
        ..isolated()
    };
    let selected = select_backend(settings).await.unwrap();
    assert_eq!(selected.kind.as_str(), "copilot");
    assert_eq!(selected.source, "auto-detected: gh auth token");
}

#[tokio::test]
async fn failing_gh_falls_through_to_the_next_source() {
    let settings = BackendSettings {
        gh_program: some("false"),
        openai_api_key: secret("sk-openai"),
        ..isolated()
    };
    let selected = select_backend(settings).await.unwrap();
    assert_eq!(selected.kind.as_str(), "openai");
}

#[tokio::test]
async fn ollama_answering_is_detected_last() {
    let mock = MockLlm::start(Vec::new()).await;
    let settings = BackendSettings {
        ollama_base_url: mock.base_url(),
        gh_program: None,
        ..BackendSettings::default()
    };
    let selected = select_backend(settings).await.unwrap();
    assert_eq!(selected.kind.as_str(), "ollama");
    assert_eq!(selected.base_url, mock.base_url());
    assert!(
        selected.source.starts_with("auto-detected: Ollama at "),
        "{}",
        selected.source
    );
    let models = selected.backend.models().await.unwrap();
    assert_eq!(models, MOCK_OLLAMA_MODELS.map(String::from).to_vec());

    // A key found earlier in the order wins over a running Ollama.
    let settings = BackendSettings {
        ollama_base_url: mock.base_url(),
        gh_program: None,
        anthropic_api_key: secret("sk-ant"),
        ..BackendSettings::default()
    };
    assert_eq!(
        select_backend(settings).await.unwrap().kind.as_str(),
        "anthropic"
    );
}

#[tokio::test]
async fn nothing_configured_names_every_setting_and_validate() {
    let err = select_backend(isolated()).await.unwrap_err();
    let LlmError::NotConfigured(message) = &err else {
        panic!("expected NotConfigured, got {err:?}");
    };
    assert_eq!(message, NOTHING_CONFIGURED);
    for setting in [
        "COPILOT_GITHUB_TOKEN",
        "gh auth login",
        "COPILOT_BYOK_PROVIDER",
        "COPILOT_BYOK_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "Ollama",
        "copilot-bridge validate",
    ] {
        assert!(
            message.contains(setting),
            "{setting} missing from: {message}"
        );
    }
}

#[test]
fn debug_never_shows_secrets() {
    let settings = BackendSettings {
        api_key: secret("secret-byok"),
        github_token: secret("secret-gh"),
        openai_api_key: secret("secret-openai"),
        anthropic_api_key: secret("secret-ant"),
        ..BackendSettings::default()
    };
    let shown = format!("{settings:?}");
    assert!(!shown.contains("secret-"), "{shown}");
    assert!(shown.contains("[REDACTED]"));
}

#[test]
fn provider_names_parse_case_insensitively() {
    assert_eq!(
        "OpenAI".parse::<BackendKind>().unwrap(),
        BackendKind::OpenAi
    );
    assert_eq!(
        " azure ".parse::<BackendKind>().unwrap(),
        BackendKind::Azure
    );
    let err = "gemini".parse::<BackendKind>().unwrap_err();
    assert!(err.to_string().contains("gemini"), "{err}");
}

#[tokio::test]
async fn explicit_azure_routes_by_deployment_with_the_default_api_version() {
    let mock = MockLlm::start(Vec::new()).await;
    let settings = BackendSettings {
        provider: Some(BackendKind::Azure),
        api_key: secret("az-key"),
        base_url: Some(mock.base_url()),
        model: some("my-deployment"),
        ..isolated()
    };
    let selected = select_backend(settings).await.unwrap();
    assert_eq!(selected.kind.as_str(), "azure");
    let request = bridge_llm::ChatRequest {
        messages: vec![bridge_llm::Message::text(bridge_llm::Role::User, "hello")],
        ..Default::default()
    };
    let answer = bridge_llm::collect(selected.backend.stream(&request).await.unwrap())
        .await
        .unwrap();
    assert_eq!(answer.text, "hello");
    let sent = mock.requests();
    let chat = sent.last().unwrap();
    assert_eq!(
        chat.path,
        "/openai/deployments/my-deployment/chat/completions"
    );
    assert_eq!(chat.query.as_deref(), Some("api-version=2024-10-21"));
}

#[tokio::test]
async fn copilot_account_type_and_api_base_come_from_the_settings() {
    use bridge_llm::copilot::CopilotAccountType;
    let mut settings = bridge_llm::BackendSettings {
        github_token: Some("gho_example".into()),
        gh_program: None,
        copilot_account_type: Some(CopilotAccountType::Business),
        ..Default::default()
    };
    let selected = bridge_llm::select_backend(settings.clone()).await.unwrap();
    assert_eq!(selected.kind.as_str(), "copilot");
    assert_eq!(selected.base_url, "https://api.business.githubcopilot.com");

    settings.copilot_api_base = Some("https://copilot.internal.example".into());
    settings.copilot_headers = vec![("Editor-Version".into(), "vscode/9.9.9".into())];
    let selected = bridge_llm::select_backend(settings).await.unwrap();
    assert_eq!(selected.base_url, "https://copilot.internal.example");
}
