//! Choosing the backend from the configuration, or detecting one.
//!
//! An explicit provider (`COPILOT_BYOK_PROVIDER`) always wins. Without one,
//! the first usable source in this documented order is taken: a GitHub
//! token for Copilot (`COPILOT_GITHUB_TOKEN`, else `gh auth token`), then
//! `OPENAI_API_KEY`, then `ANTHROPIC_API_KEY`, then an Ollama server
//! answering at its base URL. The chosen backend is built by
//! [`crate::build`], like every other.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bridge_util::Secret;

use crate::build::{BackendSpec, build};
use crate::copilot::GH_TOKEN_TIMEOUT;
use crate::kind::BackendKind;
use crate::ollama::OLLAMA_DEFAULT_BASE_URL;
use crate::{
    ChatBackend, CopilotAccountType, LlmError, RetryConfig, github_token_from_command,
    ollama_is_running,
};

/// A local Ollama answers at once; detection must not stall startup.
pub const OLLAMA_PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// Everything selection looks at, as plain values: the caller reads the
/// configuration and the environment, so selection is testable without
/// touching the process environment.
#[derive(Debug, Clone)]
pub struct BackendSettings {
    /// `COPILOT_BYOK_PROVIDER`.
    pub provider: Option<BackendKind>,
    /// `COPILOT_BYOK_API_KEY`.
    pub api_key: Option<Secret>,
    /// `COPILOT_BYOK_BASE_URL` (Azure: the resource endpoint).
    pub base_url: Option<String>,
    /// `COPILOT_BYOK_MODEL` (Azure: the deployment).
    pub model: Option<String>,
    /// `COPILOT_GITHUB_TOKEN`.
    pub github_token: Option<Secret>,
    /// `OPENAI_API_KEY`.
    pub openai_api_key: Option<Secret>,
    /// `ANTHROPIC_API_KEY`.
    pub anthropic_api_key: Option<Secret>,
    /// Where Ollama is probed and reached.
    pub ollama_base_url: String,
    /// Azure's `api-version`; the default when `None`.
    pub azure_api_version: Option<String>,
    /// The program asked for a GitHub token (`gh`); `None` skips the
    /// lookup, which tests need to stay independent of the machine.
    pub gh_program: Option<String>,
    /// Copilot's account type (its default API base); individual when `None`.
    pub copilot_account_type: Option<CopilotAccountType>,
    /// Overrides Copilot's API base.
    pub copilot_api_base: Option<String>,
    /// Integration headers that replace the defaults of the same name (or
    /// add to them): Copilot changes what it requires over time. Header
    /// values can carry credentials, so `Debug` shows them redacted.
    pub copilot_headers: Vec<(String, Secret)>,
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

/// The chosen backend and why it was chosen.
pub struct Selected {
    /// Already wrapped in `RetryingBackend`.
    pub backend: Arc<dyn ChatBackend>,
    pub kind: BackendKind,
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
    if let Some(kind) = settings.provider {
        let source = format!("COPILOT_BYOK_PROVIDER={kind}");
        return explicit(kind, &settings, source);
    }
    if let Some(token) = non_empty(&settings.github_token) {
        let source = "auto-detected: COPILOT_GITHUB_TOKEN".into();
        return selected(copilot(token.clone(), &settings), source);
    }
    if let Some(program) = settings.gh_program.clone() {
        let token = tokio::task::spawn_blocking(move || {
            github_token_from_command(&program, &["auth", "token"], GH_TOKEN_TIMEOUT)
        })
        .await
        .ok()
        .flatten();
        if let Some(token) = token {
            let spec = copilot(Secret::new(token), &settings);
            return selected(spec, "auto-detected: gh auth token".into());
        }
    }
    if let Some(key) = non_empty(&settings.openai_api_key) {
        let spec = keyed(BackendKind::OpenAi, key, &settings);
        return selected(spec, "auto-detected: OPENAI_API_KEY".into());
    }
    if let Some(key) = non_empty(&settings.anthropic_api_key) {
        let spec = keyed(BackendKind::Anthropic, key, &settings);
        return selected(spec, "auto-detected: ANTHROPIC_API_KEY".into());
    }
    if ollama_is_running(&settings.ollama_base_url, OLLAMA_PROBE_TIMEOUT).await {
        let source = format!("auto-detected: Ollama at {}", settings.ollama_base_url);
        let mut spec = spec_of(BackendKind::Ollama, &settings);
        spec.base_url = Some(settings.ollama_base_url.clone());
        return selected(spec, source);
    }
    Err(LlmError::NotConfigured(NOTHING_CONFIGURED.into()))
}

/// Why a `vscode` backend cannot come from configuration.
pub(crate) const VSCODE_NOT_BUILT: &str = "a VS Code window: the daemon serves the vscode backend itself once the Copilot Bridge extension connects (docs/vscode.md); it cannot be configured";

fn non_empty(value: &Option<Secret>) -> Option<&Secret> {
    value
        .as_ref()
        .filter(|secret| !secret.expose().trim().is_empty())
}

fn non_empty_text(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|text| !text.trim().is_empty())
}

fn explicit(
    kind: BackendKind,
    settings: &BackendSettings,
    source: String,
) -> Result<Selected, LlmError> {
    let missing =
        |what: &str| LlmError::NotConfigured(format!("COPILOT_BYOK_PROVIDER={kind} needs {what}"));
    let spec = match kind {
        BackendKind::OpenAi => {
            let key = non_empty(&settings.api_key)
                .or(non_empty(&settings.openai_api_key))
                .ok_or_else(|| missing("COPILOT_BYOK_API_KEY (or OPENAI_API_KEY)"))?;
            keyed(kind, key, settings)
        }
        BackendKind::Azure => {
            let key =
                non_empty(&settings.api_key).ok_or_else(|| missing("COPILOT_BYOK_API_KEY"))?;
            non_empty_text(&settings.base_url)
                .ok_or_else(|| missing("COPILOT_BYOK_BASE_URL (the resource endpoint)"))?;
            non_empty_text(&settings.model)
                .ok_or_else(|| missing("COPILOT_BYOK_MODEL (the deployment name)"))?;
            keyed(kind, key, settings)
        }
        BackendKind::Anthropic => {
            let key = non_empty(&settings.api_key)
                .or(non_empty(&settings.anthropic_api_key))
                .ok_or_else(|| missing("COPILOT_BYOK_API_KEY (or ANTHROPIC_API_KEY)"))?;
            keyed(kind, key, settings)
        }
        BackendKind::Ollama => {
            let mut spec = spec_of(kind, settings);
            spec.base_url = Some(
                settings
                    .base_url
                    .clone()
                    .unwrap_or_else(|| settings.ollama_base_url.clone()),
            );
            spec
        }
        BackendKind::Copilot => {
            // Not a BYOK provider (the configuration refuses it); reached
            // only by a caller that built the settings itself.
            let token = non_empty(&settings.api_key)
                .or(non_empty(&settings.github_token))
                .ok_or_else(|| missing("a GitHub token"))?;
            copilot(token.clone(), settings)
        }
        BackendKind::Vscode => return Err(missing(VSCODE_NOT_BUILT)),
    };
    selected(spec, source)
}

/// The settings every selected backend shares, named by its kind.
fn spec_of(kind: BackendKind, settings: &BackendSettings) -> BackendSpec {
    let mut spec = BackendSpec::new(kind, kind.as_str());
    spec.model = settings.model.clone();
    spec.azure_api_version = settings.azure_api_version.clone();
    spec.retry = settings.retry;
    spec
}

/// A backend signed in with `key` at the configured base URL (or its default).
fn keyed(kind: BackendKind, key: &Secret, settings: &BackendSettings) -> BackendSpec {
    let mut spec = spec_of(kind, settings);
    spec.api_key = Some(key.clone());
    spec.base_url = non_empty_text(&settings.base_url).map(str::to_owned);
    spec
}

fn copilot(token: Secret, settings: &BackendSettings) -> BackendSpec {
    let mut spec = spec_of(BackendKind::Copilot, settings);
    spec.api_key = Some(token);
    spec.base_url = settings.copilot_api_base.clone();
    spec.copilot_account_type = settings.copilot_account_type.unwrap_or_default();
    spec.headers = settings.copilot_headers.clone();
    spec
}

fn selected(spec: BackendSpec, source: String) -> Result<Selected, LlmError> {
    Ok(Selected {
        backend: build(&spec)?,
        kind: spec.kind,
        source,
        base_url: spec.shown_base_url(),
        model: spec.model,
    })
}
