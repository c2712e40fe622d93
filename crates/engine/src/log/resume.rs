//! What a replay hands a runner: the conversation so far, rebuilt from the
//! durable events, in a shape any chat backend accepts.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::LoggedEvent;
use super::borrowed::{Folded, read_plain};
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

    /// Folds one event read as a [`LoggedEvent`].
    pub(crate) fn push(&mut self, event: LoggedEvent) {
        self.fold(event.seq, Folded::from_value(&event.kind, event.data));
        self.set_last_event_id(&event.id);
    }

    /// Folds the event on `line` (without its newline); the error is
    /// [`LoggedEvent`]'s, so a line is an event, or corrupt and why,
    /// exactly as [`super::replay`] says.
    pub(crate) fn push_line(&mut self, line: &[u8]) -> Result<(), serde_json::Error> {
        match read_plain(line) {
            Ok(event) => {
                self.fold(event.seq, event.folded);
                self.set_last_event_id(&event.id);
            }
            // Damage, or JSON the plain reading leaves to the full one.
            Err(_) => self.push(serde_json::from_slice::<LoggedEvent>(line)?),
        }
        Ok(())
    }

    fn set_last_event_id(&mut self, id: &str) {
        match &mut self.replayed.last_event_id {
            Some(last) => {
                last.clear();
                last.push_str(id);
            }
            None => self.replayed.last_event_id = Some(id.to_owned()),
        }
    }

    fn fold(&mut self, seq: u64, folded: Folded) {
        self.replayed.events += 1;
        self.replayed.last_seq = self.replayed.last_seq.max(seq);
        match folded {
            Folded::Start(meta) if self.replayed.meta.is_null() => self.replayed.meta = meta,
            Folded::User { content } => {
                self.settle_open_calls();
                self.replayed
                    .conversation
                    .push(ConversationItem::User { content });
            }
            Folded::Assistant {
                content,
                tool_requests,
            } => {
                self.settle_open_calls();
                self.open_calls = tool_requests
                    .iter()
                    .map(|request| (request.tool_call_id.clone(), request.name.clone()))
                    .collect();
                self.replayed
                    .conversation
                    .push(ConversationItem::Assistant {
                        content,
                        tool_requests,
                    });
            }
            Folded::ToolComplete {
                call_id,
                success,
                result,
                error,
            } => {
                if self.open_calls.iter().any(|(id, _)| *id == call_id) {
                    let content = if success {
                        result.unwrap_or_default()
                    } else {
                        error.unwrap_or_else(|| "the tool failed".to_owned())
                    };
                    self.settled.insert(call_id, (success, content));
                    if self.settled.len() == self.open_calls.len() {
                        self.settle_open_calls();
                    }
                }
            }
            Folded::Usage {
                prompt_tokens,
                completion_tokens,
            } => {
                let usage = &mut self.replayed.usage;
                usage.prompt_tokens += prompt_tokens;
                usage.completion_tokens += completion_tokens;
                usage.requests += 1;
            }
            Folded::Start(_) | Folded::Nothing => {}
        }
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
