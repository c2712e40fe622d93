//! What happens in a session, as the session's subscribers see it.

use serde::Serialize;
use serde_json::Value;

/// One event on a session's broadcast channel. The first four are the
/// spec's `session.event` types; the rest are the session's own.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum SessionEvent {
    #[serde(rename = "user.message")]
    UserMessage { content: String },
    #[serde(rename = "assistant.message")]
    AssistantMessage {
        content: String,
        #[serde(rename = "toolRequests", skip_serializing_if = "Vec::is_empty")]
        tool_requests: Vec<Value>,
    },
    /// Streamed text of the answer being written (the whole answer
    /// follows as `assistant.message`).
    #[serde(rename = "assistant.message_delta")]
    AssistantDelta { delta: String },
    #[serde(rename = "tool.execution_complete")]
    ToolExecutionComplete {
        tool: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        provider: Option<String>,
        args: Value,
        /// `{type: "success"|"failure", output?}`
        result: Value,
        #[serde(rename = "durationMs")]
        duration_ms: u64,
        /// What the policy decided (a person's answer included).
        #[serde(skip_serializing_if = "Option::is_none")]
        decision: Option<bridge_protocol::Decision>,
    },
    /// The policy's decision on a call an agent runs itself (its hook
    /// asked before running it): the call runs, or not, in the agent.
    #[serde(rename = "tool.decided")]
    ToolDecided {
        tool: String,
        /// The agent that asked (`claude-code`, …).
        agent: String,
        args: Value,
        decision: bridge_protocol::Decision,
    },
    #[serde(rename = "assistant.intent")]
    AssistantIntent { intent: String },
    /// A line in the session timeline (`session.log()`).
    #[serde(rename = "log")]
    Log { source: String, text: String },
    /// A push that asks for an AI turn (`session.send()`).
    #[serde(rename = "inject")]
    Inject {
        source: String,
        stream: String,
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    /// The session has no work in flight.
    #[serde(rename = "idle")]
    Idle,
}

impl SessionEvent {
    /// The spec's `session.event` name, for the four forwarded types.
    pub fn forwarded_name(&self) -> Option<&'static str> {
        match self {
            Self::UserMessage { .. } => Some("user.message"),
            Self::AssistantMessage { .. } => Some("assistant.message"),
            Self::ToolExecutionComplete { .. } => Some("tool.execution_complete"),
            Self::AssistantIntent { .. } => Some("assistant.intent"),
            _ => None,
        }
    }

    /// The payload of a forwarded event (the spec's table), without the tag.
    pub fn payload(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.remove("event");
        }
        value
    }
}

/// A timeline line kept by the session (the newest few hundred), so a late
/// viewer (`copilot-bridge pair`, a test) can read what was shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimelineEntry {
    pub ts: String,
    pub source: String,
    pub text: String,
}
