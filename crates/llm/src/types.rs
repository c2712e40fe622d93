//! The normalized request, events and errors every backend maps onto.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ChatStream;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// A tool call the model made: `arguments` is the JSON text as the model
/// wrote it (it may be invalid JSON; the caller decides what to do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn text(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: Some(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: Role::Tool,
            content: Some(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
}

/// A tool the model may call, described by the JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// What to ask a backend.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// `None`: the backend's configured default model.
    pub model: Option<String>,
    pub messages: Vec<Message>,
    #[serde(default)]
    pub tools: Vec<ToolDefinition>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub stop: Vec<String>,
    /// Request fields this type does not model, forwarded unchanged to
    /// backends that speak the same wire format.
    #[serde(default)]
    pub extra: BTreeMap<String, Value>,
    /// Request headers of the client forwarded, like `extra`, to a backend
    /// of the client's own wire format (Anthropic's `anthropic-beta`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    Other(String),
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// One step of a streamed answer. Tool calls are identified by their index
/// in the answer, as every wire format does while streaming.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatEvent {
    TextDelta {
        text: String,
    },
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallArgumentsDelta {
        index: usize,
        arguments: String,
    },
    ToolCallEnd {
        index: usize,
    },
    Usage {
        usage: Usage,
    },
    Finish {
        reason: FinishReason,
    },
}

/// Why a backend could not answer. The classes follow the policy crate's
/// error classification (rate limit and transient errors are retried).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    #[error("{backend}: HTTP {status}: {message}")]
    Http {
        backend: String,
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    #[error("{backend}: cannot reach {url}: {message}")]
    Transport {
        backend: String,
        url: String,
        message: String,
    },
    #[error("{backend}: invalid response from upstream: {message}")]
    Protocol { backend: String, message: String },
    #[error("{backend}: no answer within {after:?}")]
    Timeout { backend: String, after: Duration },
    #[error("{backend}: not authorized: {message}")]
    Auth { backend: String, message: String },
    #[error("{0}")]
    NotConfigured(String),
}

/// A whole answer: the stream collected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    pub finish: Option<FinishReason>,
}

/// Assembles a [`ChatResponse`] from stream events in arrival order:
/// text deltas appended, argument fragments of each tool call joined by
/// index. Shared by [`collect`] and callers that also act on each event as
/// it streams (the agent loop).
#[derive(Debug, Default)]
pub struct ResponseBuilder {
    response: ChatResponse,
    calls: BTreeMap<usize, ToolCall>,
}

impl ResponseBuilder {
    pub fn push(&mut self, event: ChatEvent) {
        match event {
            ChatEvent::TextDelta { text } => self.response.text.push_str(&text),
            ChatEvent::ToolCallStart { index, id, name } => {
                self.calls.insert(
                    index,
                    ToolCall {
                        id,
                        name,
                        arguments: String::new(),
                    },
                );
            }
            ChatEvent::ToolCallArgumentsDelta { index, arguments } => {
                if let Some(call) = self.calls.get_mut(&index) {
                    call.arguments.push_str(&arguments);
                }
            }
            ChatEvent::ToolCallEnd { .. } => {}
            ChatEvent::Usage { usage } => self.response.usage = Some(usage),
            ChatEvent::Finish { reason } => self.response.finish = Some(reason),
        }
    }

    /// The answer, tool calls in index order.
    pub fn finish(mut self) -> ChatResponse {
        self.response.tool_calls = self.calls.into_values().collect();
        self.response
    }
}

/// Collects a stream into one answer (the non-streaming mode of every
/// backend). Argument fragments of each tool call are joined in order.
pub async fn collect(mut stream: ChatStream) -> Result<ChatResponse, LlmError> {
    let mut builder = ResponseBuilder::default();
    while let Some(event) = stream.next().await {
        builder.push(event?);
    }
    Ok(builder.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collect_joins_text_and_split_tool_arguments_in_order() {
        let events = vec![
            Ok(ChatEvent::TextDelta { text: "Hel".into() }),
            Ok(ChatEvent::ToolCallStart {
                index: 1,
                id: "b".into(),
                name: "second".into(),
            }),
            Ok(ChatEvent::ToolCallStart {
                index: 0,
                id: "a".into(),
                name: "first".into(),
            }),
            Ok(ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                arguments: "{\"x\":".into(),
            }),
            Ok(ChatEvent::ToolCallArgumentsDelta {
                index: 1,
                arguments: "{}".into(),
            }),
            Ok(ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                arguments: "1}".into(),
            }),
            Ok(ChatEvent::TextDelta { text: "lo".into() }),
            Ok(ChatEvent::Finish {
                reason: FinishReason::ToolCalls,
            }),
        ];
        let stream: ChatStream = futures::stream::iter(events).boxed();
        let response = futures::executor::block_on(collect(stream)).unwrap();
        assert_eq!(response.text, "Hello");
        assert_eq!(response.tool_calls.len(), 2);
        assert_eq!(response.tool_calls[0].name, "first");
        assert_eq!(response.tool_calls[0].arguments, "{\"x\":1}");
        assert_eq!(response.tool_calls[1].arguments, "{}");
        assert_eq!(response.finish, Some(FinishReason::ToolCalls));
    }

    #[test]
    fn an_error_ends_the_collection() {
        let events = vec![
            Ok(ChatEvent::TextDelta {
                text: "partial".into(),
            }),
            Err(LlmError::Protocol {
                backend: "openai".into(),
                message: "bad chunk".into(),
            }),
        ];
        let stream: ChatStream = futures::stream::iter(events).boxed();
        let err = futures::executor::block_on(collect(stream)).unwrap_err();
        assert!(err.to_string().contains("bad chunk"));
    }
}
