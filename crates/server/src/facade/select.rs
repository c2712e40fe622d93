//! The chat backends of the daemon from the configuration: the one
//! selected as `validate` and `run` select it, named by its kind.

use std::sync::Arc;

use bridge_config::{BridgeConfig, ByokProvider};
use bridge_llm::{BackendSettings, Provider, RetryConfig, select_backend};

use super::backends::{BackendEntry, Backends, PromptStyle};

/// Set (to anything but empty) to skip asking `gh auth token`; for tests,
/// which must not pick up the developer's own GitHub login.
pub const NO_GH_ENV: &str = "COPILOT_BRIDGE_NO_GH";
/// Ollama's own variable for where it listens (`host:port` or a URL).
pub const OLLAMA_HOST_ENV: &str = "OLLAMA_HOST";

/// The daemon's backends: the selected one (if any) as the default.
pub async fn build_backends(
    config: &BridgeConfig,
    env: impl Fn(&str) -> Option<String>,
) -> Backends {
    let settings = settings_from(config, env);
    match select_backend(settings).await {
        Ok(selected) => {
            let entry = BackendEntry {
                name: selected.kind.to_owned(),
                kind: selected.kind.to_owned(),
                backend: Arc::clone(&selected.backend),
                base_url: selected.base_url.clone(),
                default_model: selected.model.clone(),
                models: Vec::new(),
                style: PromptStyle::Chat,
            };
            tracing::info!(backend = selected.kind, source = %selected.source, "chat backend selected");
            Backends::new(vec![entry], Some(selected.kind))
        }
        Err(err) => {
            tracing::warn!("no chat backend for the facade: {err}");
            Backends::default()
        }
    }
}

/// The backend settings from the configuration plus the provider keys
/// that live outside it (`OPENAI_API_KEY`, …), read through `env`.
pub fn settings_from(
    config: &BridgeConfig,
    env: impl Fn(&str) -> Option<String>,
) -> BackendSettings {
    let byok = &config.byok;
    let mut settings = BackendSettings {
        provider: byok.provider.map(provider_of),
        api_key: byok.api_key.as_ref().map(|key| key.expose().to_owned()),
        base_url: byok.base_url.clone(),
        model: byok.model.clone(),
        github_token: config
            .github_token
            .as_ref()
            .map(|token| token.expose().to_owned()),
        openai_api_key: env("OPENAI_API_KEY"),
        anthropic_api_key: env("ANTHROPIC_API_KEY"),
        retry: RetryConfig {
            policy: config.error_policy(),
            ..RetryConfig::default()
        },
        copilot_account_type: config
            .copilot
            .account_type
            .as_deref()
            .and_then(copilot_account_type),
        copilot_api_base: config.copilot.api_base.clone(),
        copilot_headers: config
            .copilot
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect(),
        ..BackendSettings::default()
    };
    if env(NO_GH_ENV).is_some_and(|value| !value.is_empty()) {
        settings.gh_program = None;
    }
    if let Some(host) = env(OLLAMA_HOST_ENV).filter(|host| !host.trim().is_empty()) {
        let host = host.trim().trim_end_matches('/');
        settings.ollama_base_url = if host.contains("://") {
            host.to_owned()
        } else {
            format!("http://{host}")
        };
    }
    settings
}

fn provider_of(provider: ByokProvider) -> Provider {
    match provider {
        ByokProvider::OpenAi => Provider::OpenAi,
        ByokProvider::Azure => Provider::Azure,
        ByokProvider::Anthropic => Provider::Anthropic,
        ByokProvider::Ollama => Provider::Ollama,
    }
}

/// The account types config.toml accepts (validated when it is loaded).
fn copilot_account_type(name: &str) -> Option<bridge_llm::copilot::CopilotAccountType> {
    use bridge_llm::copilot::CopilotAccountType;
    match name {
        "individual" => Some(CopilotAccountType::Individual),
        "business" => Some(CopilotAccountType::Business),
        "enterprise" => Some(CopilotAccountType::Enterprise),
        _ => None,
    }
}
