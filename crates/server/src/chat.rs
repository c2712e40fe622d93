//! Conversations with the hub's own agent in a daemon session
//! (`session.prompt`, `session.abort`, `session.resume`; `copilot-bridge
//! chat`, the dashboard): each prompt is one turn of a task run through
//! [`bridge_engine::task`], the session's log `sessions/ID.jsonl` (ID: the
//! session's id) created by the first turn and continued by every next
//! one, so the model sees the whole conversation and `session.resume`
//! brings it back after a restart. What a turn does reaches the session's
//! transcript as it happens (crate::transcripts).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bridge_engine::Session;
use bridge_engine::log::{self, LogError};
use bridge_engine::runner::native::{DEFAULT_MAX_TURNS, NativeRunner};
use bridge_engine::runner::{RunRequest, Runner, RunnerKind};
use bridge_engine::task::{TaskLog, TaskMeta, TaskRun};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::app::ServerContext;

/// The turns running in the daemon's sessions.
#[derive(Debug, Default)]
pub struct ChatTurns {
    running: Mutex<HashMap<String, CancellationToken>>,
}

/// Why a prompt was not started.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error("session {0} is already answering a prompt (session.abort stops it)")]
    Busy(String),
    #[error("{0}")]
    NoBackend(String),
    #[error("cannot open the session's log: {0}")]
    Log(#[from] LogError),
}

/// A turn started: where its log is and what it asks.
#[derive(Debug, Clone)]
pub struct Started {
    pub log: PathBuf,
    pub model: Option<String>,
    pub backend: String,
    pub runner: RunnerKind,
    pub resumed: bool,
}

impl ChatTurns {
    /// Starts a turn of `session` answering `prompt` (with `model`, else
    /// the session's, else the backend's default; by `runner`, which the
    /// session keeps for its next turns, else the session's) in the
    /// background.
    pub async fn prompt(
        &self,
        ctx: &ServerContext,
        session: Arc<Session>,
        prompt: String,
        model: Option<String>,
        runner: Option<RunnerKind>,
    ) -> Result<Started, TurnError> {
        if let Some(kind) = runner {
            session.set_runner_kind(kind);
        }
        let kind = session.runner_kind();
        let id = session.id().to_owned();
        let cancel = ctx.shutdown.child_token();
        {
            let mut running = bridge_util::sync::lock(&self.running);
            if running.contains_key(&id) {
                return Err(TurnError::Busy(id));
            }
            running.insert(id.clone(), cancel.clone());
        }
        let started = self.open(ctx, &session, model, kind).await;
        let (log, started, runner) = match started {
            Ok(opened) => opened,
            Err(err) => {
                bridge_util::sync::lock(&self.running).remove(&id);
                return Err(err);
            }
        };
        let request = RunRequest {
            task: prompt,
            model: started.model.clone(),
            max_turns: DEFAULT_MAX_TURNS,
            timeout: None,
        };
        let transcripts = ctx.transcripts.clone();
        let turns = ctx.chat.clone();
        tokio::spawn(async move {
            let report = log
                .run(TaskRun {
                    runner,
                    session,
                    request,
                    cancel,
                    steps: None,
                })
                .await;
            bridge_util::sync::lock(&turns.running).remove(&id);
            if let Some(transcript) = transcripts.get(&id) {
                transcript.push(
                    "turn.end",
                    json!({
                        "status": report.status,
                        "error": report.error,
                        "turns": report.turns,
                        "promptTokens": report.usage.prompt_tokens,
                        "completionTokens": report.usage.completion_tokens,
                        "durationMs": report.duration_ms,
                    }),
                );
                transcript.note_usage(
                    None,
                    report.usage.prompt_tokens,
                    report.usage.completion_tokens,
                );
            }
        });
        Ok(started)
    }

    /// Stops the turn running in `session`; whether one was.
    pub fn abort(&self, session: &str) -> bool {
        match bridge_util::sync::lock(&self.running).get(session) {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// The session's log, created on its first turn, continued after.
    async fn open(
        &self,
        ctx: &ServerContext,
        session: &Session,
        model: Option<String>,
        kind: RunnerKind,
    ) -> Result<(TaskLog, Started, Arc<dyn Runner>), TurnError> {
        let dir = logs_dir(ctx);
        let id = session.id();
        let exists = tokio::fs::symlink_metadata(log::session_file(&dir, id))
            .await
            .is_ok();
        let asked = model.or_else(|| session.model());
        let (runner, backend, model): (Arc<dyn Runner>, String, Option<String>) = match kind {
            RunnerKind::Copilot => {
                let built = bridge_compose::runner(ctx.config.started(), kind)
                    .await
                    .map_err(|err| TurnError::NoBackend(err.to_string()))?;
                (built.runner, built.backend, asked)
            }
            _ => {
                let (entry, routed) = backend_of(ctx, asked.as_deref())
                    .await
                    .ok_or_else(|| TurnError::NoBackend(no_backend()))?;
                let runner = Arc::new(NativeRunner::new(
                    entry.backend.clone(),
                    (*ctx.native).clone(),
                ));
                (
                    runner,
                    entry.name.clone(),
                    routed.or_else(|| entry.default_model.clone()),
                )
            }
        };
        let (log, resumed) = if exists {
            (TaskLog::resume(&dir, id).await?, true)
        } else {
            let meta = TaskMeta {
                cwd: session.cwd().to_path_buf(),
                model: model.clone(),
                runner: kind,
                backend: Some(backend.clone()),
                label: format!("chat · {}", session.info().label),
                orchestration: None,
            };
            (TaskLog::create(&dir, id, &meta).await?, false)
        };
        Ok((
            log,
            Started {
                log: log::session_file(&dir, id),
                model,
                backend,
                runner: kind,
                resumed,
            },
            runner,
        ))
    }
}

/// The backend that serves `model` (a `[models]` route or
/// `backend/model`) and the model to ask it for; else the default backend.
async fn backend_of(
    ctx: &ServerContext,
    model: Option<&str>,
) -> Option<(Arc<bridge_compose::BackendEntry>, Option<String>)> {
    if model.is_some()
        && let Ok(route) = ctx.backends.route_estimating(model, false, || 0).await
    {
        return Some((route.entry, route.model));
    }
    let entry = ctx.backends.default_entry().cloned()?;
    Some((entry, model.map(str::to_owned)))
}

fn no_backend() -> String {
    "the daemon has no chat backend configured (see `copilot-bridge validate`)".to_owned()
}

/// Where the daemon keeps task logs.
pub fn logs_dir(ctx: &ServerContext) -> PathBuf {
    ctx.facts.home.join("sessions")
}
