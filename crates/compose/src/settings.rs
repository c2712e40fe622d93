//! The settings every runner and backend is built with, from the
//! configuration alone (never from the process environment: the loader
//! already holds `OPENAI_API_KEY`, `OLLAMA_HOST`, `COPILOT_BRIDGE_NO_GH` and
//! the `api_key_env` variables, so a test's loader environment is all a
//! daemon in a test sees).

use std::sync::Arc;

use bridge_config::{BridgeConfig, McpServerConfig, McpTransport};
use bridge_engine::runner::copilot::{
    CliProvider, CopilotCliConfig, McpServer as CopilotMcpServer,
};
use bridge_engine::runner::native::NativeSettings;
use bridge_llm::{BackendSettings, CopilotAccountType, RetryConfig};
use bridge_util::Secret;

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
/// BYOK provider when one is configured, our MCP servers, and the
/// session's OpenClaw tools when sessions get OpenClaw's memory.
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
    // The session's OpenClaw tools, served to the CLI by this process
    // while it runs (docs/runners.md).
    let session_tools = crate::openclaw::OpenClawMemory::detect(config)
        .offered()
        .then(|| {
            Arc::new(crate::openclaw::agent_server(config))
                as Arc<dyn bridge_engine::runner::served_tools::SessionToolServer>
        });
    Ok(CopilotCliConfig {
        cli_path: config.cli_path.clone(),
        github_token: config.github_token.clone(),
        provider,
        mcp_servers,
        session_tools,
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

pub(crate) fn retry_of(config: &BridgeConfig) -> RetryConfig {
    RetryConfig {
        policy: config.error_policy(),
        ..RetryConfig::default()
    }
}

/// The account type config.toml names (validated when it was loaded).
pub(crate) fn copilot_account_type(config: &BridgeConfig) -> Option<CopilotAccountType> {
    config.copilot.account_type.as_deref()?.parse().ok()
}
