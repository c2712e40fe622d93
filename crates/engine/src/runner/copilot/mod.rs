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
        let sent = request.clone();
        self.turn(session, request, sent, context).await
    }

    /// The CLI starts a session of its own each run, so a conversation is
    /// continued by telling it what was said before: the earlier prompts and
    /// answers go before the new task (the log records the task alone).
    async fn resume(
        &self,
        session: std::sync::Arc<crate::Session>,
        request: crate::runner::RunRequest,
        history: crate::log::Replayed,
        context: crate::runner::RunContext,
    ) -> crate::runner::RunReport {
        let mut sent = request.clone();
        sent.task = with_earlier_conversation(&history.conversation, &request.task);
        self.turn(session, request, sent, context).await
    }
}

impl CopilotRunner {
    /// One run: `request` as the log records it, `sent` as the CLI gets it.
    async fn turn(
        &self,
        session: std::sync::Arc<crate::Session>,
        request: crate::runner::RunRequest,
        sent: crate::runner::RunRequest,
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
            report = run_copilot(&session, &sent, &self.config) => report,
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

/// Characters of the earlier conversation told to the CLI at most (the
/// newest kept).
const EARLIER_CHARS: usize = 32 * 1024;

/// `task` after the prompts and answers of `conversation` (tool calls left
/// out), the newest [`EARLIER_CHARS`] of them.
fn with_earlier_conversation(conversation: &[crate::log::ConversationItem], task: &str) -> String {
    use crate::log::ConversationItem;
    let mut earlier = String::new();
    for item in conversation {
        match item {
            ConversationItem::User { content } => {
                earlier.push_str(&format!("User: {content}\n\n"));
            }
            ConversationItem::Assistant { content, .. } if !content.trim().is_empty() => {
                earlier.push_str(&format!("You: {content}\n\n"));
            }
            _ => {}
        }
    }
    if earlier.is_empty() {
        return task.to_owned();
    }
    if earlier.len() > EARLIER_CHARS {
        let mut from = earlier.len() - EARLIER_CHARS;
        while !earlier.is_char_boundary(from) {
            from += 1;
        }
        earlier = format!("…{}", &earlier[from..]);
    }
    format!(
        "This continues an earlier conversation. What was said before:\n\n{earlier}Now the user says:\n\n{task}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::ConversationItem;

    #[test]
    fn a_resumed_task_carries_the_earlier_prompts_and_answers() {
        let conversation = vec![
            ConversationItem::User {
                content: "What do the notes say?".to_owned(),
            },
            ConversationItem::Assistant {
                content: "They say pineapple.".to_owned(),
                tool_requests: Vec::new(),
            },
        ];
        let sent = with_earlier_conversation(&conversation, "And the README?");
        assert!(sent.contains("User: What do the notes say?"), "{sent}");
        assert!(sent.contains("You: They say pineapple."), "{sent}");
        assert!(sent.ends_with("And the README?"), "{sent}");
        assert_eq!(with_earlier_conversation(&[], "hi"), "hi");
        let long = vec![ConversationItem::User {
            content: "é".repeat(EARLIER_CHARS),
        }];
        assert!(with_earlier_conversation(&long, "x").len() < EARLIER_CHARS + 200);
    }
}
