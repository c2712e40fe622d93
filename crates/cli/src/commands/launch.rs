//! `copilot-bridge launch claude|copilot [--via-hub] [--agent BINARY]
//! [--model NAME] [-- ARGS]` (see docs/hooks.md, "launch"): runs the agent
//! with the hub staged around it for this run only, leaving the user's own
//! configuration as it is.
//!
//! Staged in a private directory removed when the agent exits: our hook for
//! every event (Claude Code: `--settings FILE`; the Copilot CLI: a plugin
//! with `hooks/hooks.json` and our extension, `--plugin-dir DIR
//! --experimental`), the MCP servers
//! (`--mcp-config FILE`, `--additional-mcp-config @FILE`), and with
//! `--via-hub` the daemon's facade as the agent's model endpoint (the
//! daemon is started when none runs). A Copilot CLI command line with a
//! prompt is normalized like every nested launch (`runner::nested`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bridge_config::BridgeConfig;
use bridge_engine::runner::nested;
use serde_json::{Map, Value, json};

use super::daemon::{Launched, launch as launch_daemon, serve_command_args};
use super::hooks::{CLAUDE_EVENTS, COPILOT_EVENTS, hook_command};
use super::mcp::config::{agent_servers, daemon_env};
use crate::args::{GlobalArgs, LaunchArgs};
use crate::exit::{self, Failure};

/// Names the agent's binary when `--agent` does not.
pub const AGENT_BINARY_VARIABLE: &str = "COPILOT_BRIDGE_AGENT_BINARY";

pub async fn run(
    global: &GlobalArgs,
    config: &BridgeConfig,
    args: LaunchArgs,
) -> Result<ExitCode, Failure> {
    let claude = args.kind == "claude";
    let binary = args
        .agent
        .clone()
        .or_else(|| std::env::var_os(AGENT_BINARY_VARIABLE).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(&args.kind));
    let stage = stage_dir()?;
    let mut command = tokio::process::Command::new(&binary);
    let staged = if claude {
        stage_claude(config, stage.path())?
    } else {
        stage_copilot(config, stage.path())?
    };
    command.args(&staged);
    if !claude {
        command.env("COPILOT_BRIDGE_HOOKS_ACTIVE", "1");
    }
    if args.via_hub {
        let client = match bridge_server::find_running(&config.home).await {
            Some(client) => client,
            None => match launch_daemon(&config.home, &serve_command_args(global, config, false))
                .await?
            {
                Launched::Started(client) | Launched::Already(client) => client,
            },
        };
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
        } else {
            let model = args
                .model
                .clone()
                .or_else(|| std::env::var("COPILOT_MODEL").ok())
                .unwrap_or_else(|| "gpt-4.1".to_owned());
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
    command.args(&user_args);
    let status = command.status().await.map_err(|err| {
        Failure::new(
            exit::FAILED,
            format!("cannot run {}: {err}", binary.display()),
        )
    })?;
    drop(stage);
    Ok(exit_code_of(status))
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

fn write_json(file: &Path, value: &Value) -> Result<(), Failure> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|err| Failure::internal(format!("cannot create {}: {err}", dir.display())))?;
    }
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    std::fs::write(file, text)
        .map_err(|err| Failure::internal(format!("cannot write {}: {err}", file.display())))
}

fn exe() -> Result<String, Failure> {
    Ok(std::env::current_exe()
        .map_err(|err| Failure::internal(format!("cannot find this program's own path: {err}")))?
        .display()
        .to_string())
}

/// Claude Code's staged settings and MCP servers: its extra arguments.
pub(crate) fn stage_claude(config: &BridgeConfig, stage: &Path) -> Result<Vec<String>, Failure> {
    let mut hooks = Map::new();
    for (event, ours) in CLAUDE_EVENTS {
        let command = hook_command(config, "claude", ours, None)?;
        hooks.insert(
            (*event).to_owned(),
            json!([{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 90}]}]),
        );
    }
    let settings = stage.join("settings.json");
    write_json(&settings, &json!({"hooks": hooks}))?;
    let mcp = stage.join("mcp.json");
    write_json(&mcp, &agent_servers("claude", &exe()?, &daemon_env(config)))?;
    Ok(vec![
        "--settings".to_owned(),
        settings.display().to_string(),
        "--mcp-config".to_owned(),
        mcp.display().to_string(),
    ])
}

/// The Copilot CLI's staged plugin (our hooks and the extension, which
/// needs `--experimental`) and MCP servers.
pub(crate) fn stage_copilot(config: &BridgeConfig, stage: &Path) -> Result<Vec<String>, Failure> {
    let plugin = stage.join("copilot-bridge");
    write_json(
        &plugin.join("plugin.json"),
        &json!({"name": "copilot-bridge", "version": crate_version(),
                "description": "copilot-bridge's policy and providers in this session"}),
    )?;
    let mut hooks = Map::new();
    for (event, ours) in COPILOT_EVENTS {
        let command = hook_command(config, "copilot", ours, None)?;
        hooks.insert(
            (*event).to_owned(),
            json!([{"type": "command", "bash": command, "timeoutSec": 90}]),
        );
    }
    write_json(
        &plugin.join("hooks/hooks.json"),
        &json!({"version": 1, "hooks": hooks}),
    )?;
    let mcp = stage.join("mcp.json");
    write_json(
        &mcp,
        &agent_servers("copilot", &exe()?, &daemon_env(config)),
    )?;
    Ok(vec![
        "--plugin-dir".to_owned(),
        plugin.display().to_string(),
        "--additional-mcp-config".to_owned(),
        format!("@{}", mcp.display()),
        "--experimental".to_owned(),
    ])
}

fn crate_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
