//! The effective configuration as users see it: every key with its value
//! (secrets redacted) and its source.

use serde::Serialize;
use serde_json::{Value, json};

use crate::BridgeConfig;
use crate::keys::{self, KEYS};
use bridge_util::Secret;

/// One row of `config show`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShownValue {
    pub key: &'static str,
    pub env: &'static str,
    /// Other environment names of the key (the source names the one used).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub aliases: &'static [&'static str],
    /// `None` when unset.
    pub value: Option<String>,
    pub source: String,
}

fn secret(value: &Option<Secret>) -> Option<String> {
    value.as_ref().map(|_| "[REDACTED]".to_owned())
}

fn path(value: &Option<std::path::PathBuf>) -> Option<String> {
    value.as_ref().map(|p| p.display().to_string())
}

impl BridgeConfig {
    fn shown(&self, key: &str) -> Option<String> {
        match key {
            keys::HOME => Some(self.home.display().to_string()),
            keys::PORT => Some(self.port.to_string()),
            keys::BIND_ADDRESS => Some(self.bind_address.to_string()),
            keys::READ_ONLY => Some(self.read_only.to_string()),
            keys::GITHUB_TOKEN => secret(&self.github_token),
            keys::BYOK_PROVIDER => self.byok.provider.map(|p| p.as_str().to_owned()),
            keys::BYOK_API_KEY => secret(&self.byok.api_key),
            keys::BYOK_BASE_URL => self.byok.base_url.clone(),
            keys::BYOK_MODEL => self.byok.model.clone(),
            keys::CLI_PATH => path(&self.cli_path),
            keys::LOG_LEVEL => Some(self.log_level.as_str().to_owned()),
            keys::OPENCLAW_HOST => Some(self.openclaw.host.clone()),
            keys::OPENCLAW_PORT => Some(self.openclaw.port.to_string()),
            keys::OPENCLAW_GATEWAY_URL => Some(self.openclaw.gateway_url()),
            keys::OPENCLAW_GATEWAY_TOKEN => secret(&self.openclaw.gateway_token),
            keys::OPENCLAW_GATEWAY => Some(self.openclaw.gateway_mode.as_str().to_owned()),
            keys::OPENCLAW_MEMORY => Some(self.openclaw.memory_mode.as_str().to_owned()),
            keys::OPENCLAW_WORKSPACE => path(&self.openclaw.workspace),
            keys::OPENCLAW_STATE_DIR => Some(self.openclaw.state_dir.display().to_string()),
            keys::OPENCLAW_CONFIG_PATH => Some(self.openclaw.config_path.display().to_string()),
            keys::AUDIT_LOG_DIR => Some(self.audit_log_dir.display().to_string()),
            keys::PROJECT_CONTEXT => self
                .project_context
                .as_deref()
                .map(|text| bridge_policy::redact(text).into_owned()),
            keys::MAX_RETRIES => Some(self.max_retries.to_string()),
            keys::TRANSIENT_RETRIES => Some(self.transient_retries.to_string()),
            keys::IDLE_EXIT_SECS => Some(self.idle_exit_secs.to_string()),
            keys::APPROVAL_TIMEOUT_SECS => Some(self.approval_timeout_secs.to_string()),
            keys::AGENT_SESSION_IDLE_SECS => Some(self.agent_session_idle_secs.to_string()),
            keys::TRUST_PROJECT_PROVIDERS => Some(self.trust_project_providers.to_string()),
            keys::REQUEST_LOG => Some(self.request_log.to_string()),
            keys::KEEP_TRANSCRIPTS => Some(self.keep_transcripts.to_string()),
            keys::MAX_CONNECTIONS => self.connections.max_connections.map(|n| n.to_string()),
            keys::HEADER_TIMEOUT_MS => self.connections.header_timeout_ms.map(|n| n.to_string()),
            keys::BODY_TIMEOUT_MS => self.connections.body_timeout_ms.map(|n| n.to_string()),
            keys::TOKEN => secret(&self.token),
            keys::ALLOWED_HOSTS => {
                (!self.allowed_hosts.is_empty()).then(|| self.allowed_hosts.join(","))
            }
            keys::DEFAULT_BACKEND => self.default_backend.clone(),
            keys::OPENAI_API_KEY => secret(&self.openai_api_key),
            keys::ANTHROPIC_API_KEY => secret(&self.anthropic_api_key),
            keys::OLLAMA_HOST => self.ollama_base_url.clone(),
            keys::NO_GH => Some(self.no_gh.to_string()),
            keys::OTEL_ENDPOINT => self.telemetry.endpoint.clone(),
            keys::OTEL_TRACES_ENDPOINT => self.telemetry.traces_endpoint.clone(),
            keys::OTEL_METRICS_ENDPOINT => self.telemetry.metrics_endpoint.clone(),
            keys::OTEL_LOGS_ENDPOINT => self.telemetry.logs_endpoint.clone(),
            keys::OTEL_PROTOCOL => Some(self.telemetry.protocol.as_str().to_owned()),
            keys::OTEL_HEADERS => (!self.telemetry.headers.is_empty()).then(|| {
                self.telemetry
                    .headers
                    .iter()
                    .map(|(name, _)| format!("{name}=[REDACTED]"))
                    .collect::<Vec<_>>()
                    .join(",")
            }),
            keys::OTEL_SERVICE_NAME => Some(self.telemetry.service_name.clone()),
            keys::OTEL_RESOURCE_ATTRIBUTES => (!self.telemetry.resource_attributes.is_empty())
                .then(|| {
                    self.telemetry
                        .resource_attributes
                        .iter()
                        .map(|(key, value)| format!("{key}={value}"))
                        .collect::<Vec<_>>()
                        .join(",")
                }),
            keys::OTEL_SDK_DISABLED => Some(self.telemetry.disabled.to_string()),
            keys::OTEL_BATCH_DELAY_MS => Some(self.telemetry.batch_delay_ms.to_string()),
            keys::OTEL_METRIC_INTERVAL_MS => Some(self.telemetry.metric_interval_ms.to_string()),
            keys::OTEL_CAPTURE_CONTENT => Some(self.telemetry.capture_content.to_string()),
            keys::OTEL_METRICS_EXPORTER => Some(self.telemetry.metrics_exporter_names()),
            _ => None,
        }
    }

    /// Every scalar key with its shown value and source.
    pub fn show(&self) -> Vec<ShownValue> {
        KEYS.iter()
            .map(|spec| {
                let value = self.shown(spec.key);
                let source = if value.is_some() {
                    self.source_of(spec.key).to_string()
                } else {
                    "unset".to_owned()
                };
                ShownValue {
                    key: spec.key,
                    env: spec.env,
                    aliases: spec.aliases,
                    value,
                    source,
                }
            })
            .collect()
    }

    /// The whole effective configuration as JSON, secrets redacted.
    pub fn to_redacted_json(&self) -> Value {
        let mut redacted_tools = serde_json::to_value(&self.tools).unwrap_or(Value::Null);
        bridge_policy::redact_value(&mut redacted_tools);
        json!({
            "configFile": self.config_file.as_ref().map(|p| p.display().to_string()),
            "values": self.show(),
            "permissions": self.permissions,
            "tools": redacted_tools,
            "mcp": {
                "servers": self
                    .mcp
                    .servers
                    .iter()
                    .map(|(name, server)| (name.clone(), server.redacted()))
                    .collect::<serde_json::Map<_, _>>(),
            },
            "models": self.models,
            "backends": self
                .backends
                .iter()
                .map(|backend| (backend.name.clone(), backend.redacted()))
                .collect::<serde_json::Map<_, _>>(),
            "openclaw": self.openclaw_json(),
            "warnings": self.warnings,
        })
    }

    /// What was found of OpenClaw: its configuration file, the default
    /// agent and each agent's workspace with how it was found.
    fn openclaw_json(&self) -> Value {
        let openclaw = &self.openclaw;
        let workspace = |id: Option<&str>| {
            let (path, found_by) = openclaw.workspace_for(id);
            json!({"path": path.display().to_string(), "foundBy": found_by})
        };
        json!({
            "configPath": openclaw.config_path.display().to_string(),
            "configExists": openclaw.config_exists,
            "gatewayUrl": openclaw.gateway_url(),
            "gatewayEnabled": openclaw.gateway_enabled(),
            "defaultAgent": openclaw.default_agent_id(),
            "workspace": workspace(None),
            "agents": openclaw
                .agents
                .iter()
                .map(|agent| json!({"id": agent.id, "workspace": workspace(Some(&agent.id))}))
                .collect::<Vec<_>>(),
        })
    }
}
