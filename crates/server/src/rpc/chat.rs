//! Talking to the hub's own agent in a daemon session (crate::chat):
//! `session.prompt` starts a turn, `session.abort` stops it,
//! `session.resume` brings a logged conversation back as a session. What a
//! turn does is read with `session.events` (rpc/transcripts.rs).

use std::path::PathBuf;

use bridge_engine::log;
use bridge_engine::runner::RunnerKind;
use bridge_engine::task::Remembered;
use bridge_engine::{Door, RegistryError, SessionSpec};
use bridge_protocol::jsonrpc::ErrorObject;
use serde_json::{Value, json};

use super::params::invalid;
use super::{MethodTable, Params, RpcResult, SERVER_ERROR, SESSION_NOT_FOUND};
use crate::app::ServerContext;
use crate::chat::TurnError;

/// The longest prompt taken.
const MAX_PROMPT_CHARS: usize = 256 * 1024;
/// Events of a resumed conversation answered with it.
const RESUMED_HISTORY: usize = 500;
/// A turn is running in the session.
pub const SESSION_BUSY: i64 = -32015;

pub fn register(table: &mut MethodTable) {
    table.insert("session.prompt", prompt);
    table.insert("session.abort", abort);
    table.insert("session.resume", resume);
}

async fn prompt(ctx: ServerContext, params: Params) -> RpcResult {
    params.only(&["session", "prompt", "model", "runner"])?;
    let id = params.required_str("session")?;
    let session = ctx
        .session(id)
        .ok_or_else(|| super::methods::no_session(&ctx, id))?;
    let text = params.required_str("prompt")?;
    if text.trim().is_empty() {
        return Err(invalid("prompt", "is empty"));
    }
    if text.chars().count() > MAX_PROMPT_CHARS {
        return Err(invalid(
            "prompt",
            &format!("is longer than {MAX_PROMPT_CHARS} characters"),
        ));
    }
    let model = params.optional_str("model")?.map(str::to_owned);
    let runner = match params.optional_str("runner")? {
        None => None,
        Some("native") => Some(RunnerKind::Native),
        Some("copilot") => Some(RunnerKind::Copilot),
        Some(_) => return Err(invalid("runner", "must be native or copilot")),
    };
    let session_id = session.id().to_owned();
    let started = ctx
        .chat
        .prompt(&ctx, session, text.to_owned(), model, runner)
        .await
        .map_err(|err| match err {
            TurnError::Busy(_) => ErrorObject::new(SESSION_BUSY, err.to_string())
                .with_data(json!({"session": session_id})),
            other => ErrorObject::new(SERVER_ERROR, other.to_string()),
        })?;
    Ok(json!({
        "session": session_id,
        "started": true,
        "resumed": started.resumed,
        "model": started.model,
        "backend": started.backend,
        "runner": started.runner,
        "log": started.log,
    }))
}

async fn abort(ctx: ServerContext, params: Params) -> RpcResult {
    params.only(&["session"])?;
    let id = params.required_str("session")?;
    let session = ctx
        .session(id)
        .ok_or_else(|| super::methods::no_session(&ctx, id))?;
    Ok(json!({"session": session.id(), "aborted": ctx.chat.abort(session.id())}))
}

/// `session.resume {id, label?}`: the conversation logged as `id` as a
/// session again (same id, the workspace it ran in), its next prompt
/// continuing it; answered with the session and the conversation so far.
async fn resume(ctx: ServerContext, params: Params) -> RpcResult {
    params.only(&["id", "label"])?;
    let id = params.required_str("id")?.to_owned();
    log::validate_session_id(&id).map_err(|err| invalid("id", &err.to_string()))?;
    let dir = crate::chat::logs_dir(&ctx);
    let file = log::session_file(&dir, &id);
    if tokio::fs::symlink_metadata(&file).await.is_err() {
        return Err(ErrorObject::new(
            SESSION_NOT_FOUND,
            format!("no conversation {id} is logged (see session.transcripts)"),
        )
        .with_data(json!({"session": id})));
    }
    let session = match ctx.registry().get(&id) {
        Some(session) => session,
        None => {
            // What the log remembers: where it ran and with which model.
            // What the log remembers, read without opening it for writing
            // (the next prompt opens it for its turn).
            let (logs, wanted) = (dir.clone(), id.clone());
            let remembered = tokio::task::spawn_blocking(move || Remembered::read(&logs, &wanted))
                .await
                .map_err(|err| {
                    ErrorObject::new(SERVER_ERROR, format!("cannot resume {id}: {err}"))
                })?
                .map_err(|err| {
                    ErrorObject::new(SERVER_ERROR, format!("cannot resume {id}: {err}"))
                })?;
            let cwd = remembered
                .cwd
                .ok_or_else(|| invalid("id", "its log names no workspace"))?;
            let cwd = super::params::named_workspace(&ctx, "id", &cwd).await?;
            let label = match params.optional_str("label")? {
                Some(label) => label.to_owned(),
                None => format!("chat · {}", super::params::dir_label(&cwd)),
            };
            let spec = SessionSpec {
                id: Some(id.clone()),
                label,
                cwd,
                foreground: true,
                door: Door::Rpc,
            };
            let registry = ctx.registry().clone();
            let created = tokio::task::spawn_blocking(move || registry.create(spec))
                .await
                .map_err(|err| {
                    ErrorObject::new(SERVER_ERROR, format!("session.resume failed: {err}"))
                })?;
            let session = match created {
                Ok(session) => session,
                Err(RegistryError::Duplicate(_)) => ctx.registry().get(&id).ok_or_else(|| {
                    ErrorObject::new(SERVER_ERROR, format!("session {id} vanished"))
                })?,
                Err(err) => return Err(ErrorObject::new(SERVER_ERROR, err.to_string())),
            };
            session.set_model(remembered.model);
            if let Some(kind) = remembered.runner {
                session.set_runner_kind(kind);
            }
            session
        }
    };
    let history = history(dir, &id).await;
    Ok(json!({
        "session": super::methods::session_json(&ctx, &session),
        "model": session.model(),
        "runner": session.runner_kind(),
        "history": history,
    }))
}

/// The newest events of the logged conversation `id`, as `session.events`
/// shows a task log.
async fn history(dir: PathBuf, id: &str) -> Vec<Value> {
    let id = id.to_owned();
    tokio::task::spawn_blocking(move || {
        let Ok(replay) = log::replay(&log::session_file(&dir, &id)) else {
            return Vec::new();
        };
        let mut kept: std::collections::VecDeque<Value> = std::collections::VecDeque::new();
        for event in replay.filter_map(Result::ok) {
            if kept.len() == RESUMED_HISTORY {
                kept.pop_front();
            }
            kept.push_back(super::transcripts::shown(event));
        }
        kept.into()
    })
    .await
    .unwrap_or_default()
}
