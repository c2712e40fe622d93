//! What `copilot-bridge setup` prints: what a user pastes to route each
//! agent's model requests through the daemon's facade — Claude Code's
//! `ANTHROPIC_BASE_URL` (without `/v1`), Codex's `[model_providers]` block
//! (`wire_api = "responses"`), Copilot CLI's `COPILOT_PROVIDER_*`, OpenClaw's
//! `models.providers` entry. With a daemon running, its address and token;
//! otherwise the configured port and a command that reads the token. With
//! a daemon that exports telemetry, also what sends Claude Code's and
//! Codex's own telemetry through it (`crate::telemetry`).

use std::path::Path;

use serde_json::json;

use crate::openclaw::TOKEN_VARIABLE;

/// Agents, in the order they are printed, with the `--agent` name.
pub const AGENTS: &[&str] = &["claude", "codex", "copilot", "openclaw"];

/// The environment variable Codex reads the key from. Not
/// `COPILOT_BRIDGE_TOKEN`: that one sets the daemon's own token.
pub const CODEX_KEY_VARIABLE: &str = "COPILOT_BRIDGE_API_KEY";

/// Codex's configuration flags for a run whose model requests go to the
/// facade at `origin`, asking for `model`; the key goes in
/// [`CODEX_KEY_VARIABLE`].
pub fn codex_provider_flags(origin: &str, model: &str) -> Vec<String> {
    let provider = format!(
        "model_providers.copilot-bridge={{name=\"copilot-bridge\",base_url={},env_key=\"{CODEX_KEY_VARIABLE}\",wire_api=\"responses\"}}",
        serde_json::Value::String(format!("{origin}/v1"))
    );
    [
        provider,
        "model_provider=\"copilot-bridge\"".to_owned(),
        format!("model={}", serde_json::Value::String(model.to_owned())),
    ]
    .into_iter()
    .flat_map(|flag| ["-c".to_owned(), flag])
    .collect()
}

/// Where and how the facade is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facade {
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    /// The token, or a shell expression that prints it ([`token_command`]).
    pub token: String,
    /// Whether `token` is the running daemon's (it changes at each start
    /// unless `token` is configured).
    pub live: bool,
    /// Whether OpenClaw already has the daemon's kept token as
    /// `COPILOT_BRIDGE_TOKEN` (`openclaw register` wrote it): its block then
    /// names the variable, which survives restarts.
    pub openclaw_has_token: bool,
    /// The configuration file OpenClaw reads (`OPENCLAW_CONFIG_PATH`, else
    /// `openclaw.json` in its state directory), named in its block.
    pub openclaw_config: std::path::PathBuf,
    /// When the running daemon exports telemetry: its state file
    /// (gateway.json), from which the agents' telemetry lines read the
    /// token each time. `None`: no telemetry lines.
    pub telemetry: Option<std::path::PathBuf>,
}

/// A shell expression that prints the token of the daemon whose state
/// file is `gateway_file`, when it runs.
pub fn token_command(gateway_file: &Path) -> String {
    format!(
        "$(jq -r .token {})",
        shell_word(&gateway_file.display().to_string())
    )
}

/// The lines that send Claude Code's own telemetry (metrics and events)
/// through the hub at `origin`, which forwards it to its collector
/// (docs/telemetry.md). The token changes at every daemon start, so the
/// header comes from Claude Code's `otelHeadersHelper`, a command that
/// reads it from `gateway_file` each time, never a literal.
pub fn claude_telemetry(origin: &str, gateway_file: &Path) -> String {
    let helper = format!(
        "jq -c '{{Authorization: (\"Bearer \" + .token)}}' {}",
        shell_word(&gateway_file.display().to_string())
    );
    let setting = serde_json::json!({ "otelHeadersHelper": helper });
    let exports: String = crate::telemetry::claude_variables(origin)
        .iter()
        .map(|(name, value)| format!("export {name}={value}\n"))
        .collect();
    format!(
        "# Claude Code's own telemetry through the hub, which forwards it to its collector:\n\
         {exports}\
         # and in ~/.claude/settings.json (the daemon's token changes when it restarts):\n\
         #   {setting}\n"
    )
}

/// Codex's part of the same, in two pieces: the `[otel]` lines of its
/// config.toml, and the shell function that gives it the header, read at
/// each start (Codex's `[otel]` takes only literal headers:
/// `crate::telemetry`).
fn codex_telemetry(origin: &str, gateway_file: &Path) -> (String, String) {
    let config = format!(
        "\n# Codex's own telemetry through the hub, which forwards it to its collector: its log\n\
         # events, traces and metrics (these replace its default metrics export to OpenAI).\n\
         {}",
        crate::telemetry::codex_config(origin)
    );
    let shell = format!(
        "# Codex's [otel] takes its header only as literal text, but its exporter also reads\n\
         # {} when Codex starts: for Codex alone, with the daemon's token\n\
         # read at each start (it changes when the daemon restarts):\n\
         {}",
        crate::telemetry::HEADERS_VARIABLE,
        crate::telemetry::codex_shell(gateway_file)
    );
    (config, shell)
}

/// What the running daemon serves, for the model names `setup` prints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Served {
    /// The default backend and the model it answers with.
    pub default_backend: Option<(String, String)>,
    /// Every model name `GET /v1/models` lists, with its backend.
    pub models: Vec<(String, String)>,
}

/// How many served names `setup` prints before pointing at `/v1/models`.
const SHOWN_MODELS: usize = 12;

impl Served {
    /// The model agents should ask for: the one asked for, else the
    /// default backend's, else the first served one.
    pub fn choose(&self, asked: Option<&str>) -> Option<String> {
        asked
            .map(str::to_owned)
            .or_else(|| self.default_backend.as_ref().map(|(_, m)| m.clone()))
            .or_else(|| self.models.first().map(|(m, _)| m.clone()))
    }

    /// Comment lines: what is served, whether `model` is, and how to map
    /// the names agents send on their own.
    pub fn note(&self, model: &str) -> String {
        let mut note = String::new();
        if self.models.is_empty() && self.default_backend.is_none() {
            return note;
        }
        let names: Vec<String> = self
            .models
            .iter()
            .take(SHOWN_MODELS)
            .map(|(name, backend)| format!("{name} ({backend})"))
            .collect();
        note.push_str("# Models it serves:");
        if let Some((backend, default)) = &self.default_backend {
            note.push_str(&format!(" {default} ({backend}'s own),"));
        }
        note.push_str(&format!(" {}", names.join(", ")));
        if self.models.len() > SHOWN_MODELS {
            note.push_str(&format!(
                ", and {} more (GET /v1/models)",
                self.models.len() - SHOWN_MODELS
            ));
        }
        note.push('\n');
        let (backend, fallback) = self
            .default_backend
            .clone()
            .unwrap_or_else(|| ("the default backend".to_owned(), "its model".to_owned()));
        let is_default = self
            .default_backend
            .as_ref()
            .is_some_and(|(_, default)| default == model);
        if !is_default && !self.models.iter().any(|(name, _)| name == model) {
            note.push_str(&format!(
                "# No backend lists {model:?}: requests for it get {backend}'s {fallback:?}.\n"
            ));
        }
        note.push_str(&format!(
            "# A name no backend serves (Claude Code's claude-…) gets {backend}'s {fallback:?}, unless\n\
             # `[models] strict_models = true`; to choose, map it in config.toml:\n\
             #   [models.map]\n\
             #   \"claude-*\" = \"{backend}/{fallback}\"\n\n"
        ));
        note
    }
}

/// What to paste for each of `agents` (names of [`AGENTS`]), after a word
/// on where the token comes from and what the daemon serves; `model` is
/// the model the agents ask for.
pub fn text(agents: &[&str], facade: &Facade, served: &Served, model: &str) -> String {
    let mut text = String::new();
    if facade.live {
        text.push_str(&format!(
            "# The daemon at {} answers; its token changes when it restarts unless `token` is configured.\n\n",
            facade.origin
        ));
    } else {
        text.push_str(
            "# No daemon is running: start one with `copilot-bridge serve` (or `daemon start`).\n\
             # The token is read from its state file when you paste these lines.\n\n",
        );
    }
    text.push_str(&served.note(model));
    let sections: Vec<String> = agents
        .iter()
        .map(|agent| section(agent, facade, model))
        .collect();
    text.push_str(&sections.join("\n"));
    text
}

fn section(agent: &str, facade: &Facade, model: &str) -> String {
    let Facade { origin, token, .. } = facade;
    let v1 = format!("{origin}/v1");
    match agent {
        "claude" => {
            let telemetry = facade
                .telemetry
                .as_deref()
                .map(|file| claude_telemetry(origin, file))
                .unwrap_or_default();
            format!(
                "# Claude Code (/v1/messages): in the shell that runs `claude`. No /v1: Claude Code adds it.\n\
                 export ANTHROPIC_BASE_URL={origin}\n\
                 export ANTHROPIC_AUTH_TOKEN={token}\n\
                 {telemetry}"
            )
        }
        "codex" => {
            let (config, shell) = facade
                .telemetry
                .as_deref()
                .map(|file| codex_telemetry(origin, file))
                .unwrap_or_default();
            // The config.toml lines first, all of them: a user pastes
            // them as one block, and the tests split there too.
            format!(
                "# Codex (/v1/responses): in ~/.codex/config.toml\n\
                 model = {model:?}\n\
                 model_provider = \"copilot-bridge\"\n\n\
                 [model_providers.copilot-bridge]\n\
                 name = \"copilot-bridge\"\n\
                 base_url = {v1:?}\n\
                 env_key = \"{CODEX_KEY_VARIABLE}\"\n\
                 wire_api = \"responses\"\n\
                 {config}\n\
                 # and in the shell that runs `codex`:\n\
                 export {CODEX_KEY_VARIABLE}={token}\n\
                 {shell}\
                 # So that Codex's own tools (its shell, apply_patch, MCP tools) pass the hub's policy:\n\
                 #   copilot-bridge hooks install --agent codex --scope user\n\
                 # (or run it as `copilot-bridge launch codex --via-hub`).\n"
            )
        }
        "copilot" => format!(
            "# GitHub Copilot CLI (BYOK, /v1/chat/completions): in the shell that runs `copilot`.\n\
             # COPILOT_PROVIDER_TYPE=anthropic with COPILOT_PROVIDER_BASE_URL={origin} uses /v1/messages instead.\n\
             export COPILOT_PROVIDER_BASE_URL={v1}\n\
             export COPILOT_PROVIDER_TYPE=openai\n\
             export COPILOT_PROVIDER_API_KEY={token}\n\
             export COPILOT_MODEL={model}\n"
        ),
        _ => {
            let api_key = if facade.openclaw_has_token {
                format!("${{{TOKEN_VARIABLE}}}")
            } else if facade.live {
                token.clone()
            } else {
                "PASTE-THE-TOKEN".to_owned()
            };
            let block = json!({"models": {"mode": "merge", "providers": {"copilot-bridge": {
                "baseUrl": v1,
                "apiKey": api_key,
                "api": "openai-completions",
                "models": [{"id": model, "name": format!("{model} via copilot-bridge")}],
            }}}, "agents": {"defaults": {"model": {"primary": format!("copilot-bridge/{model}")}}}});
            format!(
                "# OpenClaw (/v1/chat/completions): merge into {}{}\n{}\n",
                facade.openclaw_config.display(),
                if facade.openclaw_has_token {
                    " (apiKey: the kept token, from OpenClaw's .env)"
                } else if facade.live {
                    ""
                } else {
                    " (apiKey: the `token` of gateway.json)"
                },
                serde_json::to_string_pretty(&block).unwrap_or_default()
            )
        }
    }
}

/// `text` as one shell word (single-quoted when it needs to be).
fn shell_word(text: &str) -> String {
    if text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@".contains(&b))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}
