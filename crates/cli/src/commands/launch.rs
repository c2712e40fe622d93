//! `copilot-bridge launch claude|copilot|codex [--via-hub] [--agent BINARY]
//! [--model NAME] [-- ARGS]` (see docs/hooks.md, "launch"): runs the agent
//! with the hub staged around it for this run only, leaving the user's own
//! configuration as it is.
//!
//! Staged in a private directory removed when the agent exits
//! (`bridge_agents::launch`: our hook for every event and the MCP
//! servers; Codex's as `-c` flags, trusted through its app-server before
//! it runs), and with `--via-hub` the daemon's facade as the agent's model
//! endpoint (the daemon is started when none runs). With a running daemon
//! that exports telemetry, Claude Code's and Codex's own telemetry goes
//! through it, unless the user's settings already send it somewhere
//! (`bridge_agents::telemetry`). A Copilot CLI command
//! line with a prompt is normalized like every nested launch
//! (`runner::nested`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bridge_agents::AgentEnv;
use bridge_agents::hook::agent_from_flag;
use bridge_agents::telemetry;
use bridge_config::BridgeConfig;
use bridge_engine::runner::nested;
use bridge_policy::agent_tools::Agent;

use super::daemon::{Launched, launch as launch_daemon, serve_command_args};
use crate::args::{GlobalArgs, LaunchArgs};
use crate::exit::{self, Failure};

pub async fn run(
    global: &GlobalArgs,
    config: &BridgeConfig,
    args: LaunchArgs,
    env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    let agent = agent_from_flag(&args.kind)
        .ok_or_else(|| Failure::usage(format!("unknown agent {:?}", args.kind)))?;
    let claude = agent == Agent::ClaudeCode;
    let binary = args
        .agent
        .clone()
        .or_else(|| env.agent_binary().map(Path::to_owned))
        .unwrap_or_else(|| PathBuf::from(&args.kind));
    let stage = stage_dir()?;
    let mut command = tokio::process::Command::new(&binary);
    let program = super::program(config)?;
    let mut staged = bridge_agents::launch::stage(agent, &program, stage.path())?;
    command.envs(staged.env.iter().copied());
    if agent == Agent::Codex {
        trust_codex_hooks(&binary, env, &program, &staged.args)?;
    }
    // The daemon of this run: the one running, else with `--via-hub` one
    // started for the run only (let go of after it). None is started for
    // telemetry alone.
    let mut started_for_the_run = None;
    let daemon = match bridge_server::find_running(&config.home).await {
        Some(client) => Some(client),
        None if args.via_hub => {
            match launch_daemon(&config.home, &serve_command_args(global, config, false)).await? {
                Launched::Started(client) => {
                    started_for_the_run = Some(client.clone());
                    Some(client)
                }
                Launched::Already(client) => Some(client),
            }
        }
        None => None,
    };
    if let Some(client) = &daemon {
        send_telemetry(client, agent, env, &mut command, &mut staged).await?;
    }
    if let Some(client) = daemon.as_ref().filter(|_| args.via_hub) {
        let origin = client.file().http_url("");
        let origin = origin.trim_end_matches('/').to_owned();
        let token = client.file().token.clone();
        if claude {
            command
                .env("ANTHROPIC_BASE_URL", &origin)
                .env("ANTHROPIC_AUTH_TOKEN", &token);
            if let Some(model) = &args.model {
                command.env("ANTHROPIC_MODEL", model);
            }
        } else if agent == Agent::Codex {
            let model = model_for(client, args.model.as_deref()).await;
            staged
                .args
                .extend(bridge_agents::setup::codex_provider_flags(&origin, &model));
            command.env(bridge_agents::setup::CODEX_KEY_VARIABLE, &token);
        } else {
            let asked = args.model.as_deref().or_else(|| env.copilot_model());
            let model = model_for(client, asked).await;
            command
                .env("COPILOT_PROVIDER_BASE_URL", format!("{origin}/v1"))
                .env("COPILOT_PROVIDER_TYPE", "openai")
                .env("COPILOT_PROVIDER_API_KEY", &token)
                .env("COPILOT_MODEL", model);
        }
    }
    let user_args = if claude || !nested::has_prompt(&args.args) {
        args.args.clone()
    } else {
        nested::normalize_args(&args.args).map_err(|err| Failure::usage(err.to_string()))?
    };
    command.args(bridge_agents::launch::command_line(
        agent, &staged, &user_args,
    ));
    let status = command.status().await.map_err(|err| {
        Failure::new(
            exit::FAILED,
            format!("cannot run {}: {err}", binary.display()),
        )
    })?;
    drop(stage);
    if let Some(daemon) = started_for_the_run {
        // Its default session is what keeps a detached daemon up; with it
        // ended, the daemon exits once its last session has (the idle
        // grace, `idle_exit_secs`), as `daemon start` documents.
        if let Err(err) = daemon
            .call("session.end", serde_json::json!({"session": "default"}))
            .await
        {
            tracing::debug!("the daemon started for this run did not end its session: {err}");
        }
    }
    Ok(exit_code_of(status))
}

/// The agent's own telemetry through the daemon, when it exports and the
/// user's own settings do not already say where that telemetry goes
/// (`bridge_agents::telemetry`; docs/telemetry.md). The token is the live
/// one, in the agent's environment like the facade's: it lives as long as
/// this run of the agent.
async fn send_telemetry(
    client: &bridge_server::GatewayClient,
    agent: Agent,
    env: &AgentEnv,
    command: &mut tokio::process::Command,
    staged: &mut bridge_agents::launch::Staged,
) -> Result<(), Failure> {
    if !super::setup::exporting(&super::setup::status(client).await) {
        return Ok(());
    }
    let origin = client.file().http_url("");
    let hub = telemetry::Hub {
        origin: origin.trim_end_matches('/'),
        token: &client.file().token,
    };
    let cwd = super::project_dir(None)?;
    match telemetry::for_launch(agent, hub, env, &cwd) {
        telemetry::ForLaunch::Through(launch) => {
            staged.args.extend(launch.args);
            command.envs(launch.env);
        }
        telemetry::ForLaunch::UsersOwn(why) => eprintln!(
            "copilot-bridge: {}'s own telemetry is left to your settings, not sent through the hub ({why})",
            agent.display_name()
        ),
        telemetry::ForLaunch::Unknown => {}
    }
    Ok(())
}

/// The model an agent that must name one asks the daemon for: the one
/// asked for, else the daemon's default backend's own (a name it serves).
async fn model_for(client: &bridge_server::GatewayClient, asked: Option<&str>) -> String {
    if let Some(model) = asked {
        return model.to_owned();
    }
    super::setup::served(client)
        .await
        .choose(None)
        .unwrap_or_else(|| "gpt-4.1".to_owned())
}

/// Codex runs only hooks it trusts: the launch's own hook commands (and
/// only those) are trusted through its app-server, or nothing runs.
fn trust_codex_hooks(
    binary: &Path,
    env: &AgentEnv,
    program: &bridge_agents::Program,
    flags: &[String],
) -> Result<(), Failure> {
    let ours: Vec<String> = bridge_agents::hooks::events(Agent::Codex)
        .iter()
        .map(|(_, event)| bridge_agents::hooks::hook_command(program, Agent::Codex, event, None))
        .collect();
    let cwd = super::project_dir(None)?;
    let trusted = bridge_agents::codex::trust_ours(binary, env, flags, &cwd, |hook| {
        ours.contains(&hook.command)
    })
    .map_err(|err| Failure::new(exit::FAILED, format!("{err}; Codex was not started")))?;
    if trusted.ours.len() != ours.len() {
        return Err(Failure::new(
            exit::FAILED,
            format!(
                "Codex lists {} of the launch's {} hooks; Codex was not started",
                trusted.ours.len(),
                ours.len()
            ),
        ));
    }
    Ok(())
}

/// The agent's own exit code (128 + the signal when it was killed).
fn exit_code_of(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

pub(crate) fn stage_dir() -> Result<tempfile::TempDir, Failure> {
    nested::private_dir("copilot-bridge-launch-").map_err(|err| {
        Failure::internal(format!(
            "cannot make a directory to stage the launch: {err}"
        ))
    })
}
