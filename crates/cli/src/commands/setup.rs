//! `copilot-bridge setup`: what a user pastes to route each agent's model
//! requests through the daemon's facade (`bridge_agents::setup` builds it):
//! with a daemon running, its address and token; otherwise the configured
//! port and a command that reads the token. With a daemon that exports
//! telemetry, the lines that send Claude Code's and Codex's own through it.

use std::io::Write;
use std::process::ExitCode;

use bridge_agents::openclaw;
use bridge_agents::setup::{self, Facade, Served};
use bridge_config::BridgeConfig;

use crate::args::SetupArgs;
use crate::exit::Failure;

pub async fn run(config: &BridgeConfig, args: SetupArgs) -> Result<ExitCode, Failure> {
    let agents = crate::commands::chosen_agents(args.agent.as_deref(), setup::AGENTS)?;
    let openclaw_has_token = openclaw_has_token(config);
    let running = bridge_server::find_running(&config.home).await;
    let (status, served) = match &running {
        Some(client) => {
            let status = status(client).await;
            let mut served = served_by(&status);
            served.models = client.models().await.unwrap_or_default();
            (Some(status), served)
        }
        None => (None, Served::default()),
    };
    // What sessions get of OpenClaw: the running daemon's word, else what
    // this configuration would give them.
    let memory = status
        .as_ref()
        .and_then(|status| {
            status["openclawMemory"]["summary"]
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| bridge_compose::OpenClawMemory::detect(config).describe());
    // When the daemon exports telemetry, the agents' own can go through it.
    let telemetry = status
        .as_ref()
        .is_some_and(exporting)
        .then(|| bridge_server::GatewayFile::path(&config.home));
    let facade = match running {
        Some(client) => Facade {
            origin: format!("http://{}", client.address()),
            token: client.file().token.clone(),
            live: true,
            openclaw_has_token,
            openclaw_config: config.openclaw.config_path.clone(),
            telemetry,
        },
        None => Facade {
            origin: format!("http://127.0.0.1:{}", config.port),
            token: setup::token_command(&bridge_server::GatewayFile::path(&config.home)),
            live: false,
            openclaw_has_token,
            openclaw_config: config.openclaw.config_path.clone(),
            telemetry,
        },
    };
    let model = served
        .choose(args.model.as_deref())
        .unwrap_or_else(|| "gpt-4.1".to_owned());
    let mut text = setup::text(&agents, &facade, &served, &model);
    // With the header, not after the last block: an agent's block is
    // pasted as it is (openclaw.json's is JSON to its end).
    let memory =
        format!("# Sessions the hub creates (run, chat, copilot_code, orchestrate): {memory}.\n\n");
    let at = text.find("\n\n").map_or(0, |end| end + 2);
    text.insert_str(at, &memory);
    let _ = write!(std::io::stdout().lock(), "{text}");
    Ok(ExitCode::SUCCESS)
}

/// Whether the daemon keeps its token (`<home>/token`) and OpenClaw's
/// `.env` holds it.
fn openclaw_has_token(config: &BridgeConfig) -> bool {
    bridge_server::state_file::kept_token(&config.home)
        .ok()
        .flatten()
        .is_some_and(|token| openclaw::has_token(&config.openclaw.state_dir, &token))
}

/// Whether the daemon whose `bridge.status` this is exports telemetry, so
/// that it takes the agents' own (docs/telemetry.md).
pub(crate) fn exporting(status: &serde_json::Value) -> bool {
    status["telemetry"]["exporting"] == true
}

/// The running daemon's `bridge.status` (`null` when it does not answer).
pub(crate) async fn status(client: &bridge_server::GatewayClient) -> serde_json::Value {
    client
        .call("bridge.status", serde_json::json!({}))
        .await
        .unwrap_or_default()
}

/// What the running daemon serves: its default backend with that
/// backend's model, and `/v1/models`. Nothing when it does not say.
pub(crate) async fn served(client: &bridge_server::GatewayClient) -> Served {
    let mut served = served_by(&status(client).await);
    served.models = client.models().await.unwrap_or_default();
    served
}

/// The default backend and its model, as `bridge.status` gives them.
fn served_by(status: &serde_json::Value) -> Served {
    let default_backend = status["backends"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|backend| backend["default"] == true)
        .and_then(|backend| {
            let name = backend["name"].as_str()?;
            let model = backend["defaultModel"].as_str()?;
            Some((name.to_owned(), model.to_owned()))
        });
    Served {
        default_backend,
        models: Vec::new(),
    }
}
