//! The daemon's chat backends from the configuration: the auto-selected
//! one and every `[backends.NAME]`, with the `[models]` routes.

use std::sync::Arc;

use async_trait::async_trait;
use bridge_config::{BackendConfig, BackendKind, BackendStyle, BridgeConfig};
use bridge_llm::{
    BackendSpec, ChatBackend, ChatRequest, ChatStream, LlmError, Selected, select_backend,
};
use bridge_util::Secret;

use super::{BackendEntry, Backends, PromptStyle};
use crate::settings::{backend_settings, copilot_account_type, retry_of};

/// The daemon's backends: the auto-selected one (if any) and every
/// configured one. The default is `default_backend`, else the
/// auto-selected one, else the first configured one.
///
/// A `[backends.NAME]` whose name equals the auto-selected backend's kind
/// replaces it: the table is what the user wrote down.
///
/// `served` are the daemon's own backends (`vscode`), added after the
/// configured ones; a configured backend of the same name keeps its name.
pub async fn build_backends(config: &BridgeConfig, served: Vec<BackendEntry>) -> Backends {
    let mut entries = Vec::new();
    let auto = match select_backend(backend_settings(config)).await {
        Ok(selected) => {
            let kind = selected.kind.as_str();
            let shadowed = config.backends.iter().any(|b| b.name == kind);
            if shadowed {
                tracing::info!(
                    backend = kind,
                    "the auto-selected backend is replaced by [backends.{kind}]"
                );
            } else {
                tracing::info!(backend = kind, source = %selected.source, "chat backend selected");
                entries.push(selected_entry(&selected));
            }
            Some(kind)
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
    // The daemon's own backends are never the default unless named: a
    // request for a plain model must not reach an editor by surprise.
    let configured = entries.len();
    for entry in served {
        if entries.iter().any(|e| e.name == entry.name) {
            tracing::warn!(
                "a configured backend is named {:?}, so the daemon's own {} backend is not served",
                entry.name,
                entry.kind
            );
            continue;
        }
        entries.push(entry);
    }
    let default = match (&config.default_backend, auto) {
        (Some(name), _) if entries.iter().any(|e| &e.name == name) => Some(name.clone()),
        (Some(name), auto) => {
            tracing::warn!(
                "default_backend {name:?} names no backend of this daemon (the auto-selected one is {}); using the usual default",
                auto.unwrap_or("none")
            );
            entries[..configured].first().map(|e| e.name.clone())
        }
        (None, _) => entries[..configured].first().map(|e| e.name.clone()),
    };
    // `with_routes` warns of a target naming no backend of this daemon.
    Backends::new(entries, default.as_deref()).with_routes(config.models.clone())
}

fn selected_entry(selected: &Selected) -> BackendEntry {
    BackendEntry {
        name: selected.kind.as_str().to_owned(),
        kind: selected.kind,
        backend: Arc::clone(&selected.backend),
        base_url: selected.base_url.clone(),
        default_model: selected.model.clone(),
        models: Vec::new(),
        style: PromptStyle::Chat,
        presence: None,
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
    let mut spec = table_spec(config, table);
    let base_url = spec.shown_base_url();
    let default_model = spec.default_model().unwrap_or("(deployment)").to_owned();
    let backend = match build_configured(config, table, &mut spec).await {
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
        kind: table.provider,
        backend,
        base_url,
        default_model: Some(default_model),
        models: table.models.clone(),
        style,
        presence: None,
    }
}

/// What a `[backends.NAME]` table says, with the daemon-wide settings it
/// inherits (Ollama's host, Copilot's account, API base and headers).
fn table_spec(config: &BridgeConfig, table: &BackendConfig) -> BackendSpec {
    let mut spec = BackendSpec::new(table.provider, &table.name);
    spec.base_url = table.base_url.clone();
    spec.model = table.model.clone();
    spec.api_key = table.api_key.clone();
    spec.headers = table
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), Secret::from(value.as_str())))
        .collect();
    spec.retry = retry_of(config);
    match table.provider {
        BackendKind::Ollama => {
            spec.base_url = spec.base_url.or_else(|| config.ollama_base_url.clone());
        }
        BackendKind::Copilot => {
            spec.copilot_account_type = copilot_account_type(config).unwrap_or_default();
            spec.base_url = spec.base_url.or_else(|| config.copilot.api_base.clone());
            // The daemon-wide headers first: the table's replace them.
            let table_headers = std::mem::take(&mut spec.headers);
            spec.headers = config
                .copilot
                .headers
                .iter()
                .map(|(name, value)| (name.clone(), Secret::from(value.as_str())))
                .chain(table_headers)
                .collect();
        }
        BackendKind::OpenAi | BackendKind::Azure | BackendKind::Anthropic | BackendKind::Vscode => {
        }
    }
    spec
}

async fn build_configured(
    config: &BridgeConfig,
    table: &BackendConfig,
    spec: &mut BackendSpec,
) -> Result<Arc<dyn ChatBackend>, String> {
    if let Some(reason) = table.missing_key() {
        return Err(reason);
    }
    match table.provider {
        BackendKind::Azure if spec.api_key.is_none() => {
            return Err(format!("backends.{}: no api_key_env", table.name));
        }
        BackendKind::Copilot => {
            let token = copilot_token(config, spec.api_key.take()).await.ok_or_else(|| {
                format!(
                    "backends.{}: no GitHub token: set api_key_env to a variable holding one, set COPILOT_GITHUB_TOKEN, or run `gh auth login`",
                    table.name
                )
            })?;
            spec.api_key = Some(token);
        }
        _ => {}
    }
    bridge_llm::build(spec).map_err(|err| format!("backends.{}: {err}", table.name))
}

/// The table's own token, else `COPILOT_GITHUB_TOKEN`, else `gh auth token`
/// (unless `COPILOT_BRIDGE_NO_GH`).
async fn copilot_token(config: &BridgeConfig, own: Option<Secret>) -> Option<Secret> {
    if let Some(token) = own.or_else(|| config.github_token.clone()) {
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
    .map(Secret::new)
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

    async fn stream(&self, _request: &ChatRequest) -> Result<ChatStream, LlmError> {
        Err(LlmError::NotConfigured(self.reason.clone()))
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        Err(LlmError::NotConfigured(self.reason.clone()))
    }
}
