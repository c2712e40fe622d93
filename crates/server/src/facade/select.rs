//! The chat backends of the daemon from the configuration: the one
//! selected as `validate` and `run` select it (named by its kind), plus one
//! per `[backends.NAME]` table.
//!
//! Everything is read from [`BridgeConfig`], never from the process
//! environment: the configuration loader already holds `OPENAI_API_KEY`,
//! `OLLAMA_HOST`, `COPILOT_BRIDGE_NO_GH` and the `api_key_env` variables, so
//! a test's loader environment is all a daemon in a test sees.

use std::sync::Arc;

use async_trait::async_trait;
use bridge_config::{BackendConfig, BackendKind, BackendStyle, BridgeConfig, ByokProvider};
use bridge_llm::select::{
    ANTHROPIC_DEFAULT_MODEL, AZURE_DEFAULT_API_VERSION, COPILOT_DEFAULT_MODEL,
    OLLAMA_DEFAULT_MODEL, OPENAI_DEFAULT_BASE_URL, OPENAI_DEFAULT_MODEL,
};
use bridge_llm::{
    AnthropicBackend, AnthropicConfig, AzureBackend, AzureConfig, BackendSettings, ChatBackend,
    ChatRequest, ChatStream, CopilotBackend, CopilotConfig, LlmError, OllamaBackend, OllamaConfig,
    OpenAiBackend, OpenAiConfig, Provider, RetryConfig, RetryingBackend, select_backend,
};

use super::backends::{BackendEntry, Backends, PromptStyle};

/// The daemon's backends: the auto-selected one (if any) and every
/// configured one. The default is `default_backend`, else the
/// auto-selected one, else the first configured one.
///
/// A `[backends.NAME]` whose name equals the auto-selected backend's kind
/// replaces it: the table is what the user wrote down.
pub async fn build_backends(config: &BridgeConfig) -> Backends {
    let mut entries = Vec::new();
    let auto = match select_backend(settings_from(config)).await {
        Ok(selected) => {
            let shadowed = config.backends.iter().any(|b| b.name == selected.kind);
            if shadowed {
                tracing::info!(
                    backend = selected.kind,
                    "the auto-selected backend is replaced by [backends.{}]",
                    selected.kind
                );
            } else {
                tracing::info!(backend = selected.kind, source = %selected.source, "chat backend selected");
                entries.push(BackendEntry {
                    name: selected.kind.to_owned(),
                    kind: selected.kind.to_owned(),
                    backend: Arc::clone(&selected.backend),
                    base_url: selected.base_url.clone(),
                    default_model: selected.model.clone(),
                    models: Vec::new(),
                    style: PromptStyle::Chat,
                });
            }
            Some(selected.kind)
        }
        Err(err) => {
            if config.backends.is_empty() {
                tracing::warn!("no chat backend for the facade: {err}");
            }
            None
        }
    };
    for table in &config.backends {
        entries.push(configured_entry(config, table).await);
    }
    let default = match (&config.default_backend, auto) {
        (Some(name), _) if entries.iter().any(|e| &e.name == name) => Some(name.clone()),
        (Some(name), auto) => {
            tracing::warn!(
                "default_backend {name:?} names no backend of this daemon (the auto-selected one is {}); using the usual default",
                auto.unwrap_or("none")
            );
            entries.first().map(|e| e.name.clone())
        }
        (None, _) => entries.first().map(|e| e.name.clone()),
    };
    Backends::new(entries, default.as_deref())
}

/// The backend settings of auto-selection, from the configuration.
pub fn settings_from(config: &BridgeConfig) -> BackendSettings {
    let byok = &config.byok;
    let exposed = |secret: &Option<bridge_policy::Secret>| {
        secret.as_ref().map(|value| value.expose().to_owned())
    };
    let mut settings = BackendSettings {
        provider: byok.provider.map(provider_of),
        api_key: exposed(&byok.api_key),
        base_url: byok.base_url.clone(),
        model: byok.model.clone(),
        github_token: exposed(&config.github_token),
        openai_api_key: exposed(&config.openai_api_key),
        anthropic_api_key: exposed(&config.anthropic_api_key),
        retry: retry_of(config),
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
    if config.no_gh {
        settings.gh_program = None;
    }
    if let Some(base_url) = &config.ollama_base_url {
        settings.ollama_base_url = base_url.clone();
    }
    settings
}

fn retry_of(config: &BridgeConfig) -> RetryConfig {
    RetryConfig {
        policy: config.error_policy(),
        ..RetryConfig::default()
    }
}

/// One `[backends.NAME]` as a backend; one that cannot be built (its key
/// variable unset, no GitHub token) stays listed and answers every request
/// with the reason, so status and `/healthz` show it unavailable.
async fn configured_entry(config: &BridgeConfig, table: &BackendConfig) -> BackendEntry {
    let style = match table.style {
        BackendStyle::Chat => PromptStyle::Chat,
        BackendStyle::SinglePrompt => PromptStyle::SinglePrompt {
            turns: table.history_turns,
        },
    };
    let (base_url, default_model) = describe(config, table);
    let backend = match build_configured(config, table, &base_url, &default_model).await {
        Ok(backend) => backend,
        Err(reason) => {
            tracing::warn!(backend = %table.name, "backend unavailable: {reason}");
            Arc::new(Unavailable {
                name: table.name.clone(),
                reason,
            })
        }
    };
    BackendEntry {
        name: table.name.clone(),
        kind: table.provider.as_str().to_owned(),
        backend,
        base_url,
        default_model: Some(default_model),
        models: table.models.clone(),
        style,
    }
}

/// Where a table's backend is reached and its default model, defaults filled in.
fn describe(config: &BridgeConfig, table: &BackendConfig) -> (String, String) {
    let model = |default: &str| table.model.clone().unwrap_or_else(|| default.to_owned());
    match table.provider {
        BackendKind::OpenAi => (
            table
                .base_url
                .clone()
                .unwrap_or_else(|| OPENAI_DEFAULT_BASE_URL.to_owned()),
            model(OPENAI_DEFAULT_MODEL),
        ),
        BackendKind::Azure => (
            table.base_url.clone().unwrap_or_default(),
            model("(deployment)"),
        ),
        BackendKind::Anthropic => (
            table
                .base_url
                .clone()
                .unwrap_or_else(|| AnthropicConfig::new("anthropic", "").base_url),
            model(ANTHROPIC_DEFAULT_MODEL),
        ),
        BackendKind::Ollama => (
            table
                .base_url
                .clone()
                .or_else(|| config.ollama_base_url.clone())
                .unwrap_or_else(|| bridge_llm::ollama::OLLAMA_DEFAULT_BASE_URL.to_owned()),
            model(OLLAMA_DEFAULT_MODEL),
        ),
        BackendKind::Copilot => {
            let account = config
                .copilot
                .account_type
                .as_deref()
                .and_then(copilot_account_type)
                .unwrap_or_default();
            (
                table
                    .base_url
                    .clone()
                    .or_else(|| config.copilot.api_base.clone())
                    .unwrap_or_else(|| account.default_api_base().to_owned()),
                model(COPILOT_DEFAULT_MODEL),
            )
        }
    }
}

fn headers_of(table: &BackendConfig) -> Vec<(String, String)> {
    table
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

async fn build_configured(
    config: &BridgeConfig,
    table: &BackendConfig,
    base_url: &str,
    model: &str,
) -> Result<Arc<dyn ChatBackend>, String> {
    if let Some(reason) = table.missing_key() {
        return Err(reason);
    }
    let key = table.api_key.as_ref().map(|k| k.expose().to_owned());
    let retry = retry_of(config);
    let failed = |err: LlmError| format!("backends.{}: {err}", table.name);
    let backend: Arc<dyn ChatBackend> = match table.provider {
        BackendKind::OpenAi => {
            let mut settings = OpenAiConfig::new(&table.name, base_url, model);
            settings.api_key = key;
            settings.extra_headers = headers_of(table);
            Arc::new(RetryingBackend::new(
                OpenAiBackend::new(settings).map_err(failed)?,
                retry,
            ))
        }
        BackendKind::Azure => {
            let key = key.ok_or_else(|| format!("backends.{}: no api_key_env", table.name))?;
            let mut settings = AzureConfig::new(base_url, model, AZURE_DEFAULT_API_VERSION, key);
            settings.name = table.name.clone();
            Arc::new(RetryingBackend::new(
                AzureBackend::new(settings).map_err(failed)?,
                retry,
            ))
        }
        BackendKind::Anthropic => {
            let mut settings = AnthropicConfig::new(&table.name, model);
            settings.base_url = base_url.to_owned();
            settings.api_key = key;
            settings.extra_headers = headers_of(table);
            Arc::new(RetryingBackend::new(
                AnthropicBackend::new(settings).map_err(failed)?,
                retry,
            ))
        }
        BackendKind::Ollama => {
            let mut settings = OllamaConfig::new(model);
            settings.name = table.name.clone();
            settings.base_url = base_url.to_owned();
            Arc::new(RetryingBackend::new(
                OllamaBackend::new(settings).map_err(failed)?,
                retry,
            ))
        }
        BackendKind::Copilot => {
            let token = copilot_token(config, key).await.ok_or_else(|| {
                format!(
                    "backends.{}: no GitHub token: set api_key_env to a variable holding one, set COPILOT_GITHUB_TOKEN, or run `gh auth login`",
                    table.name
                )
            })?;
            let mut settings = CopilotConfig::new(token, model);
            settings.name = table.name.clone();
            if let Some(kind) = config
                .copilot
                .account_type
                .as_deref()
                .and_then(copilot_account_type)
            {
                settings.account_type = kind;
            }
            settings.api_base = table
                .base_url
                .clone()
                .or_else(|| config.copilot.api_base.clone());
            for (name, value) in config.copilot.headers.iter().chain(&table.headers) {
                settings
                    .integration_headers
                    .retain(|(existing, _)| !existing.eq_ignore_ascii_case(name));
                settings
                    .integration_headers
                    .push((name.clone(), value.clone()));
            }
            Arc::new(RetryingBackend::new(
                CopilotBackend::new(settings).map_err(failed)?,
                retry,
            ))
        }
    };
    Ok(backend)
}

/// The table's own token, else `COPILOT_GITHUB_TOKEN`, else `gh auth token`
/// (unless `COPILOT_BRIDGE_NO_GH`).
async fn copilot_token(config: &BridgeConfig, own: Option<String>) -> Option<String> {
    if let Some(token) = own.or_else(|| config.github_token.as_ref().map(|t| t.expose().to_owned()))
    {
        return Some(token);
    }
    if config.no_gh {
        return None;
    }
    tokio::task::spawn_blocking(|| {
        bridge_llm::github_token_from_command(
            "gh",
            &["auth", "token"],
            bridge_llm::copilot::GH_TOKEN_TIMEOUT,
        )
    })
    .await
    .ok()
    .flatten()
}

/// A configured backend that could not be built: it answers with why.
struct Unavailable {
    name: String,
    reason: String,
}

#[async_trait]
impl ChatBackend for Unavailable {
    fn name(&self) -> &str {
        &self.name
    }

    async fn stream(&self, _request: ChatRequest) -> Result<ChatStream, LlmError> {
        Err(LlmError::NotConfigured(self.reason.clone()))
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        Err(LlmError::NotConfigured(self.reason.clone()))
    }
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
