//! `copilot-bridge daemon start|stop|status`.
//!
//! `start` runs this binary's `serve` detached (its own process group,
//! stdin closed, output appended to `<home>/daemon.log`) and waits until it
//! answers; `stop` asks over `/rpc` and falls back to SIGTERM. A daemon
//! run by the user service (`service`, docs/install.md) is not started a
//! second time: `start` says so and how to restart it.

use std::ffi::OsString;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use bridge_agents::AgentEnv;
use bridge_config::BridgeConfig;
use bridge_server::state_file::{GatewayFile, open_private_log};
use bridge_server::{GatewayClient, find_running, process};
use bridge_util::owner_only::ensure_private_dir;
use serde_json::json;

use super::remote::call_failure;
use super::service::{self, ServiceState};
use super::tool::{print_json, write_stdout};
use crate::args::{DaemonCommand, GlobalArgs, ServeArgs};
use crate::exit::{self, Failure};

/// How long `start` waits for the daemon to answer, and `stop` for it to exit.
const WAIT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(50);
pub const LOG_FILE: &str = "daemon.log";

pub async fn run(
    global: &GlobalArgs,
    config: &BridgeConfig,
    command: DaemonCommand,
    env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    match command {
        DaemonCommand::Start(args) => start(global, config, args, env).await,
        DaemonCommand::Stop => stop(config).await,
        DaemonCommand::Status { json } => status(config, json).await,
    }
}

/// A daemon answers already: say so — when it is the user service's, that
/// and how to restart it (`service`, docs/install.md); when it is older
/// than this program (an upgrade replaced its binary, docs/cli.md
/// "doctor"), that and how to restart it.
async fn already_running(
    config: &BridgeConfig,
    client: &GatewayClient,
    service: Option<&ServiceState>,
) -> Result<ExitCode, Failure> {
    let by_service = service.is_some_and(|state| state.main_pid == Some(client.file().pid));
    let mut out = if by_service {
        format!(
            "a gateway is already running on {} (pid {}), run by the user service; restart it with: {}\n",
            client.address(),
            client.file().pid,
            ServiceState::restart_hint()
        )
    } else {
        format!(
            "a gateway is already running on {} (pid {})\n",
            client.address(),
            client.file().pid
        )
    };
    out.push_str(&upgrade_notice(config, client).await);
    write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The line saying the running daemon is older than this program, or "".
pub(crate) async fn upgrade_notice(config: &BridgeConfig, client: &GatewayClient) -> String {
    match super::doctor::upgrade::stale(client.file()).await {
        Some(stale) => stale.notice(client.file(), config),
        None => String::new(),
    }
}

async fn start(
    global: &GlobalArgs,
    config: &BridgeConfig,
    args: ServeArgs,
    env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    if let Some(client) = find_running(&config.home).await {
        return already_running(config, &client, service::managed(env).as_ref()).await;
    }
    // The user service of this state directory is starting, or waits to
    // restart after a failure: a second daemon would take its port.
    if let Some(state) = service::managed(env)
        && state.is_up()
        && state.home.as_deref() == std::path::absolute(&config.home).ok().as_deref()
    {
        write_stdout(&format!(
            "the user service runs the daemon of {} ({}): not starting a second one; \
             restart it with: {}\n",
            config.home.display(),
            state.describe(),
            ServiceState::restart_hint()
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let serve_args = serve_command_args(global, config, args.trust_project_providers);
    match launch(&config.home, &serve_args).await? {
        Launched::Already(client) => already_running(config, &client, None).await,
        Launched::Started(client) => {
            write_stdout(&format!(
                "started the gateway on {} (pid {}); log: {}\n",
                client.address(),
                client.file().pid,
                config.home.join(LOG_FILE).display()
            ))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The arguments of this binary that run `serve` with the configuration
/// this command loaded.
pub(crate) fn serve_command_args(
    global: &GlobalArgs,
    config: &BridgeConfig,
    trust_project_providers: bool,
) -> Vec<OsString> {
    serve_arguments(
        global,
        &config.home,
        global.config.as_deref(),
        Serve::Detached,
        trust_project_providers,
    )
}

/// How `serve` is to run: detached (exits when idle) or kept running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Serve {
    Detached,
    Kept,
}

/// The arguments of a `serve` with this invocation's state directory,
/// config file, log level, port and flags (the one list `daemon start` and
/// the user service both run).
pub(crate) fn serve_arguments(
    global: &GlobalArgs,
    home: &std::path::Path,
    config_file: Option<&std::path::Path>,
    serve: Serve,
    trust_project_providers: bool,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--home".into(), home.into()];
    if let Some(file) = config_file {
        args.extend(["--config".into(), file.into()]);
    }
    if let Some(level) = &global.log_level {
        args.extend(["--log-level".into(), level.into()]);
    }
    if let Some(port) = &global.port {
        args.extend(["--port".into(), port.into()]);
    }
    if global.writable {
        args.push("--writable".into());
    }
    args.push("serve".into());
    if serve == Serve::Detached {
        args.push("--detached".into());
    }
    if trust_project_providers {
        args.push("--trust-project-providers".into());
    }
    args
}

/// How [`launch`] ended.
pub(crate) enum Launched {
    /// Another start won the race; this daemon is as good.
    Already(GatewayClient),
    Started(GatewayClient),
}

/// Runs this binary with `serve_args` detached (its own process group,
/// stdin closed, output appended to `<home>/daemon.log`) and waits until it
/// answers. Prints nothing: `mcp session` owns stdout.
pub(crate) async fn launch(home: &Path, serve_args: &[OsString]) -> Result<Launched, Failure> {
    let log_path = home.join(LOG_FILE);
    let log = open_log(home, &log_path)?;
    let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
    let exe = std::env::current_exe()
        .map_err(|err| Failure::internal(format!("cannot find this program's path: {err}")))?;
    let mut command = Command::new(exe);
    command.args(serve_args);
    let stderr = log
        .try_clone()
        .map_err(|err| Failure::internal(format!("cannot reuse {}: {err}", log_path.display())))?;
    command
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr)
        // Its own process group: a Ctrl-C in this terminal is not its.
        .process_group(0);
    let mut child = command
        .spawn()
        .map_err(|err| Failure::internal(format!("cannot start the daemon: {err}")))?;
    let pid = child.id();
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            // Lost a race to another start: that one is as good.
            if let Some(client) = find_running(home).await {
                return Ok(Launched::Already(client));
            }
            return Err(Failure::internal(format!(
                "the daemon exited ({status}) before it was ready:\n{}",
                log_tail(&log_path, log_start)
            )));
        }
        let published = GatewayFile::read(home).is_some_and(|file| file.pid == pid);
        if published && let Some(client) = find_running(home).await {
            return Ok(Launched::Started(client));
        }
        if Instant::now() >= deadline {
            return Err(Failure::internal(format!(
                "the daemon (pid {pid}) did not answer within {} s; see {}",
                WAIT.as_secs(),
                log_path.display()
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// `<home>/daemon.log`, appended to, private to the user.
fn open_log(home: &Path, path: &Path) -> Result<std::fs::File, Failure> {
    let fail =
        |err: std::io::Error| Failure::internal(format!("cannot open {}: {err}", path.display()));
    ensure_private_dir(home).map_err(fail)?;
    open_private_log(path).map_err(fail)
}

/// What the daemon wrote to its log since `from` (the last 4 KiB of it).
fn log_tail(path: &Path, from: u64) -> String {
    let mut text = String::new();
    if let Ok(mut file) = std::fs::File::open(path) {
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let start = from.max(len.saturating_sub(4096));
        if file.seek(SeekFrom::Start(start)).is_ok() {
            let _ = file.read_to_string(&mut text);
        }
    }
    bridge_policy::redact(text.trim_end()).into_owned()
}

async fn stop(config: &BridgeConfig) -> Result<ExitCode, Failure> {
    let Some(client) = find_running(&config.home).await else {
        write_stdout("no gateway is running\n")?;
        return Ok(ExitCode::SUCCESS);
    };
    let pid = client.file().pid;
    if let Err(err) = client.call("gateway.shutdown", json!({})).await {
        // Signal only a pid that still answers as our daemon right now:
        // after a crash the pid may belong to an unrelated process.
        if find_running(&config.home)
            .await
            .is_some_and(|again| again.file().pid == pid)
        {
            tracing::info!(error = %err, "gateway.shutdown failed; sending SIGTERM");
            process::terminate(pid).map_err(Failure::internal)?;
        }
    }
    let deadline = Instant::now() + WAIT;
    while !stopped(config, &client).await {
        if Instant::now() >= deadline {
            return Err(Failure::internal(format!(
                "the gateway (pid {pid}) did not stop within {} s",
                WAIT.as_secs()
            )));
        }
        tokio::time::sleep(POLL).await;
    }
    write_stdout(&format!("stopped the gateway (pid {pid})\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// Gone (a zombie counts as gone). Where zombies cannot be told apart
/// (no `/proc`): no longer serving and no longer named by gateway.json. On
/// Linux that fallback would report a daemon that has just removed its file
/// but not exited yet as stopped.
async fn stopped(config: &BridgeConfig, client: &GatewayClient) -> bool {
    let pid = client.file().pid;
    if !process::is_alive(pid) {
        return true;
    }
    if cfg!(target_os = "linux") {
        return false;
    }
    let still_published = GatewayFile::read(&config.home).is_some_and(|file| file.pid == pid);
    !still_published && client.identity().await.is_err()
}

async fn status(config: &BridgeConfig, as_json: bool) -> Result<ExitCode, Failure> {
    let Some(client) = find_running(&config.home).await else {
        if as_json {
            print_json(&json!({"running": false}), false)?;
        } else {
            write_stdout("not running\n")?;
        }
        return Ok(ExitCode::from(exit::FAILED));
    };
    let mut status = client
        .call("gateway.status", json!({}))
        .await
        .map_err(|err| call_failure("gateway.status", &err))?;
    if as_json {
        status["running"] = json!(true);
        print_json(&status, false)?;
        return Ok(ExitCode::SUCCESS);
    }
    let sessions = status["sessions"].as_array().cloned().unwrap_or_default();
    let providers = status["providers"].as_array().cloned().unwrap_or_default();
    let mut out = format!(
        "running: pid {}, {}, version {}, started {}\n",
        client.file().pid,
        client.address(),
        status["version"].as_str().unwrap_or("?"),
        status["startedAt"].as_str().unwrap_or("?"),
    );
    out.push_str(&format!("sessions: {}\n", sessions.len()));
    for session in &sessions {
        out.push_str(&format!(
            "  {} {} ({}){}\n",
            session["id"].as_str().unwrap_or("?"),
            session["label"].as_str().unwrap_or(""),
            session["cwd"].as_str().unwrap_or(""),
            if session["default"] == true {
                " [default]"
            } else {
                ""
            },
        ));
    }
    out.push_str(&format!("providers: {}\n", providers.len()));
    for provider in &providers {
        out.push_str(&format!(
            "  {} ({}) tools: {}\n",
            provider["name"].as_str().unwrap_or("?"),
            provider["trust"].as_str().unwrap_or("?"),
            provider["tools"].as_array().map_or(0, Vec::len),
        ));
    }
    out.push_str(&format!(
        "pending pairings: {}\n",
        status["pendingPairings"].as_u64().unwrap_or(0)
    ));
    out.push_str(&upgrade_notice(config, &client).await);
    write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}
