//! The table of scalar configuration keys: one row per setting, naming it in
//! config.toml, in the environment and on the command line.

/// One scalar setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    /// Dotted name in config.toml (`byok.provider` is `provider` in `[byok]`).
    pub key: &'static str,
    /// Environment variable (also read from `.env`).
    pub env: &'static str,
    /// Other names of the variable, read when `env` is unset (older or
    /// other programs' names), in order. `config show` names the one used.
    pub aliases: &'static [&'static str],
    /// Secret values are never printed.
    pub secret: bool,
    /// Whether config.toml may set it (the state directory itself cannot).
    pub in_file: bool,
    /// The default as shown to users.
    pub default: &'static str,
    pub doc: &'static str,
}

const fn key(
    key: &'static str,
    env: &'static str,
    default: &'static str,
    doc: &'static str,
) -> KeySpec {
    KeySpec {
        key,
        env,
        aliases: &[],
        secret: false,
        in_file: true,
        default,
        doc,
    }
}

impl KeySpec {
    /// The same key, also read from `aliases` (after [`Self::env`]).
    const fn or_env(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }

    /// Every environment name of the key: [`Self::env`] first, then the aliases.
    pub fn env_names(&self) -> impl Iterator<Item = &'static str> + use<> {
        std::iter::once(self.env).chain(self.aliases.iter().copied())
    }
}

const fn secret(key: &'static str, env: &'static str, doc: &'static str) -> KeySpec {
    KeySpec {
        key,
        env,
        aliases: &[],
        secret: true,
        in_file: true,
        default: "",
        doc,
    }
}

pub const HOME: &str = "home";
pub const PORT: &str = "port";
pub const BIND_ADDRESS: &str = "bind_address";
pub const READ_ONLY: &str = "read_only";
pub const GITHUB_TOKEN: &str = "github_token";
pub const BYOK_PROVIDER: &str = "byok.provider";
pub const BYOK_API_KEY: &str = "byok.api_key";
pub const BYOK_BASE_URL: &str = "byok.base_url";
pub const BYOK_MODEL: &str = "byok.model";
pub const CLI_PATH: &str = "cli_path";
pub const LOG_LEVEL: &str = "log_level";
pub const OPENCLAW_HOST: &str = "openclaw.host";
pub const OPENCLAW_PORT: &str = "openclaw.port";
pub const OPENCLAW_GATEWAY_URL: &str = "openclaw.gateway_url";
pub const OPENCLAW_GATEWAY_TOKEN: &str = "openclaw.gateway_token";
pub const OPENCLAW_GATEWAY: &str = "openclaw.gateway";
pub const OPENCLAW_MEMORY: &str = "openclaw.memory";
pub const OPENCLAW_WORKSPACE: &str = "openclaw.workspace";
pub const OPENCLAW_STATE_DIR: &str = "openclaw.state_dir";
pub const OPENCLAW_CONFIG_PATH: &str = "openclaw.config_path";
pub const AUDIT_LOG_DIR: &str = "audit_log_dir";
pub const PROJECT_CONTEXT: &str = "project_context";
pub const MAX_RETRIES: &str = "max_retries";
pub const TRANSIENT_RETRIES: &str = "transient_retries";
pub const IDLE_EXIT_SECS: &str = "idle_exit_secs";
pub const AGENT_SESSION_IDLE_SECS: &str = "agent_session_idle_secs";
pub const APPROVAL_TIMEOUT_SECS: &str = "approvals.timeout_secs";
pub const TRUST_PROJECT_PROVIDERS: &str = "trust_project_providers";
pub const MAX_CONNECTIONS: &str = "max_connections";
pub const HEADER_TIMEOUT_MS: &str = "header_timeout_ms";
pub const BODY_TIMEOUT_MS: &str = "body_timeout_ms";
pub const REQUEST_LOG: &str = "request_log";
pub const KEEP_TRANSCRIPTS: &str = "keep_transcripts";
pub const TOKEN: &str = "token";
pub const ALLOWED_HOSTS: &str = "allowed_hosts";
pub const DEFAULT_BACKEND: &str = "default_backend";
pub const OPENAI_API_KEY: &str = "openai_api_key";
pub const ANTHROPIC_API_KEY: &str = "anthropic_api_key";
pub const OLLAMA_HOST: &str = "ollama_host";
pub const NO_GH: &str = "no_gh";
pub const OTEL_ENDPOINT: &str = "telemetry.endpoint";
pub const OTEL_TRACES_ENDPOINT: &str = "telemetry.traces_endpoint";
pub const OTEL_METRICS_ENDPOINT: &str = "telemetry.metrics_endpoint";
pub const OTEL_LOGS_ENDPOINT: &str = "telemetry.logs_endpoint";
pub const OTEL_PROTOCOL: &str = "telemetry.protocol";
pub const OTEL_HEADERS: &str = "telemetry.headers";
pub const OTEL_SERVICE_NAME: &str = "telemetry.service_name";
pub const OTEL_RESOURCE_ATTRIBUTES: &str = "telemetry.resource_attributes";
pub const OTEL_SDK_DISABLED: &str = "telemetry.disabled";
pub const OTEL_BATCH_DELAY_MS: &str = "telemetry.batch_delay_ms";
pub const OTEL_METRIC_INTERVAL_MS: &str = "telemetry.metric_interval_ms";
pub const OTEL_CAPTURE_CONTENT: &str = "telemetry.capture_content";
pub const OTEL_METRICS_EXPORTER: &str = "telemetry.metrics_exporter";

/// A secret only the environment (or `.env`) may hold: keys are never kept
/// in config files.
const fn env_secret(key: &'static str, env: &'static str, doc: &'static str) -> KeySpec {
    KeySpec {
        key,
        env,
        aliases: &[],
        secret: true,
        in_file: false,
        default: "",
        doc,
    }
}

/// The state directory: read before config.toml, so config.toml cannot set it.
pub const HOME_SPEC: KeySpec = KeySpec {
    key: HOME,
    env: "COPILOT_BRIDGE_HOME",
    aliases: &[],
    secret: false,
    in_file: false,
    default: "~/.copilot-bridge",
    doc: "State directory: config.toml, gateway.json, sessions, audit log",
};

/// Every scalar key, in the order `config show` prints them.
pub const KEYS: &[KeySpec] = &[
    HOME_SPEC,
    key(
        PORT,
        "COPILOT_BRIDGE_PORT",
        "9400",
        "Daemon port (0 = any free port)",
    ),
    key(
        BIND_ADDRESS,
        "COPILOT_BRIDGE_BIND",
        "127.0.0.1",
        "Daemon bind address",
    ),
    key(
        READ_ONLY,
        "COPILOT_BRIDGE_READ_ONLY",
        "true",
        "Refuse writes unless .agent-policy.yaml allows them",
    ),
    secret(
        GITHUB_TOKEN,
        "COPILOT_GITHUB_TOKEN",
        "GitHub token for Copilot",
    ),
    key(
        BYOK_PROVIDER,
        "COPILOT_BYOK_PROVIDER",
        "",
        "BYOK provider: openai, azure, anthropic, ollama",
    ),
    secret(
        BYOK_API_KEY,
        "COPILOT_BYOK_API_KEY",
        "API key for the BYOK provider",
    ),
    key(
        BYOK_BASE_URL,
        "COPILOT_BYOK_BASE_URL",
        "",
        "Base URL for the BYOK provider",
    ),
    key(
        BYOK_MODEL,
        "COPILOT_BYOK_MODEL",
        "",
        "Model name for the BYOK provider",
    ),
    key(
        CLI_PATH,
        "COPILOT_CLI_PATH",
        "",
        "Path to the Copilot CLI binary",
    ),
    key(
        LOG_LEVEL,
        "COPILOT_LOG_LEVEL",
        "info",
        "debug, info, warning, error, none, all",
    ),
    key(
        OPENCLAW_HOST,
        "OPENCLAW_HOST",
        "127.0.0.1",
        "OpenClaw gateway host",
    ),
    key(
        OPENCLAW_PORT,
        "OPENCLAW_GATEWAY_PORT",
        "18789",
        "OpenClaw gateway port (else gateway.port of openclaw.json); OPENCLAW_PORT is accepted too",
    )
    .or_env(&["OPENCLAW_PORT"]),
    key(
        OPENCLAW_GATEWAY_URL,
        "OPENCLAW_GATEWAY_URL",
        "ws://<openclaw.host>:<openclaw.port>",
        "OpenClaw gateway URL (ws:// or wss://); wins over openclaw.host and openclaw.port",
    ),
    secret(
        OPENCLAW_GATEWAY_TOKEN,
        "OPENCLAW_GATEWAY_TOKEN",
        "OpenClaw gateway token (else gateway.auth.token of openclaw.json)",
    ),
    key(
        OPENCLAW_GATEWAY,
        "COPILOT_BRIDGE_OPENCLAW_GATEWAY",
        "auto",
        "Whether the daemon connects to the OpenClaw gateway: auto (when openclaw.json exists or a gateway URL or token is set), on, off",
    ),
    key(
        OPENCLAW_MEMORY,
        "COPILOT_BRIDGE_OPENCLAW_MEMORY",
        "auto",
        "Whether every session the hub creates gets OpenClaw's memory tools (openclaw_memory_search, openclaw_memory_read, openclaw_user_prefs): auto (when the default agent's workspace holds memory), on, off",
    ),
    key(
        OPENCLAW_WORKSPACE,
        "OPENCLAW_WORKSPACE_DIR",
        "",
        "The default OpenClaw agent's workspace, the memory server's root (unset: found as OpenClaw finds it); OPENCLAW_WORKSPACE, the older name, is accepted too",
    )
    .or_env(&["OPENCLAW_WORKSPACE"]),
    key(
        OPENCLAW_STATE_DIR,
        "OPENCLAW_STATE_DIR",
        "~/.openclaw",
        "OpenClaw's state directory",
    ),
    key(
        OPENCLAW_CONFIG_PATH,
        "OPENCLAW_CONFIG_PATH",
        "<openclaw.state_dir>/openclaw.json",
        "OpenClaw's configuration file (what `openclaw register` edits)",
    ),
    key(
        AUDIT_LOG_DIR,
        "COPILOT_AUDIT_LOG_DIR",
        "<home>/audit",
        "Directory of audit-YYYY-MM-DD.jsonl",
    ),
    key(
        PROJECT_CONTEXT,
        "COPILOT_PROJECT_CONTEXT",
        "",
        "Context injected into every prompt",
    ),
    key(
        MAX_RETRIES,
        "COPILOT_MAX_RETRIES",
        "3",
        "Retries for rate-limited requests (0-100)",
    ),
    key(
        TRANSIENT_RETRIES,
        "COPILOT_TRANSIENT_RETRIES",
        "2",
        "Retries for transient errors (0-100)",
    ),
    key(
        IDLE_EXIT_SECS,
        "COPILOT_BRIDGE_IDLE_EXIT_SECS",
        "30",
        "Seconds a detached daemon lingers after its last session ends (0-86400)",
    ),
    key(
        AGENT_SESSION_IDLE_SECS,
        "COPILOT_BRIDGE_AGENT_SESSION_IDLE_SECS",
        "1800",
        "Seconds an agent session registered by its hooks stays without a hook before it ends (0-86400)",
    ),
    key(
        APPROVAL_TIMEOUT_SECS,
        "COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS",
        "120",
        "Seconds a tool call the policy asks about waits for a person's answer at the daemon's doors (0: denied at once) (0-86400)",
    ),
    key(
        TRUST_PROJECT_PROVIDERS,
        "COPILOT_BRIDGE_TRUST_PROJECT_PROVIDERS",
        "false",
        "Spawn the providers a workspace's tap.config.json declares",
    ),
    key(
        MAX_CONNECTIONS,
        "COPILOT_BRIDGE_MAX_CONNECTIONS",
        "512",
        "Open HTTP connections the daemon holds, upgraded WebSockets included (at most half the open-file limit)",
    ),
    key(
        HEADER_TIMEOUT_MS,
        "COPILOT_BRIDGE_HEADER_TIMEOUT_MS",
        "10000",
        "Milliseconds a client gets to send a request head, also on idle keep-alive connections",
    ),
    key(
        BODY_TIMEOUT_MS,
        "COPILOT_BRIDGE_BODY_TIMEOUT_MS",
        "30000",
        "Milliseconds a request body may take to arrive in all",
    ),
    key(
        REQUEST_LOG,
        "COPILOT_BRIDGE_REQUEST_LOG",
        "false",
        "Also write each facade request's log line as JSON to requests.jsonl in the state directory (no bodies)",
    ),
    key(
        KEEP_TRANSCRIPTS,
        "COPILOT_BRIDGE_KEEP_TRANSCRIPTS",
        "false",
        "Also keep what agents send through the facade, redacted and bounded, in transcripts/ in the state directory (the dashboard shows it live either way)",
    ),
    secret(
        TOKEN,
        "COPILOT_BRIDGE_TOKEN",
        "The daemon's bearer token (default: a random one per start); required to bind beyond loopback",
    ),
    key(
        ALLOWED_HOSTS,
        "COPILOT_BRIDGE_ALLOWED_HOSTS",
        "",
        "Host names (comma-separated) accepted in the Host header besides loopback and IP literals",
    ),
    key(
        DEFAULT_BACKEND,
        "COPILOT_BRIDGE_DEFAULT_BACKEND",
        "",
        "The facade backend used when a request's model routes nowhere else",
    ),
    env_secret(
        OPENAI_API_KEY,
        "OPENAI_API_KEY",
        "OpenAI API key (auto-detected backend)",
    ),
    env_secret(
        ANTHROPIC_API_KEY,
        "ANTHROPIC_API_KEY",
        "Anthropic API key (auto-detected backend)",
    ),
    key(
        OLLAMA_HOST,
        "OLLAMA_HOST",
        "http://127.0.0.1:11434",
        "Where Ollama listens (host:port or a URL)",
    ),
    key(
        NO_GH,
        "COPILOT_BRIDGE_NO_GH",
        "false",
        "Never ask `gh auth token` for a GitHub token",
    ),
    key(
        OTEL_ENDPOINT,
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "",
        "OTLP/HTTP collector base URL: setting it turns telemetry export on (each signal adds /v1/traces, /v1/metrics, /v1/logs)",
    ),
    key(
        OTEL_TRACES_ENDPOINT,
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "<telemetry.endpoint>/v1/traces",
        "Where traces go, as it is",
    ),
    key(
        OTEL_METRICS_ENDPOINT,
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "<telemetry.endpoint>/v1/metrics",
        "Where metrics go, as it is",
    ),
    key(
        OTEL_LOGS_ENDPOINT,
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
        "<telemetry.endpoint>/v1/logs",
        "Where logs go (the agents' own, forwarded), as it is",
    ),
    key(
        OTEL_PROTOCOL,
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "http/protobuf",
        "OTLP encoding: http/protobuf or http/json",
    ),
    secret(
        OTEL_HEADERS,
        "OTEL_EXPORTER_OTLP_HEADERS",
        "Headers of every export request (key=value,…; values percent-encoded), e.g. a vendor's API key",
    ),
    key(
        OTEL_SERVICE_NAME,
        "OTEL_SERVICE_NAME",
        "copilot-bridge",
        "service.name of the hub's telemetry",
    ),
    key(
        OTEL_RESOURCE_ATTRIBUTES,
        "OTEL_RESOURCE_ATTRIBUTES",
        "",
        "Resource attributes of the hub's telemetry (key=value,…)",
    ),
    key(
        OTEL_SDK_DISABLED,
        "OTEL_SDK_DISABLED",
        "false",
        "true turns telemetry export off whatever endpoint is set",
    ),
    key(
        OTEL_BATCH_DELAY_MS,
        "OTEL_BSP_SCHEDULE_DELAY",
        "5000",
        "Milliseconds between span exports",
    ),
    key(
        OTEL_METRIC_INTERVAL_MS,
        "OTEL_METRIC_EXPORT_INTERVAL",
        "60000",
        "Milliseconds between metric exports",
    ),
    key(
        OTEL_METRICS_EXPORTER,
        "OTEL_METRICS_EXPORTER",
        "otlp",
        "Where the hub's metrics go: otlp, prometheus (GET /metrics), both (otlp,prometheus) or none",
    ),
    key(
        OTEL_CAPTURE_CONTENT,
        "COPILOT_BRIDGE_OTEL_CAPTURE_CONTENT",
        "false",
        "Attach prompts, answers, tool arguments and results to spans, redacted and bounded",
    ),
];

/// The row of `key`.
pub fn spec(key: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|spec| spec.key == key)
}

/// The row read from the environment variable `name` (its name or an alias).
pub fn spec_of_env(name: &str) -> Option<&'static KeySpec> {
    KEYS.iter()
        .find(|spec| spec.env_names().any(|env| env == name))
}
