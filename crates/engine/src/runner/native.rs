//! The native runner: our agentic loop over a chat backend.
//!
//! One run: the system prompt (the session's sections after every
//! transform, safety and identity last), the task after
//! `onUserPromptSubmitted`, then turns of *model → tool calls → tools →
//! results → model* until the model answers without calling a tool, the
//! turns run out, the deadline passes or the run is cancelled.
//!
//! Tools run only through [`Session::call_tool`](crate::Session::call_tool):
//! that is `onPreToolUse` (the permission policy with approval, then the
//! providers' hook rules and gates), the tool, redaction and the audit
//! entry. The loop adds `onPostToolUse` (results over
//! [`TOOL_RESULT_LIMIT`] are cut for the model, saying how much) and
//! `onErrorOccurred` (retry, skip or abort, per `bridge_util::recovery`).
//!
//! Several calls in one answer run in order-preserving batches: a run of
//! consecutive read-only calls runs in parallel (at most
//! [`NativeSettings::max_parallel_tools`] at once); a call that writes or
//! executes runs alone, after everything before it and before everything
//! after it, so the model's order of effects is kept.
//!
//! Every step is an event of the session's log (when the run has one), so
//! [`Runner::resume`] can go on from what [`EventLog::resume`](crate::log::EventLog::resume)
//! replays ([`messages_from_replayed`]).

mod execute;
mod history;
mod journal;
mod lifecycle;
pub use lifecycle::context_blocks;
mod model;
mod prompt;
mod run_loop;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bridge_llm::ChatBackend;
use bridge_util::ErrorPolicy;

pub use history::messages_from_replayed;
pub use lifecycle::{TOOL_RESULT_LIMIT, truncate_for_model};
pub use prompt::{SECTION_INSTRUCTIONS, base_sections};

use super::{RunContext, RunReport, RunRequest, Runner, RunnerKind};
use crate::log::Replayed;
use crate::session::Session;

/// Turns a run may take when the request does not say.
pub const DEFAULT_MAX_TURNS: u32 = 30;

/// Default [`NativeSettings::max_tool_calls_per_answer`]: far more than a
/// real answer asks for, few enough that one answer cannot queue thousands
/// of shell commands or hold thousands of results in memory.
pub const MAX_TOOL_CALLS_PER_ANSWER: usize = 64;

/// How the loop behaves; [`Default`] is what `copilot-bridge run` uses.
#[derive(Debug, Clone)]
pub struct NativeSettings {
    /// Read-only calls of one answer that run at the same time.
    pub max_parallel_tools: usize,
    /// Bytes of a tool result the model gets (`onPostToolUse`).
    pub tool_result_limit: usize,
    /// How long one tool call may take before it is cancelled and reported
    /// to the model as a timeout.
    pub tool_timeout: Duration,
    /// How long the model may stay silent (no streamed event) before the
    /// request counts as timed out.
    pub model_idle_timeout: Duration,
    /// Retry budgets of `onErrorOccurred`.
    pub error_policy: ErrorPolicy,
    /// The first backoff of a retry the loop makes; it doubles.
    pub retry_base_delay: Duration,
    /// `COPILOT_PROJECT_CONTEXT`: injected into every prompt.
    pub project_context: Option<String>,
    /// Answers in a row whose tool calls all had invalid arguments before
    /// the run gives up on the model.
    pub max_invalid_answers: u32,
    /// Tool calls of one answer that run; the model's answer is untrusted,
    /// and the calls past this are answered "not run" instead of executed.
    pub max_tool_calls_per_answer: usize,
}

impl Default for NativeSettings {
    fn default() -> Self {
        Self {
            max_parallel_tools: 4,
            tool_result_limit: TOOL_RESULT_LIMIT,
            tool_timeout: Duration::from_secs(600),
            model_idle_timeout: Duration::from_secs(180),
            error_policy: ErrorPolicy::default(),
            retry_base_delay: Duration::from_millis(250),
            project_context: None,
            max_invalid_answers: 3,
            max_tool_calls_per_answer: MAX_TOOL_CALLS_PER_ANSWER,
        }
    }
}

/// The agentic loop over one chat backend. Give it a backend that already
/// retries failed requests (`select_backend` wraps every backend in
/// `RetryingBackend`): the loop itself only retries what such a backend
/// cannot, an answer that broke off after it started.
pub struct NativeRunner {
    backend: Arc<dyn ChatBackend>,
    settings: NativeSettings,
}

impl std::fmt::Debug for NativeRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeRunner")
            .field("backend", &self.backend.name())
            .field("settings", &self.settings)
            .finish()
    }
}

impl NativeRunner {
    pub fn new(backend: Arc<dyn ChatBackend>, settings: NativeSettings) -> Self {
        Self { backend, settings }
    }

    pub fn settings(&self) -> &NativeSettings {
        &self.settings
    }

    pub fn backend(&self) -> &Arc<dyn ChatBackend> {
        &self.backend
    }
}

#[async_trait]
impl Runner for NativeRunner {
    fn kind(&self) -> RunnerKind {
        RunnerKind::Native
    }

    async fn run(
        &self,
        session: Arc<Session>,
        request: RunRequest,
        context: RunContext,
    ) -> RunReport {
        run_loop::drive(self, session, request, Vec::new(), context).await
    }

    /// Continues the replayed conversation (a call cut short by a crash
    /// already has a result saying so) with the new task.
    async fn resume(
        &self,
        session: Arc<Session>,
        request: RunRequest,
        history: Replayed,
        context: RunContext,
    ) -> RunReport {
        let messages = messages_from_replayed(&history);
        run_loop::drive(self, session, request, messages, context).await
    }
}
