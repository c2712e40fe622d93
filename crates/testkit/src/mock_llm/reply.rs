//! What the mock answers (`MockReply`) and what it saw (`RecordedRequest`).

use serde::{Deserialize, Serialize};

/// One scripted answer to one chat request. Deserializable with a `"type"`
/// tag in snake_case (`{"type": "text", "chunks": ["Hel", "lo"]}`) so the
/// `mock-llm` binary can read a script file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MockReply {
    /// One SSE delta per chunk when streaming; joined when not.
    Text { chunks: Vec<String> },
    /// Optional text first, then the calls streamed with their argument
    /// chunks; finish reason `tool_calls` (`tool_use` for Anthropic).
    ToolCalls {
        #[serde(default)]
        text: Option<String>,
        calls: Vec<MockToolCall>,
    },
    /// An HTTP error whose JSON body has the endpoint's error format and
    /// `body` as its message.
    Error {
        status: u16,
        body: String,
        #[serde(default)]
        retry_after_secs: Option<u64>,
    },
    /// Bytes exactly as given, each chunk written separately (bad JSON,
    /// truncated SSE, an HTML error page from a proxy).
    Raw {
        status: u16,
        content_type: String,
        body_chunks: Vec<String>,
    },
    /// Text with `delay_ms` before each chunk (before the whole body when
    /// not streaming: the sum of the delays).
    Slow { chunks: Vec<String>, delay_ms: u64 },
    /// Streams the chunks as text, then drops the connection without the
    /// end of stream (`[DONE]` / `message_stop`) or the final HTTP chunk.
    DropAfter { chunks: Vec<String> },
}

impl MockReply {
    /// A text reply in one chunk.
    pub fn text(text: impl Into<String>) -> Self {
        MockReply::Text {
            chunks: vec![text.into()],
        }
    }

    /// A text reply streamed as the given chunks.
    pub fn chunks<S: Into<String>>(chunks: impl IntoIterator<Item = S>) -> Self {
        MockReply::Text {
            chunks: chunks.into_iter().map(Into::into).collect(),
        }
    }

    /// A reply that calls one tool, `arguments` sent whole.
    pub fn tool_call(id: &str, name: &str, arguments: &serde_json::Value) -> Self {
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(id, name, arguments.to_string())],
        }
    }

    /// An error reply without `Retry-After`.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        MockReply::Error {
            status,
            body: message.into(),
            retry_after_secs: None,
        }
    }
}

/// A tool call the mock model makes; its arguments are streamed as the
/// given fragments (joined, they are the arguments JSON text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MockToolCall {
    pub id: String,
    pub name: String,
    pub argument_chunks: Vec<String>,
}

impl MockToolCall {
    /// A call whose arguments arrive in one fragment.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            argument_chunks: vec![arguments.into()],
        }
    }

    pub fn arguments(&self) -> String {
        self.argument_chunks.concat()
    }
}

/// A request as the mock received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// Header names lowercase, in the order received.
    pub headers: Vec<(String, String)>,
    /// `Null` when the body is empty or not JSON.
    pub body: serde_json::Value,
    /// When the mock read the request.
    pub received_at: std::time::Instant,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}
