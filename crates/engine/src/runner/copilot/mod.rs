//! The Copilot CLI runner: delegates a task to the GitHub Copilot CLI agent
//! over the Copilot SDK protocol (JSON-RPC 2.0 with `Content-Length`
//! framing over the stdio of `copilot --server --stdio`).
//!
//! The official `github-copilot-sdk` crate was evaluated and not used: with
//! default features off it can neither find nor start the CLI (only
//! externally supplied streams), it needs Rust 1.94 while this workspace
//! promises 1.90, it is a weekly-changing pre-release of ~45k lines, and we
//! need a small part of it. This module implements that part: the
//! handshake, ping/status/auth status, one session per run, event mapping,
//! and our policy answering the CLI's `preToolUse` hook and permission
//! prompts.

mod client;
mod config;
mod events;
mod framing;
mod policy;
mod process;
mod rpc;
mod run;

pub use client::{AuthStatus, CliStatus, CopilotClient, CopilotError, PROTOCOL_VERSIONS};
pub use config::{AUTH_TOKEN_ENV, CliProvider, CopilotCliConfig, McpServer};
pub use policy::{CliToolNames, check_cli_tool, permission_subject};
pub use run::run_copilot;

/// The Copilot CLI agent as a [`Runner`](crate::runner::Runner): the task
/// goes to `copilot --server --stdio`, our policy answers its hooks and
/// permission requests, and the session log records the prompt, the tool
/// calls and the answer.
pub struct CopilotRunner {
    config: CopilotCliConfig,
}

impl CopilotRunner {
    pub fn new(config: CopilotCliConfig) -> Self {
        Self { config }
    }
}

#[async_trait::async_trait]
impl crate::runner::Runner for CopilotRunner {
    fn kind(&self) -> crate::runner::RunnerKind {
        crate::runner::RunnerKind::Copilot
    }

    async fn run(
        &self,
        session: std::sync::Arc<crate::Session>,
        request: crate::runner::RunRequest,
        context: crate::runner::RunContext,
    ) -> crate::runner::RunReport {
        use crate::log::types;
        let log = context.log();
        let prompt = log.map(|log| {
            log.append(
                types::USER_MESSAGE,
                types::user_message(&request.task),
                None,
            )
        });
        let cancel = context.cancel_token().clone();
        let report = tokio::select! {
            report = run_copilot(&session, &request, &self.config) => report,
            () = cancel.cancelled() => {
                let mut report = crate::runner::RunReport::failed_early(
                    session.id(),
                    "cancelled before the Copilot CLI finished",
                );
                report.status = crate::runner::RunStatus::Cancelled;
                report
            }
        };
        if let Some(log) = log {
            let parent = prompt.as_ref().map(|p| p.id.as_str());
            for call in &report.tool_calls {
                let id = bridge_util::ids::unique_id("t");
                log.append(
                    types::TOOL_EXECUTION_COMPLETE,
                    types::tool_complete(&id, &call.name, call.ok, &call.summary),
                    parent,
                );
            }
            if let Some(error) = &report.error {
                log.append(
                    types::SESSION_ERROR,
                    types::session_error("copilot_cli", error),
                    parent,
                );
            }
            log.append(
                types::ASSISTANT_MESSAGE,
                types::assistant_message(&report.final_text, &[]),
                parent,
            );
            log.append(
                types::SESSION_USAGE,
                types::usage(
                    request.model.as_deref(),
                    report.usage.prompt_tokens,
                    report.usage.completion_tokens,
                ),
                parent,
            );
            if let Err(err) = log.flush().await {
                tracing::warn!(error = %err, "session log flush failed");
            }
        }
        report
    }
}
