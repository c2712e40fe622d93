//! Runners: what does the work of a session's turn. The native runner is
//! our agentic loop over a chat backend; the Copilot runner delegates to the
//! GitHub Copilot CLI agent over the Copilot SDK protocol.

pub mod agent_cli;
pub mod copilot;
pub mod native;
pub mod nested;
mod report;
pub mod served_tools;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::log::{EventLog, Replayed};
use crate::session::Session;

/// One task for a runner.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub task: String,
    /// `None`: the backend's default.
    pub model: Option<String>,
    /// Model turns before the run stops with [`RunStatus::MaxTurns`].
    pub max_turns: u32,
    /// Whole-run deadline.
    pub timeout: Option<Duration>,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Completed,
    MaxTurns,
    TimedOut,
    Cancelled,
    Failed,
}

/// One tool call as the report lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRecord {
    pub name: String,
    pub arguments: Value,
    pub ok: bool,
    /// The result or error, summarized.
    pub summary: String,
    pub duration_ms: u64,
}

/// Token usage summed over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub requests: u64,
}

/// What a finished run reports (`copilot-bridge run` prints it as
/// markdown).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    pub session_id: String,
    pub status: RunStatus,
    pub final_text: String,
    pub tool_calls: Vec<ToolCallRecord>,
    pub turns: u32,
    pub usage: UsageTotals,
    pub duration_ms: u64,
    /// Why the run failed or stopped early.
    pub error: Option<String>,
}

impl RunReport {
    /// A run that ended before it started: nothing was asked, nothing ran.
    pub fn failed_early(session_id: &str, error: impl Into<String>) -> Self {
        Self {
            session_id: session_id.to_owned(),
            status: RunStatus::Failed,
            final_text: String::new(),
            tool_calls: Vec::new(),
            turns: 0,
            usage: UsageTotals::default(),
            duration_ms: 0,
            error: Some(error.into()),
        }
    }
}

/// Which runner does a session's work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunnerKind {
    /// Our agentic loop over a chat backend.
    #[default]
    Native,
    /// The GitHub Copilot CLI agent.
    Copilot,
    /// A coding agent's CLI launched per task (`agent_cli`: the
    /// orchestrator's `claude` and `copilot-cli` sub-tasks); not a choice
    /// of `run --runner`.
    Nested,
}

impl RunnerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Copilot => "copilot",
            Self::Nested => "nested",
        }
    }
}

impl std::fmt::Display for RunnerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RunnerKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "native" => Ok(Self::Native),
            "copilot" => Ok(Self::Copilot),
            other => Err(format!(
                "unknown runner {other:?}: expected native or copilot"
            )),
        }
    }
}

/// What a run is given besides its task: how to stop it and where its
/// events go.
#[derive(Clone, Default)]
pub struct RunContext {
    cancel: CancellationToken,
    log: Option<EventLog>,
}

impl std::fmt::Debug for RunContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunContext")
            .field("cancelled", &self.cancel.is_cancelled())
            .field("logged", &self.log.is_some())
            .finish()
    }
}

impl RunContext {
    /// A run stopped by `cancel`, with no event log.
    pub fn new(cancel: CancellationToken) -> Self {
        Self { cancel, log: None }
    }

    /// Every step of the run goes to `log`.
    pub fn with_log(mut self, log: EventLog) -> Self {
        self.log = Some(log);
        self
    }

    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    pub fn log(&self) -> Option<&EventLog> {
        self.log.as_ref()
    }
}

/// Does the work of a session's turn. Both runners implement it, so a door
/// (`copilot-bridge run`, the RPC server) picks one by [`RunnerKind`] and
/// treats them alike.
#[async_trait]
pub trait Runner: Send + Sync {
    fn kind(&self) -> RunnerKind;

    /// Runs `request` in `session` until the task is done, the turns run
    /// out, the deadline passes or `context` cancels it. Never panics on bad
    /// upstream input: failures end up in the report.
    async fn run(
        &self,
        session: Arc<Session>,
        request: RunRequest,
        context: RunContext,
    ) -> RunReport;

    /// Continues a session from what its log replayed
    /// ([`EventLog::resume`]: a torn last line already cut, unfinished tool
    /// calls already answered), with a new task.
    async fn resume(
        &self,
        session: Arc<Session>,
        request: RunRequest,
        history: Replayed,
        context: RunContext,
    ) -> RunReport {
        let _ = (request, history, context);
        RunReport::failed_early(
            session.id(),
            format!("the {} runner cannot resume a session", self.kind()),
        )
    }
}
