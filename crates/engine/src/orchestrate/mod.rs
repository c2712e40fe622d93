//! The orchestrator: a task split into a [`TaskPlan`] (by the model,
//! [`Planner`], or a plan file), run as a DAG in waves, sub-tasks in
//! parallel on a [`SessionPool`], each on its runner (the native loop, the
//! Copilot runner, a nested agent CLI), writers of one wave in separate
//! worktrees merged back in plan order ([`sandbox`]), every step an event
//! of the orchestration's log so `orchestrate --resume ID` runs only what
//! had not completed. docs/orchestrator.md is the user's guide.
//!
//! # Events (the orchestration's log, `sessions/ID.jsonl`)
//!
//! | type | data |
//! |---|---|
//! | `plan` | `{task, plan, source, waves}` |
//! | `task_start` | `{taskId, wave, runner, workdir, log}` (`log`: the sub-task's own session log) |
//! | `task_complete` | `{taskId, …TaskResult}` (status completed, failed, conflict or cancelled) |
//! | `task_skipped` | `{taskId, reason, after?}` (`after`: the task whose failure skipped it) |
//! | `plan_complete` | `{status, summary, durationMs, counts}` |

mod execute;
pub mod plan;
pub mod planner;
pub mod pool;
pub mod progress;
pub mod result;
pub mod sandbox;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

pub use plan::{Complexity, PlanError, SubTask, SubTaskRunner, TaskPlan, parse_plan_file};
pub use planner::{Planned, Planner};
pub use pool::SessionPool;
pub use result::{
    Conflict, OrchestratedResult, PlanSource, PlanStatus, TaskResult, TaskStatus, Workdir,
};

use crate::log::{EventLog, LogError, new_session_id, replay, session_file};
use crate::registry::SessionRegistry;
use crate::runner::Runner;

/// Event types of an orchestration's log.
pub mod events {
    pub const PLAN: &str = "plan";
    pub const TASK_START: &str = "task_start";
    pub const TASK_COMPLETE: &str = "task_complete";
    pub const TASK_SKIPPED: &str = "task_skipped";
    pub const PLAN_COMPLETE: &str = "plan_complete";
}

/// Sub-tasks at once when nobody says.
pub const DEFAULT_MAX_CONCURRENCY: usize = 3;
/// The most sub-tasks at once anyone may ask for.
pub const MAX_CONCURRENCY: usize = 64;

/// How orchestrations run.
#[derive(Debug, Clone)]
pub struct OrchestratorSettings {
    pub max_concurrency: usize,
    /// Turns each sub-task's run may take.
    pub max_turns: u32,
    /// The model sub-tasks ask (`None`: the backend's default).
    pub model: Option<String>,
    /// The native runner's chat backend, named in its sub-tasks' logs.
    pub backend: Option<String>,
    /// The runner of sub-tasks that do not name one.
    pub default_runner: SubTaskRunner,
    /// Where orchestration logs go (the sessions directory).
    pub sessions_dir: PathBuf,
    /// Where worktrees and copies of writing sub-tasks are made.
    pub scratch_dir: PathBuf,
    /// Deadline of one sub-task.
    pub task_timeout: Option<Duration>,
}

/// Why an orchestration could not start.
#[derive(Debug, thiserror::Error)]
pub enum OrchestrateError {
    #[error(
        "the task is {bytes} bytes; at most {MAX_TASK_BYTES} (256 KiB) are allowed: put long material in a file of the workspace and name it in the task"
    )]
    TaskTooLong { bytes: usize },
    #[error("invalid plan: {0}")]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("cannot resume {id}: {reason}")]
    Resume { id: String, reason: String },
}

/// Longest task text, in bytes: the planner's prompt and every sub-task's
/// prompt repeat it, and its log and watchers keep it.
pub const MAX_TASK_BYTES: usize = 256 * 1024;

/// Refuses a task text over [`MAX_TASK_BYTES`]; every door calls it before
/// planning (a planner would send it to a model first).
pub fn check_task(task: &str) -> Result<(), OrchestrateError> {
    if task.len() > MAX_TASK_BYTES {
        return Err(OrchestrateError::TaskTooLong { bytes: task.len() });
    }
    Ok(())
}

/// Runs plans. One per host (the CLI, the daemon); cheap to share.
pub struct Orchestrator {
    registry: SessionRegistry,
    runners: BTreeMap<SubTaskRunner, Arc<dyn Runner>>,
    /// Why a runner is missing, for the sub-tasks that ask for it.
    missing: BTreeMap<SubTaskRunner, String>,
    settings: OrchestratorSettings,
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator")
            .field("runners", &self.runners.keys().collect::<Vec<_>>())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// An orchestration whose log is open, ready to [`Orchestrator::execute`].
#[derive(Debug)]
pub struct Opened {
    pub id: String,
    pub log: EventLog,
    pub task: String,
    pub cwd: PathBuf,
    pub plan: TaskPlan,
    pub source: PlanSource,
    waves: Vec<Vec<usize>>,
    /// Results kept from before (a resumed log): completed sub-tasks.
    reused: Vec<Option<TaskResult>>,
}

impl Opened {
    /// Task ids per wave.
    pub fn wave_ids(&self) -> Vec<Vec<String>> {
        self.waves
            .iter()
            .map(|wave| {
                wave.iter()
                    .map(|&i| self.plan.tasks[i].id.clone())
                    .collect()
            })
            .collect()
    }

    /// Sub-tasks that will run (not completed before).
    pub fn to_run(&self) -> usize {
        self.reused.iter().filter(|r| r.is_none()).count()
    }
}

impl Orchestrator {
    pub fn new(registry: SessionRegistry, settings: OrchestratorSettings) -> Self {
        Self {
            registry,
            runners: BTreeMap::new(),
            missing: BTreeMap::new(),
            settings,
        }
    }

    /// Sub-tasks for `kind` run on `runner`.
    pub fn with_runner(mut self, kind: SubTaskRunner, runner: Arc<dyn Runner>) -> Self {
        self.missing.remove(&kind);
        self.runners.insert(kind, runner);
        self
    }

    /// Sub-tasks for `kind` fail, saying `why`.
    pub fn without_runner(mut self, kind: SubTaskRunner, why: impl Into<String>) -> Self {
        self.runners.remove(&kind);
        self.missing.insert(kind, why.into());
        self
    }

    /// The runner of sub-tasks that do not name one.
    pub fn set_default_runner(&mut self, kind: SubTaskRunner) {
        self.settings.default_runner = kind;
    }

    pub fn settings(&self) -> &OrchestratorSettings {
        &self.settings
    }

    /// Starts the log of a new orchestration of `task` in `cwd` with
    /// `plan`, which must be valid.
    pub async fn open(
        &self,
        task: &str,
        cwd: &Path,
        plan: TaskPlan,
        source: PlanSource,
    ) -> Result<Opened, OrchestrateError> {
        check_task(task)?;
        let waves = plan.waves()?;
        let id = new_session_id();
        let meta = json!({
            "label": "orchestrate",
            "kind": "orchestration",
            "cwd": cwd,
            "task": task,
            "maxConcurrency": self.settings.max_concurrency,
        });
        let log = EventLog::create(&self.settings.sessions_dir, &id, meta).await?;
        let opened = Opened {
            reused: vec![None; plan.tasks.len()],
            id,
            log,
            task: task.to_owned(),
            cwd: cwd.to_path_buf(),
            plan,
            source,
            waves,
        };
        opened.log.append(
            events::PLAN,
            json!({"task": opened.task, "plan": opened.plan, "source": opened.source,
                   "waves": opened.wave_ids()}),
            None,
        );
        Ok(opened)
    }

    /// Reopens orchestration `id`: its plan, and the sub-tasks that
    /// completed (they do not run again).
    pub async fn resume(&self, id: &str) -> Result<Opened, OrchestrateError> {
        let dir = self.settings.sessions_dir.clone();
        let path = session_file(&dir, id);
        let wanted = id.to_owned();
        let found = tokio::task::spawn_blocking(move || read_orchestration(&path, &wanted))
            .await
            .map_err(|err| OrchestrateError::Resume {
                id: id.to_owned(),
                reason: err.to_string(),
            })??;
        let waves = found.plan.waves()?;
        let (log, _) = EventLog::resume(&dir, id).await?;
        let reused = found
            .plan
            .tasks
            .iter()
            .map(|task| {
                found.completed.get(&task.id).cloned().map(|mut result| {
                    result.reused = true;
                    result
                })
            })
            .collect();
        Ok(Opened {
            id: id.to_owned(),
            log,
            task: found.task,
            cwd: found.cwd,
            plan: found.plan,
            source: found.source,
            waves,
            reused,
        })
    }
}

/// What an orchestration's log says.
struct Found {
    task: String,
    cwd: PathBuf,
    plan: TaskPlan,
    source: PlanSource,
    completed: BTreeMap<String, TaskResult>,
}

fn read_orchestration(path: &Path, id: &str) -> Result<Found, OrchestrateError> {
    let failed = |reason: String| OrchestrateError::Resume {
        id: id.to_owned(),
        reason,
    };
    crate::log::validate_session_id(id)?;
    let mut meta = Value::Null;
    let mut planned: Option<Value> = None;
    let mut completed = BTreeMap::new();
    for event in replay(path)? {
        let Ok(event) = event else { continue };
        match event.kind.as_str() {
            crate::log::types::SESSION_START => meta = event.data,
            events::PLAN => {
                planned = Some(event.data);
                completed.clear();
            }
            events::TASK_COMPLETE => {
                if let Ok(result) = serde_json::from_value::<TaskResult>(event.data)
                    && result.status == TaskStatus::Completed
                {
                    completed.insert(result.id.clone(), result);
                }
            }
            _ => {}
        }
    }
    if meta.get("kind").and_then(Value::as_str) != Some("orchestration") {
        return Err(failed(
            "it is not an orchestration (see `copilot-bridge sessions list`)".to_owned(),
        ));
    }
    let planned = planned.ok_or_else(|| failed("its log has no plan".to_owned()))?;
    let plan: TaskPlan = serde_json::from_value(planned["plan"].clone())
        .map_err(|err| failed(format!("its plan cannot be read: {err}")))?;
    let source = serde_json::from_value(planned["source"].clone()).unwrap_or(PlanSource::Given);
    let cwd = meta
        .get("cwd")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .ok_or_else(|| failed("its log does not say where it ran".to_owned()))?;
    Ok(Found {
        task: planned["task"].as_str().unwrap_or_default().to_owned(),
        cwd,
        plan,
        source,
        completed,
    })
}

#[cfg(test)]
mod tests;
