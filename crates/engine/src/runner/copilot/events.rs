//! The CLI's session events, folded into our [`RunReport`] and mirrored on
//! our session's event stream.

use std::collections::HashMap;
use std::time::Instant;

use bridge_policy::audit::summarize_for_audit;
use serde_json::Value;

use crate::runner::{ToolCallRecord, UsageTotals};
use crate::session::Session;

/// Longest tool summary a report keeps.
const SUMMARY_CHARS: usize = 500;

/// What a run has seen so far.
#[derive(Debug, Default)]
pub struct RunState {
    pub final_text: String,
    pub tool_calls: Vec<ToolCallRecord>,
    pub turns: u32,
    pub usage: UsageTotals,
    /// The last `session.error`.
    pub error: Option<String>,
    /// `session.idle` arrived: the task is done.
    pub idle: bool,
    started_tools: HashMap<String, (String, Value, Instant)>,
}

impl RunState {
    /// Applies one event (`type`, `data`). Events of sub-agents (with a
    /// `parentToolCallId`) count for usage but not for the final text.
    pub fn apply(&mut self, session: &Session, kind: &str, data: &Value) {
        let text = |key: &str| data.get(key).and_then(Value::as_str).unwrap_or_default();
        let is_subagent = data.get("parentToolCallId").is_some_and(|v| !v.is_null());
        match kind {
            "assistant.turn_start" if !is_subagent => self.turns += 1,
            "assistant.message" => {
                let mut tool_requests = data
                    .get("toolRequests")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                tool_requests
                    .iter_mut()
                    .for_each(bridge_policy::redact_value);
                // Subscribers (providers, the timeline) get what the native
                // runner shows them: redacted text and arguments.
                session.assistant_message(&bridge_policy::redact(text("content")), tool_requests);
                if !is_subagent && !text("content").trim().is_empty() {
                    self.final_text = text("content").to_owned();
                }
            }
            "assistant.intent" => session.assistant_intent(text("intent")),
            "assistant.usage" => {
                let tokens = |key: &str| data.get(key).and_then(Value::as_u64).unwrap_or(0);
                self.usage.prompt_tokens += tokens("inputTokens");
                self.usage.completion_tokens += tokens("outputTokens");
                self.usage.requests += 1;
            }
            "tool.execution_start" => {
                let arguments = data.get("arguments").cloned().unwrap_or(Value::Null);
                self.started_tools.insert(
                    text("toolCallId").to_owned(),
                    (text("toolName").to_owned(), arguments, Instant::now()),
                );
            }
            "tool.execution_complete" => self.complete_tool(data),
            "session.error" => {
                let message = bridge_policy::redact(text("message")).into_owned();
                self.error = Some(match text("errorType") {
                    "" => message,
                    kind => format!("{kind} error: {message}"),
                });
            }
            "session.idle" => self.idle = true,
            _ => {}
        }
    }

    fn complete_tool(&mut self, data: &Value) {
        let call_id = data
            .get("toolCallId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (name, arguments, started) = self
            .started_tools
            .remove(call_id)
            .unwrap_or_else(|| ("unknown".to_owned(), Value::Null, Instant::now()));
        let ok = data
            .get("success")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let summary = if ok {
            data.pointer("/result/content")
                .map(|content| match content {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
                .unwrap_or_default()
        } else {
            data.pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("failed")
                .to_owned()
        };
        let mut arguments = arguments;
        bridge_policy::redact_value(&mut arguments);
        self.tool_calls.push(ToolCallRecord {
            name,
            arguments: summarize_for_audit(&arguments),
            ok,
            summary: bridge_policy::redact::preview(&summary, SUMMARY_CHARS),
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        });
    }
}
