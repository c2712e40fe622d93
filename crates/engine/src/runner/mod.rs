//! Runners: what does the work of a session's turn. The native runner is
//! our agentic loop over a chat backend; the Copilot runner delegates to the
//! GitHub Copilot CLI agent over the Copilot SDK protocol.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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
