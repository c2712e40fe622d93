//! The composition root: the one place that turns a [`BridgeConfig`] into
//! the running parts. Chat backends (the selected one and every
//! `[backends.NAME]`), the native runner's settings, the Copilot CLI
//! runner's configuration and the MCP depth every server an agent uses
//! counts from are made here, for the daemon (`serve`: facade, `/mcp/code`)
//! and the CLI (`run`, `validate`, `mcp code`) alike, so every door that
//! runs a task runs it with the same settings.
//!
//! Everything is read from [`BridgeConfig`], never from the process
//! environment: the configuration loader already holds `OPENAI_API_KEY`,
//! `OLLAMA_HOST`, `COPILOT_BRIDGE_NO_GH` and the `api_key_env` variables, so
//! a test's loader environment is all a daemon in a test sees.

use std::sync::Arc;

use async_trait::async_trait;
use bridge_config::{
    BackendConfig, BackendKind, BackendStyle, BridgeConfig, McpServerConfig, McpTransport,
};
use bridge_engine::orchestrate::{Orchestrator, OrchestratorSettings, Planner, SubTaskRunner};
use bridge_engine::runner::Runner;
use bridge_engine::runner::copilot::{
    CliProvider, CopilotCliConfig, McpServer as CopilotMcpServer,
};
use bridge_engine::runner::native::NativeSettings;
use bridge_llm::{
    BackendSettings, BackendSpec, ChatBackend, ChatRequest, ChatStream, CopilotAccountType,
    LlmError, RetryConfig, Selected, select_backend,
};
use bridge_util::Secret;

use crate::facade::backends::{BackendEntry, Backends, PromptStyle};

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
    for (key, target) in config.models.targets() {
        if !entries.iter().any(|e| e.name == target.backend) {
            tracing::warn!(
                "{key} = {:?}: this daemon has no backend {:?} (not selected or not configured); requests it routes are refused",
                target.to_string(),
                target.backend
            );
        }
    }
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

/// The backend settings of auto-selection (`COPILOT_BYOK_*`, the keys it
/// detects, Copilot's account), from the configuration.
pub fn backend_settings(config: &BridgeConfig) -> BackendSettings {
    let byok = &config.byok;
    let mut settings = BackendSettings {
        provider: byok.provider,
        api_key: byok.api_key.clone(),
        base_url: byok.base_url.clone(),
        model: byok.model.clone(),
        github_token: config.github_token.clone(),
        openai_api_key: config.openai_api_key.clone(),
        anthropic_api_key: config.anthropic_api_key.clone(),
        retry: retry_of(config),
        copilot_account_type: copilot_account_type(config),
        copilot_api_base: config.copilot.api_base.clone(),
        copilot_headers: config
            .copilot
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), Secret::new(value.clone())))
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

/// How the native agent loop runs, whoever started the task: `run`, the
/// daemon's `/mcp/code`, `mcp code`.
pub fn native_settings(config: &BridgeConfig) -> NativeSettings {
    NativeSettings {
        project_context: config.project_context.clone(),
        error_policy: config.error_policy(),
        ..NativeSettings::default()
    }
}

/// The Copilot CLI's settings from ours: its path, the GitHub token, the
/// BYOK provider when one is configured, and our MCP servers.
pub fn copilot_cli_config(config: &BridgeConfig) -> Result<CopilotCliConfig, String> {
    let provider = match config.byok.provider {
        None => None,
        Some(kind) => Some(CliProvider::from_settings(
            kind,
            config.byok.base_url.as_deref(),
            config.byok.api_key.clone(),
            config.byok.model.as_deref(),
        )?),
    };
    let mcp_servers = config
        .mcp
        .servers
        .iter()
        .filter(|(_, server)| server.enabled)
        .map(|(name, server)| (name.clone(), copilot_mcp_server(server)))
        .collect();
    Ok(CopilotCliConfig {
        cli_path: config.cli_path.clone(),
        github_token: config.github_token.clone(),
        provider,
        mcp_servers,
        ..CopilotCliConfig::default()
    })
}

/// One of our `[mcp.servers.NAME]` in the Copilot CLI's session shape.
fn copilot_mcp_server(server: &McpServerConfig) -> CopilotMcpServer {
    let tools = if server.tools.is_empty() {
        vec!["*".to_owned()]
    } else {
        server.tools.clone()
    };
    match server.transport() {
        McpTransport::Stdio => CopilotMcpServer::Stdio {
            command: server.command.clone().unwrap_or_default(),
            args: server.args.clone(),
            env: server.env.clone(),
            cwd: server.cwd.as_ref().map(|dir| dir.display().to_string()),
            tools,
        },
        McpTransport::Http => CopilotMcpServer::Http {
            url: server.url.clone().unwrap_or_default(),
            headers: server.headers.clone(),
            tools,
        },
    }
}

/// `config` with the depth every MCP server the agent uses must count its
/// calls from: in the environment of stdio servers, in a header of HTTP
/// ones (see `bridge_mcp::depth`).
pub fn with_mcp_depth(config: &BridgeConfig, depth: u64) -> BridgeConfig {
    let mut config = config.clone();
    for server in config.mcp.servers.values_mut() {
        match server.transport() {
            McpTransport::Stdio => server
                .env
                .insert(bridge_mcp::depth::DEPTH_ENV.to_owned(), depth.to_string()),
            McpTransport::Http => server.headers.insert(
                bridge_mcp::depth::DEPTH_HEADER.to_owned(),
                depth.to_string(),
            ),
        };
    }
    config
}

fn retry_of(config: &BridgeConfig) -> RetryConfig {
    RetryConfig {
        policy: config.error_policy(),
        ..RetryConfig::default()
    }
}

/// The account type config.toml names (validated when it was loaded).
fn copilot_account_type(config: &BridgeConfig) -> Option<CopilotAccountType> {
    config.copilot.account_type.as_deref()?.parse().ok()
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

/// The chat backend an orchestration plans with and its native sub-tasks
/// run on.
#[derive(Clone)]
pub struct PlanningBackend {
    pub backend: Arc<dyn ChatBackend>,
    pub kind: BackendKind,
    pub model: Option<String>,
}

/// The orchestrator with the runners this configuration has: the native
/// loop over `backend`, the Copilot CLI runner, and the nested agent CLIs
/// `nested` brings (the CLI stages their hooks; see
/// `bridge_engine::runner::nested`). Logs go to `sessions/`, worktrees and
/// copies under `orchestrate/` of the state directory.
pub fn orchestrator(
    config: &BridgeConfig,
    registry: bridge_engine::SessionRegistry,
    backend: Option<&PlanningBackend>,
    max_concurrency: usize,
    nested: Vec<(SubTaskRunner, Arc<dyn Runner>)>,
) -> Orchestrator {
    let settings = OrchestratorSettings {
        max_concurrency,
        max_turns: bridge_engine::runner::native::DEFAULT_MAX_TURNS,
        model: backend.and_then(|b| b.model.clone()),
        default_runner: SubTaskRunner::Native,
        sessions_dir: config.home.join("sessions"),
        scratch_dir: config.home.join("orchestrate"),
        task_timeout: None,
    };
    let mut orchestrator = Orchestrator::new(registry, settings);
    orchestrator = match backend {
        Some(planning) => orchestrator.with_runner(
            SubTaskRunner::Native,
            Arc::new(bridge_engine::runner::native::NativeRunner::new(
                planning.backend.clone(),
                native_settings(config),
            )),
        ),
        None => orchestrator.without_runner(
            SubTaskRunner::Native,
            "no chat backend is configured for the native runner (see `copilot-bridge validate`)",
        ),
    };
    orchestrator = match copilot_cli_config(config) {
        Ok(cli) => orchestrator.with_runner(
            SubTaskRunner::Copilot,
            Arc::new(bridge_engine::runner::copilot::CopilotRunner::new(cli)),
        ),
        Err(err) => orchestrator.without_runner(
            SubTaskRunner::Copilot,
            format!("the Copilot runner cannot be configured: {err}"),
        ),
    };
    for kind in [SubTaskRunner::Claude, SubTaskRunner::CopilotCli] {
        orchestrator = orchestrator.without_runner(
            kind,
            format!("the {kind} runner (a nested agent CLI) runs from `copilot-bridge orchestrate` and `copilot-bridge mcp code`"),
        );
    }
    for (kind, runner) in nested {
        orchestrator = orchestrator.with_runner(kind, runner);
    }
    orchestrator
}

/// How plans are asked for: structured output (`response_format`) on the
/// backends of OpenAI's wire.
pub fn planner(backend: &PlanningBackend) -> Planner {
    Planner {
        backend: backend.backend.clone(),
        model: backend.model.clone(),
        structured_output: matches!(
            backend.kind,
            BackendKind::OpenAi | BackendKind::Azure | BackendKind::Copilot | BackendKind::Ollama
        ),
    }
}
