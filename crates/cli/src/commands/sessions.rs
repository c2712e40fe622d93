//! `copilot-bridge sessions list|show|resume|rm`: the saved sessions of
//! `$COPILOT_BRIDGE_HOME/sessions/` (docs/sessions.md).
//!
//! Exit codes: 0 ok; 1 the log cannot be read or changed (in use by a
//! running session, not a regular file, I/O); 2 an invalid or unknown
//! session id. `resume` exits as `run` does.

mod transcript;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use bridge_config::BridgeConfig;
use bridge_engine::log::{self, LogError, SessionSummary, session_file, validate_session_id};
use serde_json::{Value, json};

use crate::args::{SessionsCommand, SessionsResumeArgs};
use crate::exit::{self, Failure};

use super::run::{Start, TaskOptions, execute};

pub async fn run(config: &BridgeConfig, command: SessionsCommand) -> Result<ExitCode, Failure> {
    let dir = sessions_dir(config);
    match command {
        SessionsCommand::List { json } => {
            let sessions = blocking(move || log::list(&dir)).await?;
            let live = live_sessions(config).await;
            print_list(&sessions, &live, json, &sessions_dir(config))?;
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Show { id, json } => {
            let path = existing_session(&dir, &id)?;
            let shown = tokio::task::spawn_blocking(move || transcript::show(&path, &id, json))
                .await
                .map_err(|err| Failure::internal(format!("cannot show the session: {err}")))??;
            if shown.skipped > 0 {
                eprintln!(
                    "copilot-bridge: warning: {} unreadable line(s) of the session log were skipped (listed at the end)",
                    shown.skipped
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Rm { id } => {
            existing_session(&dir, &id)?;
            let removed = id.clone();
            blocking(move || log::remove(&dir, &removed)).await?;
            super::tool::write_stdout(&format!("removed session {id}\n"))?;
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Resume(args) => resume(config, &dir, args).await,
    }
}

fn sessions_dir(config: &BridgeConfig) -> PathBuf {
    config.home.join("sessions")
}

async fn resume(
    config: &BridgeConfig,
    dir: &Path,
    args: SessionsResumeArgs,
) -> Result<ExitCode, Failure> {
    existing_session(dir, &args.id)?;
    let options = TaskOptions {
        task: args.task,
        model: args.model,
        // The session's own workspace, from its log.
        cwd: None,
        timeout: args.timeout.map(Duration::from_secs),
        // Overridden by the runner the session was started with.
        runner: bridge_engine::runner::RunnerKind::Native,
        max_turns: args.max_turns,
        verbose: args.verbose,
        json: args.json,
        steps: None,
    };
    execute(
        config,
        options,
        Start::Resume {
            session_id: args.id,
        },
    )
    .await
}

/// The log of session `id`, checked to be a valid id that has a log:
/// usage errors (exit 2) otherwise.
fn existing_session(dir: &Path, id: &str) -> Result<PathBuf, Failure> {
    validate_session_id(id).map_err(|err| Failure::usage(err.to_string()))?;
    let path = session_file(dir, id);
    match std::fs::symlink_metadata(&path) {
        Ok(_) => Ok(path),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(Failure::usage(format!(
            "no session {id} (see `copilot-bridge sessions list`)"
        ))),
        Err(err) => Err(log_failure(LogError::Io { path, source: err })),
    }
}

fn log_failure(err: LogError) -> Failure {
    match err {
        LogError::InvalidId { .. } => Failure::usage(err.to_string()),
        LogError::NotFound(id) => Failure::usage(format!(
            "no session {id} (see `copilot-bridge sessions list`)"
        )),
        LogError::Busy(id) => Failure::new(
            exit::FAILED,
            format!("session {id} is in use by a running copilot-bridge; wait for it to finish"),
        ),
        other => Failure::new(exit::FAILED, other.to_string()),
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, LogError> + Send + 'static,
) -> Result<T, Failure> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| Failure::internal(format!("session log task failed: {err}")))?
        .map_err(log_failure)
}

/// The running daemon's sessions — the agents' it registered through
/// their hooks, its own, the orchestrations it runs — which have no log of
/// their own here; empty without a daemon.
async fn live_sessions(config: &BridgeConfig) -> Vec<Value> {
    let Some(daemon) = bridge_server::find_running(&config.home).await else {
        return Vec::new();
    };
    let mut live: Vec<Value> = daemon
        .call("session.list", json!({}))
        .await
        .ok()
        .and_then(|listed| listed.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .map(|session| {
            json!({"id": session["id"], "status": "live", "kind": "daemon session",
                   "label": session["label"], "cwd": session["cwd"]})
        })
        .collect();
    live.extend(
        daemon
            .call("orchestrate.list", json!({}))
            .await
            .ok()
            .and_then(|listed| listed.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .map(|plan| {
                json!({"id": plan["id"], "status": if plan["done"] == true { "done" } else { "live" },
                       "kind": "orchestration",
                       "label": format!("{} sub-task(s){}", plan["tasks"],
                           plan["status"].as_str().map(|s| format!(", {s}")).unwrap_or_default())})
            }),
    );
    live
}

fn print_list(
    sessions: &[SessionSummary],
    live: &[Value],
    as_json: bool,
    dir: &Path,
) -> Result<(), Failure> {
    if as_json {
        let mut value = json!(sessions);
        if let Some(logged) = value.as_array_mut() {
            logged.extend(live.iter().cloned());
        }
        bridge_policy::redact_value(&mut value);
        return super::tool::print_json(&value, false);
    }
    if !live.is_empty() {
        let mut text = String::from("IN THE RUNNING DAEMON\n");
        for session in live {
            text.push_str(&format!(
                "  {:<36}  {:<5}  {:<15}  {}\n",
                session["id"].as_str().unwrap_or("-"),
                session["status"].as_str().unwrap_or("-"),
                session["kind"].as_str().unwrap_or("-"),
                bridge_policy::redact(session["label"].as_str().unwrap_or("-")),
            ));
        }
        text.push('\n');
        super::tool::write_stdout(&text)?;
    }
    if sessions.is_empty() {
        return super::tool::write_stdout(&format!("No sessions in {}.\n", dir.display()));
    }
    let id_width = sessions
        .iter()
        .map(|s| s.id.len())
        .max()
        .unwrap_or(2)
        .max(2);
    let mut text = format!(
        "{:<id_width$}  {:<11}  {:>7}  {:<19}  FIRST PROMPT\n",
        "ID", "STATUS", "EVENTS", "UPDATED"
    );
    for session in sessions {
        let status = serde_json::to_value(session.status)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default();
        let updated = session
            .updated
            .as_deref()
            .and_then(|stamp| stamp.get(..19))
            .map(|stamp| stamp.replacen('T', " ", 1))
            .unwrap_or_else(|| "-".to_owned());
        let prompt = session.first_prompt.as_deref().unwrap_or("-");
        text.push_str(&format!(
            "{:<id_width$}  {:<11}  {:>7}  {:<19}  {}\n",
            session.id,
            status,
            session.events,
            updated,
            bridge_policy::redact(prompt)
        ));
    }
    super::tool::write_stdout(&text)
}
