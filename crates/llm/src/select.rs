//! Choosing the backend from the configuration, or detecting one.
//!
//! An explicit provider (`COPILOT_BYOK_PROVIDER`) always wins. Without one,
//! the first usable source in this documented order is taken: a GitHub
//! token for Copilot (`COPILOT_GITHUB_TOKEN`, else `gh auth token`), then
//! `OPENAI_API_KEY`, then `ANTHROPIC_API_KEY`, then an Ollama server
//! answering at its base URL.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::copilot::GH_TOKEN_TIMEOUT;
use crate::ollama::OLLAMA_DEFAULT_BASE_URL;
use crate::{
    AnthropicBackend, AnthropicConfig, AzureBackend, AzureConfig, ChatBackend, CopilotAccountType,
    CopilotBackend, CopilotConfig, LlmError, OllamaBackend, OllamaConfig, OpenAiBackend,
    OpenAiConfig, RetryConfig, RetryingBackend, github_token_from_command, ollama_is_running,
};

pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const AZURE_DEFAULT_API_VERSION: &str = "2024-10-21";
/// Models used when the configuration names none.
pub const OPENAI_DEFAULT_MODEL: &str = "gpt-4o-mini";
pub const ANTHROPIC_DEFAULT_MODEL: &str = "claude-3-5-haiku-latest";
pub const COPILOT_DEFAULT_MODEL: &str = "gpt-4o";
pub const OLLAMA_DEFAULT_MODEL: &str = "llama3.2";
/// A local Ollama answers at once; detection must not stall startup.
pub const OLLAMA_PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// A bring-your-own-key provider named in the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    OpenAi,
    Azure,
    Anthropic,
    Ollama,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Azure => "azure",
            Self::Anthropic => "anthropic",
            Self::Ollama => "ollama",
        }
    }
}

impl FromStr for Provider {
    type Err = LlmError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(Self::OpenAi),
            "azure" => Ok(Self::Azure),
            "anthropic" => Ok(Self::Anthropic),
            "ollama" => Ok(Self::Ollama),
            _ => Err(LlmError::NotConfigured(format!(
                "unknown provider {text:?}: expected one of openai, azure, anthropic, ollama"
            ))),
        }
    }
}

/// Everything selection looks at, as plain values: the caller reads the
/// configuration and the environment, so selection is testable without
/// touching the process environment.
#[derive(Clone)]
pub struct BackendSettings {
    /// `COPILOT_BYOK_PROVIDER`.
    pub provider: Option<Provider>,
    /// `COPILOT_BYOK_API_KEY`.
    pub api_key: Option<String>,
    /// `COPILOT_BYOK_BASE_URL` (Azure: the resource endpoint).
    pub base_url: Option<String>,
    /// `COPILOT_BYOK_MODEL` (Azure: the deployment).
    pub model: Option<String>,
    /// `COPILOT_GITHUB_TOKEN`.
    pub github_token: Option<String>,
    /// `OPENAI_API_KEY`.
    pub openai_api_key: Option<String>,
    /// `ANTHROPIC_API_KEY`.
    pub anthropic_api_key: Option<String>,
    /// Where Ollama is probed and reached.
    pub ollama_base_url: String,
    /// Azure's `api-version`; [`AZURE_DEFAULT_API_VERSION`] when `None`.
    pub azure_api_version: Option<String>,
    /// The program asked for a GitHub token (`gh`); `None` skips the
    /// lookup, which tests need to stay independent of the machine.
    pub gh_program: Option<String>,
    /// Copilot's account type (its default API base); individual when `None`.
    pub copilot_account_type: Option<CopilotAccountType>,
    /// Overrides Copilot's API base.
    pub copilot_api_base: Option<String>,
    /// Integration headers that replace the defaults of the same name (or
    /// add to them): Copilot changes what it requires over time.
    pub copilot_headers: Vec<(String, String)>,
    pub retry: RetryConfig,
}

impl Default for BackendSettings {
    fn default() -> Self {
        Self {
            provider: None,
            api_key: None,
            base_url: None,
            model: None,
            github_token: None,
            openai_api_key: None,
            anthropic_api_key: None,
            ollama_base_url: OLLAMA_DEFAULT_BASE_URL.into(),
            azure_api_version: None,
            gh_program: Some("gh".into()),
            copilot_account_type: None,
            copilot_api_base: None,
            copilot_headers: Vec::new(),
            retry: RetryConfig::default(),
        }
    }
}

fn redacted(secret: &Option<String>) -> Option<&'static str> {
    secret.as_ref().map(|_| "<redacted>")
}

/// Keeps every secret out of logs.
impl fmt::Debug for BackendSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendSettings")
            .field("provider", &self.provider)
            .field("api_key", &redacted(&self.api_key))
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("github_token", &redacted(&self.github_token))
            .field("openai_api_key", &redacted(&self.openai_api_key))
            .field("anthropic_api_key", &redacted(&self.anthropic_api_key))
            .field("ollama_base_url", &self.ollama_base_url)
            .field("azure_api_version", &self.azure_api_version)
            .field("gh_program", &self.gh_program)
            .field("copilot_account_type", &self.copilot_account_type)
            .field("copilot_api_base", &self.copilot_api_base)
            .field(
                "copilot_headers",
                &self
                    .copilot_headers
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .field("retry", &self.retry)
            .finish()
    }
}

/// The chosen backend and why it was chosen.
pub struct Selected {
    /// Already wrapped in [`RetryingBackend`].
    pub backend: Arc<dyn ChatBackend>,
    /// `openai`, `azure`, `anthropic`, `copilot` or `ollama`.
    pub kind: &'static str,
    /// Why: `COPILOT_BYOK_PROVIDER=openai`, `auto-detected: OPENAI_API_KEY`, …
    pub source: String,
    pub base_url: String,
    /// The configured model, if any (the backend's default is used otherwise).
    pub model: Option<String>,
}

impl fmt::Debug for Selected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Selected")
            .field("kind", &self.kind)
            .field("source", &self.source)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

/// The message shown when no backend can be found.
pub const NOTHING_CONFIGURED: &str = "no LLM backend configured. Set one of: \
COPILOT_GITHUB_TOKEN (or run `gh auth login`) for GitHub Copilot; \
COPILOT_BYOK_PROVIDER (openai, azure, anthropic, ollama) with COPILOT_BYOK_API_KEY \
(and COPILOT_BYOK_BASE_URL / COPILOT_BYOK_MODEL where needed); OPENAI_API_KEY; \
ANTHROPIC_API_KEY; or start Ollama on 127.0.0.1:11434. \
Then check it with `copilot-bridge validate`.";

/// Picks the backend the settings call for; see the module docs for the order.
pub async fn select_backend(settings: BackendSettings) -> Result<Selected, LlmError> {
    if let Some(provider) = settings.provider {
        let source = format!("COPILOT_BYOK_PROVIDER={}", provider.as_str());
        return explicit(provider, &settings, source);
    }
    if let Some(token) = non_empty(&settings.github_token) {
        return copilot(
            token,
            &settings,
            "auto-detected: COPILOT_GITHUB_TOKEN".into(),
        );
    }
    if let Some(program) = settings.gh_program.clone() {
        let token = tokio::task::spawn_blocking(move || {
            github_token_from_command(&program, &["auth", "token"], GH_TOKEN_TIMEOUT)
        })
        .await
        .ok()
        .flatten();
        if let Some(token) = token {
            return copilot(&token, &settings, "auto-detected: gh auth token".into());
        }
    }
    if let Some(key) = non_empty(&settings.openai_api_key) {
        let base_url = settings
            .base_url
            .clone()
            .unwrap_or_else(|| OPENAI_DEFAULT_BASE_URL.into());
        return openai(
            key,
            base_url,
            &settings,
            "auto-detected: OPENAI_API_KEY".into(),
        );
    }
    if let Some(key) = non_empty(&settings.anthropic_api_key) {
        return anthropic(key, &settings, "auto-detected: ANTHROPIC_API_KEY".into());
    }
    if ollama_is_running(&settings.ollama_base_url, OLLAMA_PROBE_TIMEOUT).await {
        let source = format!("auto-detected: Ollama at {}", settings.ollama_base_url);
        let base_url = settings.ollama_base_url.clone();
        return ollama(base_url, &settings, source);
    }
    Err(LlmError::NotConfigured(NOTHING_CONFIGURED.into()))
}

fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|text| !text.trim().is_empty())
}

fn explicit(
    provider: Provider,
    settings: &BackendSettings,
    source: String,
) -> Result<Selected, LlmError> {
    let missing = |what: &str| {
        LlmError::NotConfigured(format!(
            "COPILOT_BYOK_PROVIDER={} needs {what}",
            provider.as_str()
        ))
    };
    match provider {
        Provider::OpenAi => {
            let key = non_empty(&settings.api_key)
                .or(non_empty(&settings.openai_api_key))
                .ok_or_else(|| missing("COPILOT_BYOK_API_KEY (or OPENAI_API_KEY)"))?;
            let base_url = settings
                .base_url
                .clone()
                .unwrap_or_else(|| OPENAI_DEFAULT_BASE_URL.into());
            openai(key, base_url, settings, source)
        }
        Provider::Azure => {
            let key =
                non_empty(&settings.api_key).ok_or_else(|| missing("COPILOT_BYOK_API_KEY"))?;
            let endpoint = non_empty(&settings.base_url)
                .ok_or_else(|| missing("COPILOT_BYOK_BASE_URL (the resource endpoint)"))?;
            let deployment = non_empty(&settings.model)
                .ok_or_else(|| missing("COPILOT_BYOK_MODEL (the deployment name)"))?;
            let api_version = settings
                .azure_api_version
                .clone()
                .unwrap_or_else(|| AZURE_DEFAULT_API_VERSION.into());
            let config = AzureConfig::new(endpoint, deployment, api_version, key);
            let backend = AzureBackend::new(config)?;
            Ok(wrap(backend, "azure", source, endpoint.into(), settings))
        }
        Provider::Anthropic => {
            let key = non_empty(&settings.api_key)
                .or(non_empty(&settings.anthropic_api_key))
                .ok_or_else(|| missing("COPILOT_BYOK_API_KEY (or ANTHROPIC_API_KEY)"))?;
            anthropic(key, settings, source)
        }
        Provider::Ollama => {
            let base_url = settings
                .base_url
                .clone()
                .unwrap_or_else(|| settings.ollama_base_url.clone());
            ollama(base_url, settings, source)
        }
    }
}

fn wrap<B: ChatBackend + 'static>(
    backend: B,
    kind: &'static str,
    source: String,
    base_url: String,
    settings: &BackendSettings,
) -> Selected {
    Selected {
        backend: Arc::new(RetryingBackend::new(backend, settings.retry)),
        kind,
        source,
        base_url,
        model: settings.model.clone(),
    }
}

fn model_or(settings: &BackendSettings, default: &str) -> String {
    non_empty(&settings.model).unwrap_or(default).to_owned()
}

fn openai(
    key: &str,
    base_url: String,
    settings: &BackendSettings,
    source: String,
) -> Result<Selected, LlmError> {
    let mut config = OpenAiConfig::new(
        "openai",
        base_url.clone(),
        model_or(settings, OPENAI_DEFAULT_MODEL),
    );
    config.api_key = Some(key.to_owned());
    let backend = OpenAiBackend::new(config)?;
    Ok(wrap(backend, "openai", source, base_url, settings))
}

fn anthropic(key: &str, settings: &BackendSettings, source: String) -> Result<Selected, LlmError> {
    let mut config = AnthropicConfig::new("anthropic", model_or(settings, ANTHROPIC_DEFAULT_MODEL));
    if let Some(base_url) = non_empty(&settings.base_url) {
        config.base_url = base_url.to_owned();
    }
    config.api_key = Some(key.to_owned());
    let base_url = config.base_url.clone();
    let backend = AnthropicBackend::new(config)?;
    Ok(wrap(backend, "anthropic", source, base_url, settings))
}

fn copilot(token: &str, settings: &BackendSettings, source: String) -> Result<Selected, LlmError> {
    let mut config = CopilotConfig::new(token, model_or(settings, COPILOT_DEFAULT_MODEL));
    if let Some(account_type) = settings.copilot_account_type {
        config.account_type = account_type;
    }
    if let Some(api_base) = &settings.copilot_api_base {
        config.api_base = Some(api_base.clone());
    }
    for (name, value) in &settings.copilot_headers {
        config
            .integration_headers
            .retain(|(existing, _)| !existing.eq_ignore_ascii_case(name));
        config
            .integration_headers
            .push((name.clone(), value.clone()));
    }
    let base_url = config
        .api_base
        .clone()
        .unwrap_or_else(|| config.account_type.default_api_base().to_owned());
    let backend = CopilotBackend::new(config)?;
    Ok(wrap(backend, "copilot", source, base_url, settings))
}

fn ollama(
    base_url: String,
    settings: &BackendSettings,
    source: String,
) -> Result<Selected, LlmError> {
    let mut config = OllamaConfig::new(model_or(settings, OLLAMA_DEFAULT_MODEL));
    config.base_url = base_url.clone();
    let backend = OllamaBackend::new(config)?;
    Ok(wrap(backend, "ollama", source, base_url, settings))
}
