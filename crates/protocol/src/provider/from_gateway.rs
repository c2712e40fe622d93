//! Gateway → provider: the 13 message types the gateway sends.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ErrorCode;
use crate::excerpt::{ERROR_MESSAGE_MAX_BYTES, EXCERPT_CHARS, bounded};

/// One message to a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum GatewayMessage {
    #[serde(rename = "auth.pairing")]
    AuthPairing(AuthPairing),
    #[serde(rename = "sessions")]
    Sessions(SessionList),
    #[serde(rename = "sessions.updated")]
    SessionsUpdated(SessionList),
    #[serde(rename = "hello.ack")]
    HelloAck(HelloAck),
    #[serde(rename = "ack")]
    Ack(Ack),
    #[serde(rename = "error")]
    Error(ErrorMessage),
    #[serde(rename = "tool.call")]
    ToolCall(ToolCall),
    #[serde(rename = "tool.cancel")]
    ToolCancel(ToolCancel),
    #[serde(rename = "gate.check")]
    GateCheck(GateCheck),
    #[serde(rename = "transform.request")]
    TransformRequest(TransformRequest),
    #[serde(rename = "session.event")]
    SessionEvent(SessionEventMessage),
    #[serde(rename = "session.lifecycle")]
    SessionLifecycle(SessionLifecycle),
    #[serde(rename = "stream.history")]
    StreamHistory(StreamHistory),
    #[serde(rename = "chat.request")]
    ChatRequest(super::chat::ChatRequestMessage),
    #[serde(rename = "chat.cancel")]
    ChatCancel(super::chat::ChatCancel),
}

impl GatewayMessage {
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::AuthPairing(_) => "auth.pairing",
            Self::Sessions(_) => "sessions",
            Self::SessionsUpdated(_) => "sessions.updated",
            Self::HelloAck(_) => "hello.ack",
            Self::Ack(_) => "ack",
            Self::Error(_) => "error",
            Self::ToolCall(_) => "tool.call",
            Self::ToolCancel(_) => "tool.cancel",
            Self::GateCheck(_) => "gate.check",
            Self::TransformRequest(_) => "transform.request",
            Self::SessionEvent(_) => "session.event",
            Self::SessionLifecycle(_) => "session.lifecycle",
            Self::StreamHistory(_) => "stream.history",
            Self::ChatRequest(_) => "chat.request",
            Self::ChatCancel(_) => "chat.cancel",
        }
    }

    /// Serializes to the wire text. Our own types always serialize.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|err| {
            format!(
                r#"{{"type":"error","code":"INVALID_JSON","message":"gateway could not serialize a {}: {}"}}"#,
                self.type_name(),
                err.to_string().replace(['"', '\\'], "'")
            )
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthPairing {
    pub prompt: String,
}

/// `sessions` / `sessions.updated`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionList {
    /// Only for external providers, right after pairing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    pub active: Vec<SessionSummary>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub id: String,
    pub label: String,
    /// Only for sessions the provider may bind to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default)]
    pub foreground: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloAck {
    pub protocol_version: u32,
    pub provider_id: String,
    pub reconnect_token: String,
    /// Local providers only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persist_dir: Option<String>,
    /// Ours: the sessions this hello bound to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ack {
    pub request_id: String,
    pub session_id: String,
    pub revision: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorMessage {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

impl ErrorMessage {
    /// An error; a message over [`ERROR_MESSAGE_MAX_BYTES`] is cut, so an
    /// error never grows with the input it refuses (quote input with
    /// [`excerpt`](crate::excerpt()) to keep the rest of the message).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: bounded(message.into(), ERROR_MESSAGE_MAX_BYTES),
            reply_to: None,
            request_id: None,
            provider_id: None,
            session_id: None,
        }
    }

    /// The type of the refused message; an unknown type is the client's
    /// input, so it is cut like any quote.
    pub fn reply_to(mut self, message_type: impl Into<String>) -> Self {
        self.reply_to = Some(bounded(message_type.into(), EXCERPT_CHARS));
        self
    }

    pub fn request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    pub fn provider_id(mut self, provider_id: impl Into<String>) -> Self {
        self.provider_id = Some(provider_id.into());
        self
    }

    /// The session concerned; often the one the client named, so it is cut
    /// like any quote (real session ids are far shorter).
    pub fn session_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(bounded(session_id.into(), EXCERPT_CHARS));
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub id: String,
    pub session_id: String,
    pub tool: String,
    pub args: Value,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCancel {
    pub id: String,
    pub session_id: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GateCheck {
    pub gate_id: String,
    pub call_id: String,
    pub session_id: String,
    pub tool: String,
    pub args: Value,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TransformRequest {
    pub call_id: String,
    pub session_id: String,
    pub section: String,
    pub current: String,
}

/// `session.event`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEventMessage {
    pub session_id: String,
    pub event: String,
    pub data: Value,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionLifecycle {
    pub session_id: String,
    pub state: LifecycleState,
    /// Milliseconds, with `shutdown.pending`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LifecycleState {
    #[serde(rename = "started")]
    Started,
    #[serde(rename = "idle")]
    Idle,
    #[serde(rename = "shutdown.pending")]
    ShutdownPending,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamHistory {
    pub query_id: String,
    /// `stream@provider` → entries, newest first.
    pub streams: BTreeMap<String, Vec<StreamEntry>>,
    /// Older events were left out to keep the answer within its byte
    /// bound (ours; absent when the answer is whole).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamEntry {
    /// RFC 3339, UTC.
    pub ts: String,
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}
