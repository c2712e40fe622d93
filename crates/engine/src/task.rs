//! Running one task with its log: the one way every door runs an agent's
//! task — `copilot-bridge run` and `sessions resume`, `mcp code`'s and the
//! daemon's `copilot_code*`, the orchestrator's sub-tasks.
//!
//! ```text
//! TaskLog::create(dir, id, &meta)  |  TaskLog::resume(dir, id)  (→ remembered())
//!   → events().subscribe()         (a live view, optional)
//!   → run(TaskRun { runner, session, request, cancel, steps })
//!       steps forwarded, the runner runs (or resumes), the log closed,
//!       its subscribers told the end, the steps forwarded to the last
//! ```
//!
//! What a task's log remembers about it is its first event's data
//! ([`TaskMeta`]: where it ran, with which model, runner and backend), so a
//! resumed task runs where and how it ran before unless told otherwise.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::log::steps::{self, StepSink};
use crate::log::{EventLog, LogError, Replayed};
use crate::runner::{RunContext, RunReport, RunRequest, Runner, RunnerKind};
use crate::session::Session;

/// What a task's log says about it first (`session.start`'s data).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskMeta {
    /// The workspace it runs in.
    pub cwd: PathBuf,
    /// The model asked for (`None`: the backend's default).
    pub model: Option<String>,
    pub runner: RunnerKind,
    /// The chat backend's name (`openai`, `copilot-cli`, …), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Who started it (`run`, `mcp code task`, `orchestrate ID · TASK`).
    pub label: String,
    /// The orchestration a sub-task belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orchestration: Option<String>,
}

/// What a resumed task's log remembers of how it ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Remembered {
    pub cwd: Option<PathBuf>,
    pub model: Option<String>,
    /// `None` when the log names no runner `run` can choose.
    pub runner: Option<RunnerKind>,
}

impl Remembered {
    /// How the task logged as `dir/ID.jsonl` ran, read from its first
    /// event without opening the log for writing (blocking I/O).
    pub fn read(dir: &Path, id: &str) -> Result<Self, LogError> {
        crate::log::validate_session_id(id)?;
        let first = crate::log::replay(&crate::log::session_file(dir, id))?
            .next()
            .ok_or_else(|| LogError::NotFound(id.to_owned()))??;
        Ok(Self::of(&first.data))
    }

    fn of(meta: &Value) -> Self {
        let text = |key: &str| meta.get(key).and_then(Value::as_str);
        Self {
            cwd: text("cwd").map(PathBuf::from),
            model: text("model").map(str::to_owned),
            runner: text("runner").and_then(|kind| kind.parse().ok()),
        }
    }
}

/// A task whose log is open: a new one, or one continued from what its log
/// replayed.
#[derive(Debug)]
pub struct TaskLog {
    log: EventLog,
    history: Option<Replayed>,
}

/// Everything a task needs to run besides its log.
pub struct TaskRun {
    pub runner: Arc<dyn Runner>,
    pub session: Arc<Session>,
    pub request: RunRequest,
    /// Stops the run (the caller hung up, Ctrl-C, the daemon stopping).
    pub cancel: CancellationToken,
    /// Each step, numbered, as it happens (`copilot_code_verbose`).
    pub steps: Option<StepSink>,
}

impl TaskLog {
    /// A new log `dir/ID.jsonl` whose first event holds `meta`.
    pub async fn create(dir: &Path, id: &str, meta: &TaskMeta) -> Result<Self, LogError> {
        let meta = serde_json::to_value(meta).unwrap_or(Value::Null);
        Ok(Self {
            log: EventLog::create(dir, id, meta).await?,
            history: None,
        })
    }

    /// The log `dir/ID.jsonl` continued: its conversation replayed for the
    /// runner, its next events appended.
    pub async fn resume(dir: &Path, id: &str) -> Result<Self, LogError> {
        let (log, history) = EventLog::resume(dir, id).await?;
        Ok(Self {
            log,
            history: Some(history),
        })
    }

    /// How the task ran before (a resumed log), else nothing.
    pub fn remembered(&self) -> Remembered {
        self.history
            .as_ref()
            .map(|history| Remembered::of(&history.meta))
            .unwrap_or_default()
    }

    /// The log, for a live view to subscribe to before the task runs.
    pub fn events(&self) -> &EventLog {
        &self.log
    }

    /// Runs (or resumes) the task to its report, every step in the log;
    /// returns once the log is closed and every step forwarded.
    pub async fn run(self, task: TaskRun) -> RunReport {
        let Self { log, history } = self;
        let forward = task.steps.map(|sink| steps::forward(&log, sink));
        let context = RunContext::new(task.cancel).with_log(log.clone());
        // The run as an `invoke_agent` span its model and tool calls join.
        let traced = bridge_telemetry::active().map(|telemetry| {
            telemetry.start_agent(task.runner.kind().as_str(), task.session.id(), None)
        });
        let parent = traced.as_ref().map(|run| run.context().clone());
        let run = async {
            match history {
                Some(history) => {
                    task.runner
                        .resume(task.session, task.request, history, context)
                        .await
                }
                None => task.runner.run(task.session, task.request, context).await,
            }
        };
        let report = bridge_telemetry::propagation::traced(parent, run).await;
        if let Some(run) = traced {
            let status = serde_json::to_value(report.status)
                .ok()
                .and_then(|status| status.as_str().map(str::to_owned))
                .unwrap_or_default();
            run.end(&status, report.error.as_deref());
        }
        if let Err(err) = log.close().await {
            tracing::warn!(error = %err, "a task's log could not be closed cleanly");
        }
        // Its subscribers hear the end once the last handle is gone.
        drop(log);
        if let Some(forward) = forward {
            let _ = forward.await;
        }
        report
    }
}
