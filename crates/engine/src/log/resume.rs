//! What a replay hands a runner: the conversation so far, rebuilt from the
//! durable events, in a shape any chat backend accepts.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{LoggedEvent, types};
use crate::runner::UsageTotals;

/// What the model is told about a tool call whose result never reached the
/// log (the process stopped while it ran).
pub const INTERRUPTED_TOOL_RESULT: &str =
    "interrupted: the session stopped before this tool call finished";

/// One tool call an assistant message asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequest {
    pub tool_call_id: String,
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
}

/// One message of a rebuilt conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ConversationItem {
    User {
        content: String,
    },
    Assistant {
        content: String,
        tool_requests: Vec<ToolRequest>,
    },
    /// Always follows the assistant message that asked for it.
    ToolResult {
        tool_call_id: String,
        name: String,
        ok: bool,
        content: String,
    },
}

/// A line [`super::EventLog::resume`] could not read and went past.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedLine {
    pub line: u64,
    pub reason: String,
}

/// A session as its log describes it, for a runner to carry on.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Replayed {
    pub session_id: String,
    /// The `session.start` data (the creator's metadata); `null` if that
    /// line was lost.
    pub meta: Value,
    /// User prompts, assistant messages and tool results, in order. Every
    /// tool request has exactly one result: a call that never finished gets
    /// a failed result saying so ([`INTERRUPTED_TOOL_RESULT`]), a result
    /// without its request is dropped.
    pub conversation: Vec<ConversationItem>,
    /// Durable events read.
    pub events: u64,
    /// The highest `seq` read; the next event gets `last_seq + 1`.
    pub last_seq: u64,
    /// Id of the last event read, for `parentId` of what follows.
    pub last_event_id: Option<String>,
    pub usage: UsageTotals,
    /// Corrupt lines in the middle of the file that were skipped.
    pub skipped: Vec<SkippedLine>,
    /// A torn last line (a crash mid-write) was cut off.
    pub torn_tail: bool,
}

/// Folds events into a [`Replayed`].
pub(crate) struct ConversationBuilder {
    replayed: Replayed,
    /// Requests of the latest assistant message still waiting for a result:
    /// tool call id → tool name.
    open_calls: Vec<(String, String)>,
    /// Results that arrived, by call id, kept until all of the message's
    /// calls are settled so they follow it in request order.
    settled: HashMap<String, (bool, String)>,
}

impl ConversationBuilder {
    pub(crate) fn new(session_id: &str) -> Self {
        Self {
            replayed: Replayed {
                session_id: session_id.to_owned(),
                meta: Value::Null,
                conversation: Vec::new(),
                events: 0,
                last_seq: 0,
                last_event_id: None,
                usage: UsageTotals::default(),
                skipped: Vec::new(),
                torn_tail: false,
            },
            open_calls: Vec::new(),
            settled: HashMap::new(),
        }
    }

    pub(crate) fn skip(&mut self, line: u64, reason: String) {
        self.replayed.skipped.push(SkippedLine { line, reason });
    }

    pub(crate) fn push(&mut self, event: LoggedEvent) {
        let replayed = &mut self.replayed;
        replayed.events += 1;
        replayed.last_seq = replayed.last_seq.max(event.seq);
        let data = &event.data;
        match event.kind.as_str() {
            types::SESSION_START if replayed.meta.is_null() => {
                replayed.meta = event.data.clone();
            }
            types::USER_MESSAGE => {
                self.settle_open_calls();
                self.replayed.conversation.push(ConversationItem::User {
                    content: text_field(data, "content"),
                });
            }
            types::ASSISTANT_MESSAGE => {
                self.settle_open_calls();
                let tool_requests: Vec<ToolRequest> = data
                    .get("toolRequests")
                    .and_then(|requests| serde_json::from_value(requests.clone()).ok())
                    .unwrap_or_default();
                self.open_calls = tool_requests
                    .iter()
                    .map(|request| (request.tool_call_id.clone(), request.name.clone()))
                    .collect();
                self.replayed
                    .conversation
                    .push(ConversationItem::Assistant {
                        content: text_field(data, "content"),
                        tool_requests,
                    });
            }
            types::TOOL_EXECUTION_COMPLETE => {
                let call_id = text_field(data, "toolCallId");
                if self.open_calls.iter().any(|(id, _)| *id == call_id) {
                    let ok = data
                        .get("success")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    let content = if ok {
                        data.pointer("/result/content")
                            .map(as_text)
                            .unwrap_or_default()
                    } else {
                        data.pointer("/error/message")
                            .map(as_text)
                            .unwrap_or_else(|| "the tool failed".to_owned())
                    };
                    self.settled.insert(call_id, (ok, content));
                    if self.settled.len() == self.open_calls.len() {
                        self.settle_open_calls();
                    }
                }
            }
            types::SESSION_USAGE => {
                let count = |key| data.get(key).and_then(Value::as_u64).unwrap_or(0);
                let usage = &mut self.replayed.usage;
                usage.prompt_tokens += count("promptTokens");
                usage.completion_tokens += count("completionTokens");
                usage.requests += 1;
            }
            _ => {}
        }
        self.replayed.last_event_id = Some(event.id);
    }

    /// Appends the results of the latest assistant message's calls, in
    /// request order, failing those that never finished.
    fn settle_open_calls(&mut self) {
        for (tool_call_id, name) in std::mem::take(&mut self.open_calls) {
            let (ok, content) = self
                .settled
                .remove(&tool_call_id)
                .unwrap_or_else(|| (false, INTERRUPTED_TOOL_RESULT.to_owned()));
            self.replayed
                .conversation
                .push(ConversationItem::ToolResult {
                    tool_call_id,
                    name,
                    ok,
                    content,
                });
        }
        self.settled.clear();
    }

    pub(crate) fn finish(mut self, torn_tail: bool) -> Replayed {
        self.settle_open_calls();
        self.replayed.torn_tail = torn_tail;
        self.replayed
    }
}

fn text_field(data: &Value, key: &str) -> String {
    data.get(key).map(as_text).unwrap_or_default()
}

/// A string as is; anything else as compact JSON.
fn as_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
