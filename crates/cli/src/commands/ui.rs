//! `copilot-bridge ui [--no-open]`: the dashboard (docs/dashboard.md),
//! opened in the browser on a one-time login URL the daemon mints for the
//! holder of its approver token (`ui.login`). The daemon is started when
//! none runs. `--no-open` prints the URL, and only it, on stdout.

use std::process::ExitCode;

use bridge_agents::env::AgentEnv;
use bridge_config::BridgeConfig;
use serde_json::json;

use super::daemon::{launch as launch_daemon, serve_command_args};
use super::remote::call_failure;
use super::tool::write_stdout;
use crate::args::{GlobalArgs, UiArgs};
use crate::exit::{self, Failure};

pub async fn run(
    global: &GlobalArgs,
    config: &BridgeConfig,
    args: UiArgs,
    env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    if bridge_server::find_running(&config.home).await.is_none() {
        launch_daemon(&config.home, &serve_command_args(global, config, false)).await?;
    }
    let client = super::approvals::approver_client(config).await?;
    let answer = client
        .call("ui.login", json!({}))
        .await
        .map_err(|err| call_failure("ui.login", &err))?;
    let url = answer["url"]
        .as_str()
        .ok_or_else(|| Failure::internal(format!("ui.login answered no URL: {answer}")))?;
    if args.no_open {
        write_stdout(&format!("{url}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    match open(url, env) {
        Ok(()) => {
            eprintln!(
                "copilot-bridge: the dashboard is open in your browser (the link works once, for 60 s)"
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(why) => Err(Failure::new(
            exit::FAILED,
            format!("cannot open a browser ({why}); open this link within 60 s: {url}"),
        )),
    }
}

/// Hands `url` to the desktop's opener, with only what it needs of the
/// environment.
fn open(url: &str, env: &AgentEnv) -> Result<(), String> {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let mut command = std::process::Command::new(opener);
    command
        .arg(url)
        .env_clear()
        .envs(env.desktop_session().iter().cloned())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(path) = env.search_path() {
        command.env("PATH", path);
    }
    if let Some(home) = env.home() {
        command.env("HOME", home);
    }
    let status = command.status().map_err(|err| format!("{opener}: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{opener} exited with {status}"))
    }
}
