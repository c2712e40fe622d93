//! `BridgeConfig`: the one configuration of copilot-bridge.
//!
//! Values come from, highest precedence first: command-line flags, the process
//! environment (the names docs/configuration.md lists, mostly `COPILOT_*`),
//! a `.env` file in the working directory, `$COPILOT_BRIDGE_HOME/config.toml`,
//! and built-in defaults; OpenClaw's settings the bridge's sources leave
//! unset come from OpenClaw's own `openclaw.json` before the defaults
//! ([`openclaw`]). Every value remembers where it came from, so
//! `config show` can say so. Validation names the key, the bad value and what
//! is allowed. This crate must not start anything or touch the network; and it
//! must never print a secret (secret values are wrapped in [`Secret`]).

pub mod backends;
mod changes;
mod file;
pub mod json5;
pub mod keys;
mod loader;
pub mod mcp;
pub mod models;
pub mod openclaw;
mod openclaw_file;
mod show;
pub mod telemetry;
mod value;

use std::collections::BTreeMap;
use std::path::PathBuf;

use bridge_policy::PermissionRules;
use bridge_tools::ToolSettings;
use bridge_util::Secret;

pub use backends::{BackendConfig, BackendStyle};
pub use bridge_llm::BackendKind;
pub use keys::{KEYS, KeySpec};
pub use loader::{ConfigLoader, DEFAULT_IDLE_EXIT_SECS, DEFAULT_PORT};
pub use mcp::{McpServerConfig, McpSettings, McpTransport};
pub use models::{ModelMapping, ModelRoutes, ModelTarget};
pub use openclaw::{AutoSwitch, OpenClawAgent, OpenClawConfig, WorkspaceRank};
pub use show::ShownValue;
pub use telemetry::{MetricsExporter, OtlpProtocol, Signal, TelemetryConfig};
pub use value::LogLevel;

/// The daemon's connection limits as configured; `None` keeps the
/// daemon's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectionSettings {
    pub max_connections: Option<u64>,
    pub header_timeout_ms: Option<u64>,
    pub body_timeout_ms: Option<u64>,
}

/// Where a configuration value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Flag(String),
    Env(String),
    DotEnv(PathBuf),
    File(PathBuf),
    /// OpenClaw's own configuration file (`openclaw.json`).
    OpenClaw(PathBuf),
    Default,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Flag(flag) => write!(f, "flag {flag}"),
            Self::Env(name) => write!(f, "env {name}"),
            Self::DotEnv(path) => write!(f, ".env {}", path.display()),
            Self::File(path) => write!(f, "file {}", path.display()),
            Self::OpenClaw(path) => write!(f, "openclaw {}", path.display()),
            Self::Default => f.write_str("default"),
        }
    }
}

/// Bring-your-own-key backend settings (`COPILOT_BYOK_*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ByokConfig {
    pub provider: Option<BackendKind>,
    pub api_key: Option<Secret>,
    pub base_url: Option<String>,
    pub model: Option<String>,
}

/// Copilot's account and integration headers (`[copilot]` in config.toml).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CopilotSettings {
    /// `individual`, `business` or `enterprise`: picks the default API base.
    pub account_type: Option<String>,
    /// Overrides the API base (else the token exchange's, else the account type's).
    pub api_base: Option<String>,
    /// Integration headers replacing the built-in ones of the same name, or
    /// added to them (Copilot changes what it requires over time).
    pub headers: std::collections::BTreeMap<String, String>,
}

/// The effective configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeConfig {
    /// State directory (`COPILOT_BRIDGE_HOME`, default `~/.copilot-bridge`).
    pub home: PathBuf,
    /// The daemon's port (`COPILOT_BRIDGE_PORT`, default 9400; 0 picks a free one).
    pub port: u16,
    /// The daemon's bind address (`COPILOT_BRIDGE_BIND`, default 127.0.0.1).
    pub bind_address: std::net::IpAddr,
    /// Writes refused unless the workspace policy allows them.
    pub read_only: bool,
    pub github_token: Option<Secret>,
    pub byok: ByokConfig,
    pub cli_path: Option<PathBuf>,
    pub log_level: LogLevel,
    pub openclaw: OpenClawConfig,
    pub audit_log_dir: PathBuf,
    pub project_context: Option<String>,
    pub max_retries: u32,
    pub transient_retries: u32,
    /// Seconds a detached daemon stays up after its last session ended
    /// (`COPILOT_BRIDGE_IDLE_EXIT_SECS`, default 30).
    pub idle_exit_secs: u64,
    /// Seconds an agent session registered by its hooks (`copilot-bridge
    /// hook`) lives on without a hook (`COPILOT_BRIDGE_AGENT_SESSION_IDLE_SECS`,
    /// default 1800).
    pub agent_session_idle_secs: u64,
    /// Seconds an ask waits for a person at the daemon's doors before the
    /// call is denied as `approval_timeout` (`[approvals] timeout_secs`,
    /// `COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS`, default 120; 0: denied at
    /// once).
    pub approval_timeout_secs: u64,
    /// Whether the daemon spawns the providers of a workspace's
    /// `tap.config.json` (`COPILOT_BRIDGE_TRUST_PROJECT_PROVIDERS`, default false).
    pub trust_project_providers: bool,
    pub permissions: PermissionRules,
    pub tools: ToolSettings,
    pub copilot: CopilotSettings,
    /// `[mcp.servers.NAME]`: the MCP servers whose tools sessions get.
    pub mcp: McpSettings,
    /// `[workspaces] roots`: where a workspace named by a client may be
    /// (empty: any directory of this user outside the system's trees).
    pub workspace_roots: Vec<PathBuf>,
    /// The user's home directory (`HOME`), when known.
    pub user_home: Option<PathBuf>,
    /// `[backends.NAME]`: the facade's configured chat backends, by name.
    pub backends: Vec<BackendConfig>,
    /// `request_log`: each facade request's line also goes, as JSON, to
    /// `requests.jsonl` in the state directory (default false).
    pub request_log: bool,
    /// `keep_transcripts`: the conversations agents hold through the
    /// facade are also written, redacted and bounded, to `transcripts/`
    /// in the state directory (default false: shown live from memory only).
    pub keep_transcripts: bool,
    /// `[telemetry]` and the standard `OTEL_*` variables: where the hub
    /// exports its traces and metrics (off unless an endpoint is set).
    pub telemetry: TelemetryConfig,
    /// The daemon's connection limits (`max_connections`,
    /// `header_timeout_ms`, `body_timeout_ms`); unset: the daemon's defaults.
    pub connections: ConnectionSettings,
    /// The backend a request goes to when its model routes nowhere else
    /// (`default_backend`; default: the auto-selected one).
    pub default_backend: Option<String>,
    /// `[models]`: model names and classes of requests routed to a backend.
    pub models: ModelRoutes,
    /// The daemon's bearer token (`COPILOT_BRIDGE_TOKEN`; default: random
    /// per start). Required to bind beyond loopback.
    pub token: Option<Secret>,
    /// Host names accepted in `Host` besides loopback names and IP literals
    /// (`COPILOT_BRIDGE_ALLOWED_HOSTS`), lowercased.
    pub allowed_hosts: Vec<String>,
    /// `OPENAI_API_KEY` (auto-detection).
    pub openai_api_key: Option<Secret>,
    /// `ANTHROPIC_API_KEY` (auto-detection).
    pub anthropic_api_key: Option<Secret>,
    /// `OLLAMA_HOST` as a base URL (auto-detection and ollama backends).
    pub ollama_base_url: Option<String>,
    /// `COPILOT_BRIDGE_NO_GH`: never run `gh auth token`.
    pub no_gh: bool,
    /// The source of each scalar key, by its config.toml name.
    pub sources: BTreeMap<&'static str, Source>,
    /// The config file that was read, if one existed.
    pub config_file: Option<PathBuf>,
    /// Problems that did not stop the configuration (an `openclaw.json`
    /// that does not parse: its values are not used).
    pub warnings: Vec<String>,
}

impl BridgeConfig {
    /// Where a key's value came from (`Source::Default` for unknown keys).
    pub fn source_of(&self, key: &str) -> Source {
        self.sources.get(key).cloned().unwrap_or(Source::Default)
    }

    /// The file holding the daemon's port, pid and tokens.
    pub fn gateway_file(&self) -> PathBuf {
        self.home.join("gateway.json")
    }

    /// The error-recovery policy these settings describe.
    pub fn error_policy(&self) -> bridge_util::ErrorPolicy {
        bridge_util::ErrorPolicy {
            max_retries: self.max_retries,
            transient_retries: self.transient_retries,
        }
    }
}

/// A configuration that cannot be used. Every problem found is listed.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid value for {key} (from {origin}): {value}; expected {expected}")]
    Invalid {
        key: String,
        value: String,
        origin: Source,
        expected: String,
    },
    #[error("config file {path}: {message}")]
    File { path: PathBuf, message: String },
    #[error(".env file {path}: {message}")]
    DotEnv { path: PathBuf, message: String },
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Many(Vec<ConfigError>),
}
