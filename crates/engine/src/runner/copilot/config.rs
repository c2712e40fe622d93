//! What the Copilot CLI runner is told: where the CLI is, how it signs in,
//! which BYOK provider and MCP servers its session gets.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::runner::RunRequest;

/// The environment variable that carries our GitHub token to the CLI (named
/// on its command line with `--auth-token-env`, so the token never appears
/// in `ps`).
pub const AUTH_TOKEN_ENV: &str = "COPILOT_SDK_AUTH_TOKEN";

/// How to start and talk to the Copilot CLI.
#[derive(Clone)]
pub struct CopilotCliConfig {
    /// The `copilot` executable (`cli_path` / `COPILOT_CLI_PATH`); `None`
    /// looks for `copilot` on `PATH`.
    pub cli_path: Option<PathBuf>,
    /// A GitHub token for the CLI; `None` lets the CLI use its own sign-in.
    pub github_token: Option<String>,
    /// A bring-your-own-key model provider for the session.
    pub byok: Option<ByokProvider>,
    /// MCP servers the CLI's session connects to, by name.
    pub mcp_servers: BTreeMap<String, McpServer>,
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
            byok: None,
            mcp_servers: BTreeMap::new(),
            extra_args: Vec::new(),
            env: Vec::new(),
            env_remove: Vec::new(),
            request_timeout: Duration::from_secs(30),
        }
    }
}

impl std::fmt::Debug for CopilotCliConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopilotCliConfig")
            .field("cli_path", &self.cli_path)
            .field(
                "github_token",
                &self.github_token.as_ref().map(|_| "<redacted>"),
            )
            .field("byok", &self.byok)
            .field("mcp_servers", &self.mcp_servers.keys().collect::<Vec<_>>())
            .field("extra_args", &self.extra_args)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

/// A BYOK provider as the CLI's session config takes it (`provider`).
#[derive(Clone, PartialEq, Eq)]
pub struct ByokProvider {
    /// `openai`, `azure` or `anthropic` (Ollama speaks the OpenAI API: use
    /// `openai` with its base URL).
    pub kind: String,
    pub base_url: String,
    pub api_key: Option<String>,
    /// The model the session uses when the request names none.
    pub model: Option<String>,
    /// Azure's `api-version`.
    pub azure_api_version: Option<String>,
}

impl ByokProvider {
    /// From our BYOK settings: `provider` is one of openai, azure, anthropic,
    /// ollama; Ollama's OpenAI-compatible endpoint is used for it.
    pub fn from_settings(
        provider: &str,
        base_url: Option<&str>,
        api_key: Option<&str>,
        model: Option<&str>,
    ) -> Result<Self, String> {
        let (kind, default_base) = match provider {
            "openai" => ("openai", Some("https://api.openai.com/v1")),
            "anthropic" => ("anthropic", Some("https://api.anthropic.com")),
            "azure" => ("azure", None),
            "ollama" => ("openai", Some("http://localhost:11434/v1")),
            other => {
                return Err(format!(
                    "BYOK provider {other:?} is not one the Copilot CLI supports (openai, azure, anthropic, ollama)"
                ));
            }
        };
        let base_url = match (base_url, default_base) {
            (Some(url), _) => url.to_owned(),
            (None, Some(url)) => url.to_owned(),
            (None, None) => {
                return Err(format!(
                    "BYOK provider {provider} needs a base URL (COPILOT_BYOK_BASE_URL)"
                ));
            }
        };
        Ok(Self {
            kind: kind.to_owned(),
            base_url,
            api_key: api_key.map(str::to_owned),
            model: model.map(str::to_owned),
            azure_api_version: None,
        })
    }

    fn to_wire(&self) -> Value {
        let mut provider = json!({"type": self.kind, "baseUrl": self.base_url});
        if let Some(key) = &self.api_key {
            provider["apiKey"] = json!(key);
        }
        if let Some(version) = &self.azure_api_version {
            provider["azure"] = json!({"apiVersion": version});
        }
        provider
    }
}

impl std::fmt::Debug for ByokProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByokProvider")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .finish()
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
        .or_else(|| config.byok.as_ref().and_then(|b| b.model.clone()));
    if let Some(model) = model {
        params.insert("model".into(), json!(model));
    }
    if let Some(byok) = &config.byok {
        params.insert("provider".into(), byok.to_wire());
    }
    if !config.mcp_servers.is_empty() {
        params.insert(
            "mcpServers".into(),
            serde_json::to_value(&config.mcp_servers).unwrap_or_default(),
        );
    }
    Value::Object(params)
}
