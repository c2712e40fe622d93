//! What the Copilot CLI runner is told: where the CLI is, how it signs in,
//! which model provider (bring your own key) and MCP servers its session
//! gets.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bridge_llm::BackendKind;
use bridge_util::Secret;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::runner::RunRequest;
use crate::runner::served_tools::{ServedTools, SessionToolServer};

/// The environment variable that carries our GitHub token to the CLI (named
/// on its command line with `--auth-token-env`, so the token never appears
/// in `ps`).
pub const AUTH_TOKEN_ENV: &str = "COPILOT_SDK_AUTH_TOKEN";

/// How to start and talk to the Copilot CLI.
#[derive(Debug, Clone)]
pub struct CopilotCliConfig {
    /// The `copilot` executable (`cli_path` / `COPILOT_CLI_PATH`); `None`
    /// looks for `copilot` on `PATH`.
    pub cli_path: Option<PathBuf>,
    /// A GitHub token for the CLI; `None` lets the CLI use its own sign-in.
    pub github_token: Option<Secret>,
    /// A bring-your-own-key model provider for the session.
    pub provider: Option<CliProvider>,
    /// MCP servers the CLI's session connects to, by name.
    pub mcp_servers: BTreeMap<String, McpServer>,
    /// The session's own tools the CLI gets as one more MCP server, served
    /// by this process for each run (OpenClaw's memory: docs/runners.md).
    pub session_tools: Option<Arc<dyn SessionToolServer>>,
    /// Extra arguments after ours (e.g. `--log-level debug`).
    pub extra_args: Vec<String>,
    /// Variables set for the CLI process.
    pub env: Vec<(String, String)>,
    /// Variables removed from the inherited environment (a test's sandbox,
    /// or keeping a stray token away from the CLI).
    pub env_remove: Vec<String>,
    /// Bound on starting up and on each of our requests.
    pub request_timeout: Duration,
}

impl Default for CopilotCliConfig {
    fn default() -> Self {
        Self {
            cli_path: None,
            github_token: None,
            provider: None,
            mcp_servers: BTreeMap::new(),
            session_tools: None,
            extra_args: Vec::new(),
            env: Vec::new(),
            env_remove: Vec::new(),
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// The model provider of the CLI's session (its `provider` field): where
/// the CLI sends model requests itself when we bring the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliProvider {
    /// The CLI's `type`: `openai`, `azure` or `anthropic` (Ollama speaks
    /// the OpenAI API: `openai` with its base URL).
    pub wire_type: &'static str,
    pub base_url: String,
    pub api_key: Option<Secret>,
    /// The model the session uses when the request names none.
    pub model: Option<String>,
    /// Azure's `api-version`.
    pub azure_api_version: Option<String>,
}

impl CliProvider {
    /// From our BYOK settings; Ollama's OpenAI-compatible endpoint is used
    /// for it.
    pub fn from_settings(
        kind: BackendKind,
        base_url: Option<&str>,
        api_key: Option<Secret>,
        model: Option<&str>,
    ) -> Result<Self, String> {
        let (wire_type, default_base) = match kind {
            BackendKind::OpenAi => ("openai", Some("https://api.openai.com/v1")),
            BackendKind::Anthropic => ("anthropic", Some("https://api.anthropic.com")),
            BackendKind::Azure => ("azure", None),
            BackendKind::Ollama => ("openai", Some("http://localhost:11434/v1")),
            BackendKind::Copilot | BackendKind::Vscode => {
                return Err(format!(
                    "BYOK provider {kind} is not one the Copilot CLI supports (openai, azure, anthropic, ollama)"
                ));
            }
        };
        let base_url = match (base_url, default_base) {
            (Some(url), _) => url.to_owned(),
            (None, Some(url)) => url.to_owned(),
            (None, None) => {
                return Err(format!(
                    "BYOK provider {kind} needs a base URL (COPILOT_BYOK_BASE_URL)"
                ));
            }
        };
        Ok(Self {
            wire_type,
            base_url,
            api_key,
            model: model.map(str::to_owned),
            azure_api_version: None,
        })
    }

    fn to_wire(&self) -> Value {
        let mut provider = json!({"type": self.wire_type, "baseUrl": self.base_url});
        if let Some(key) = &self.api_key {
            provider["apiKey"] = json!(key.expose());
        }
        if let Some(version) = &self.azure_api_version {
            provider["azure"] = json!({"apiVersion": version});
        }
        provider
    }
}

/// An MCP server for the CLI's session (`mcpServers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum McpServer {
    /// Started by the CLI, spoken to over its stdio.
    Stdio {
        command: String,
        args: Vec<String>,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        /// Which of its tools the agent gets; `["*"]` for all.
        tools: Vec<String>,
    },
    Http {
        url: String,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
        tools: Vec<String>,
    },
}

impl McpServer {
    /// A server this process serves for the run, every tool offered.
    pub fn served(served: &ServedTools) -> Self {
        Self::Http {
            url: served.url.clone(),
            headers: served.headers.clone(),
            tools: vec!["*".to_owned()],
        }
    }
}

/// The `session.create` parameters: our hooks and permission prompts are
/// switched on, so the CLI asks us before every tool runs.
pub(crate) fn session_create_params(
    config: &CopilotCliConfig,
    request: &RunRequest,
    session_id: &str,
    cwd: &std::path::Path,
) -> Value {
    let mut params = Map::new();
    params.insert("sessionId".into(), json!(session_id));
    params.insert("workingDirectory".into(), json!(cwd));
    params.insert("clientName".into(), json!("copilot-bridge"));
    params.insert("hooks".into(), json!(true));
    params.insert("requestPermission".into(), json!(true));
    params.insert("envValueMode".into(), json!("direct"));
    let model = request
        .model
        .clone()
        .or_else(|| config.provider.as_ref().and_then(|p| p.model.clone()));
    if let Some(model) = model {
        params.insert("model".into(), json!(model));
    }
    if let Some(provider) = &config.provider {
        params.insert("provider".into(), provider.to_wire());
    }
    if !config.mcp_servers.is_empty() {
        params.insert(
            "mcpServers".into(),
            serde_json::to_value(&config.mcp_servers).unwrap_or_default(),
        );
    }
    Value::Object(params)
}
