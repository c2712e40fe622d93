//! The orchestrator of a host (the CLI, the daemon) and how it plans.

use std::sync::Arc;

use bridge_config::{BackendKind, BridgeConfig};
use bridge_engine::SessionRegistry;
use bridge_engine::orchestrate::{Orchestrator, OrchestratorSettings, Planner, SubTaskRunner};
use bridge_engine::runner::Runner;
use bridge_llm::{ChatBackend, LlmError, select_backend};

use crate::backends::BackendEntry;
use crate::settings::{backend_settings, copilot_cli_config, native_settings};

/// The chat backend an orchestration plans with and its native sub-tasks
/// run on.
#[derive(Clone)]
pub struct PlanningBackend {
    /// Its name (the daemon's backend name, or the auto-selected kind).
    pub name: String,
    pub backend: Arc<dyn ChatBackend>,
    pub kind: BackendKind,
    pub model: Option<String>,
}

impl PlanningBackend {
    /// The backend exactly as `validate` and `run` select it, asking
    /// `model` (else the backend's default).
    pub async fn select(config: &BridgeConfig, model: Option<String>) -> Result<Self, LlmError> {
        let selected = select_backend(backend_settings(config)).await?;
        Ok(Self {
            name: selected.kind.as_str().to_owned(),
            model: model.or(selected.model),
            backend: selected.backend,
            kind: selected.kind,
        })
    }

    /// One of the daemon's backends, asking its default model.
    pub fn of_entry(entry: &BackendEntry) -> Self {
        Self {
            name: entry.name.clone(),
            backend: entry.backend.clone(),
            kind: entry.kind,
            model: entry.default_model.clone(),
        }
    }
}

/// The orchestrator with the runners this configuration has: the native
/// loop over `backend`, the Copilot CLI runner, and the nested agent CLIs
/// `nested` brings (the CLI stages their hooks; see
/// `bridge_engine::runner::nested`). Logs go to `sessions/`, worktrees and
/// copies under `orchestrate/` of the state directory.
pub fn orchestrator(
    config: &BridgeConfig,
    registry: SessionRegistry,
    backend: Option<&PlanningBackend>,
    max_concurrency: usize,
    nested: Vec<(SubTaskRunner, Arc<dyn Runner>)>,
) -> Orchestrator {
    let settings = OrchestratorSettings {
        max_concurrency,
        max_turns: bridge_engine::runner::native::DEFAULT_MAX_TURNS,
        model: backend.and_then(|b| b.model.clone()),
        backend: backend.map(|b| b.name.clone()),
        default_runner: SubTaskRunner::Native,
        sessions_dir: config.home.join("sessions"),
        scratch_dir: config.home.join("orchestrate"),
        task_timeout: None,
    };
    let mut orchestrator = Orchestrator::new(registry, settings);
    orchestrator = match backend {
        Some(planning) => orchestrator.with_runner(
            SubTaskRunner::Native,
            Arc::new(bridge_engine::runner::native::NativeRunner::new(
                planning.backend.clone(),
                native_settings(config),
            )),
        ),
        None => orchestrator.without_runner(
            SubTaskRunner::Native,
            "no chat backend is configured for the native runner (see `copilot-bridge validate`)",
        ),
    };
    orchestrator = match copilot_cli_config(config) {
        Ok(cli) => orchestrator.with_runner(
            SubTaskRunner::Copilot,
            Arc::new(bridge_engine::runner::copilot::CopilotRunner::new(cli)),
        ),
        Err(err) => orchestrator.without_runner(
            SubTaskRunner::Copilot,
            format!("the Copilot runner cannot be configured: {err}"),
        ),
    };
    for kind in [SubTaskRunner::Claude, SubTaskRunner::CopilotCli] {
        orchestrator = orchestrator.without_runner(
            kind,
            format!("the {kind} runner (a nested agent CLI) runs from `copilot-bridge orchestrate` and `copilot-bridge mcp code`"),
        );
    }
    for (kind, runner) in nested {
        orchestrator = orchestrator.with_runner(kind, runner);
    }
    orchestrator
}

/// How plans are asked for: structured output (`response_format`) on the
/// backends of OpenAI's wire.
pub fn planner(backend: &PlanningBackend) -> Planner {
    Planner {
        backend: backend.backend.clone(),
        model: backend.model.clone(),
        structured_output: matches!(
            backend.kind,
            BackendKind::OpenAi | BackendKind::Azure | BackendKind::Copilot | BackendKind::Ollama
        ),
    }
}
