//! Ours, beside the spec's messages: a provider that can reach a language
//! model (the VS Code extension, through `vscode.lm`) offers its models to
//! the hub, and the hub's chat backend `vscode` sends requests to it over the
//! same connection (docs/providers.md, "Chat models").
//!
//! A model request is not a tool call: it must not appear in a session's tool
//! table where agents could call it, it is answered as a stream of text and
//! tool-call parts rather than one result, and it belongs to no session (any
//! agent reaches it through the facade). So it has messages of its own.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most models one provider may offer.
pub const CHAT_MODELS_MAX: usize = 100;
/// Longest model id accepted in an offer.
pub const CHAT_MODEL_ID_MAX_CHARS: usize = 256;

/// `chat.models`: provider → gateway; replaces this connection's offer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatModels {
    #[serde(default)]
    pub models: Vec<ChatModelInfo>,
    /// Whether a request can be served now (models selectable, consent not
    /// refused).
    #[serde(default)]
    pub available: bool,
    /// Why not, when `available` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One model as the editor describes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatModelInfo {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
}

/// `chat.delta`: provider → gateway, a piece of the answer's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatDelta {
    pub id: String,
    #[serde(default)]
    pub text: String,
}

/// `chat.toolCall`: provider → gateway, the model called a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatToolCall {
    pub id: String,
    pub call_id: String,
    pub name: String,
    #[serde(default)]
    pub input: Value,
}

/// `chat.end`: provider → gateway, the answer is complete (or failed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatEnd {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ChatUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ChatFailure>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
}

/// Why a model request failed, as the provider saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatFailure {
    /// One of [`chat_error_code`]; other values are kept as they came.
    pub code: String,
    #[serde(default)]
    pub message: String,
}

/// `chat.end` error codes.
pub mod chat_error_code {
    /// The model id is not offered (any more).
    pub const NO_MODEL: &str = "no_model";
    /// The user refused (or has not given) consent to use the model.
    pub const NO_PERMISSION: &str = "no_permission";
    /// The model's vendor blocked the request (quota, policy).
    pub const BLOCKED: &str = "blocked";
    pub const NOT_FOUND: &str = "not_found";
    pub const CANCELLED: &str = "cancelled";
    pub const FAILED: &str = "failed";
}

/// `chat.request`: gateway → provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequestMessage {
    pub id: String,
    pub model: String,
    pub messages: Vec<ChatTurn>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ChatToolSpec>,
    #[serde(default, skip_serializing_if = "ChatOptions::is_empty")]
    pub options: ChatOptions,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatTurn {
    /// `system`, `user` or `assistant`.
    pub role: String,
    pub content: Vec<ChatPart>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatPart {
    Text {
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCall {
        call_id: String,
        name: String,
        input: Value,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        call_id: String,
        content: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
}

impl ChatOptions {
    pub fn is_empty(&self) -> bool {
        self.max_tokens.is_none() && self.temperature.is_none() && self.stop.is_empty()
    }
}

/// `chat.cancel`: gateway → provider; the caller is gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatCancel {
    pub id: String,
}
