//! `copilot-bridge setup`: what a user pastes to route each agent's model
//! requests through the daemon's facade — Claude Code's
//! `ANTHROPIC_BASE_URL` (without `/v1`), Codex's `[model_providers]` block
//! (`wire_api = "responses"`), Copilot CLI's `COPILOT_PROVIDER_*`, OpenClaw's
//! `models.providers` entry. With a daemon running, its address and token;
//! otherwise the configured port and a command that reads the token.

use std::io::Write;
use std::process::ExitCode;

use bridge_config::BridgeConfig;
use serde_json::json;

use crate::args::SetupArgs;
use crate::exit::Failure;

/// Agents, in the order they are printed, with the `--agent` name.
const AGENTS: &[&str] = &["claude", "codex", "copilot", "openclaw"];

/// The environment variable Codex reads the key from. Not
/// `COPILOT_BRIDGE_TOKEN`: that one sets the daemon's own token.
pub const CODEX_KEY_VARIABLE: &str = "COPILOT_BRIDGE_API_KEY";

/// Where and how the facade is reached.
struct Facade {
    /// `http://127.0.0.1:PORT`.
    origin: String,
    /// The token, or a shell expression that prints it.
    token: String,
    /// Whether `token` is the running daemon's (it changes at each start
    /// unless `token` is configured).
    live: bool,
    /// Whether OpenClaw already has the daemon's kept token as
    /// `COPILOT_BRIDGE_TOKEN` (`openclaw register` wrote it): its block then
    /// names the variable, which survives restarts.
    openclaw_has_token: bool,
}

pub async fn run(config: &BridgeConfig, args: SetupArgs) -> Result<ExitCode, Failure> {
    let agents = crate::commands::chosen_agents(args.agent.as_deref(), AGENTS)?;
    let facade = match bridge_server::find_running(&config.home).await {
        Some(client) => Facade {
            origin: format!("http://{}", client.address()),
            token: client.file().token.clone(),
            live: true,
            openclaw_has_token: openclaw_has_token(config),
        },
        None => Facade {
            origin: format!("http://127.0.0.1:{}", config.port),
            token: format!(
                "$(jq -r .token {})",
                shell_word(
                    &bridge_server::GatewayFile::path(&config.home)
                        .display()
                        .to_string()
                )
            ),
            live: false,
            openclaw_has_token: openclaw_has_token(config),
        },
    };
    let model = args.model.as_deref().unwrap_or("gpt-4.1");
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
    let sections: Vec<String> = agents
        .iter()
        .map(|agent| section(agent, &facade, model))
        .collect();
    text.push_str(&sections.join("\n"));
    let _ = write!(std::io::stdout().lock(), "{text}");
    Ok(ExitCode::SUCCESS)
}

fn section(agent: &str, facade: &Facade, model: &str) -> String {
    let Facade { origin, token, .. } = facade;
    let v1 = format!("{origin}/v1");
    match agent {
        "claude" => format!(
            "# Claude Code (/v1/messages): in the shell that runs `claude`. No /v1: Claude Code adds it.\n\
             export ANTHROPIC_BASE_URL={origin}\n\
             export ANTHROPIC_AUTH_TOKEN={token}\n"
        ),
        "codex" => format!(
            "# Codex (/v1/responses): in ~/.codex/config.toml\n\
             model = {model:?}\n\
             model_provider = \"copilot-bridge\"\n\n\
             [model_providers.copilot-bridge]\n\
             name = \"copilot-bridge\"\n\
             base_url = {v1:?}\n\
             env_key = \"{CODEX_KEY_VARIABLE}\"\n\
             wire_api = \"responses\"\n\n\
             # and in the shell that runs `codex`:\n\
             export {CODEX_KEY_VARIABLE}={token}\n"
        ),
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
                format!("${{{}}}", super::openclaw::TOKEN_VARIABLE)
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
                "# OpenClaw (/v1/chat/completions): merge into ~/.openclaw/openclaw.json{}\n{}\n",
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

/// Whether the daemon keeps its token (`<home>/token`) and OpenClaw's
/// `.env` holds it.
fn openclaw_has_token(config: &BridgeConfig) -> bool {
    let kept = bridge_server::state_file::kept_token(&config.home)
        .ok()
        .flatten();
    let dotenv = config.openclaw.state_dir.join(".env");
    match (kept, std::fs::read_to_string(dotenv)) {
        (Some(token), Ok(text)) => {
            super::openclaw::dotenv_holds(&text, super::openclaw::TOKEN_VARIABLE, &token)
        }
        _ => false,
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
