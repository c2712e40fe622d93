//! Chat backends behind one [`ChatBackend`] trait.
//!
//! A backend takes a normalized [`ChatRequest`] and answers a stream of typed
//! [`ChatEvent`]s; a non-streaming answer is the same stream collected
//! ([`collect`]). Each backend maps its own wire format (OpenAI chat
//! completions, Anthropic messages, …) onto these types and back. This crate
//! must not know about sessions, tools' execution or policy: it only talks to
//! language models.
//!
//! Backends so far: [`OpenAiBackend`] for OpenAI and every server speaking its
//! chat-completions format. Its `base_url` includes the version path
//! (`https://api.openai.com/v1`, `http://localhost:11434/v1`). Streaming
//! bodies are decoded by [`sse::SseDecoder`], which other backends share.

mod http;
pub mod openai;
pub mod sse;
mod types;

pub use openai::{OpenAiBackend, OpenAiConfig};
pub use types::{
    ChatEvent, ChatRequest, ChatResponse, FinishReason, LlmError, Message, Role, ToolCall,
    ToolDefinition, Usage, collect,
};

use async_trait::async_trait;
use futures::stream::BoxStream;

/// The events of one answer, in order; the stream ends after
/// [`ChatEvent::Finish`] or the first error.
pub type ChatStream = BoxStream<'static, Result<ChatEvent, LlmError>>;

/// A language model service.
#[async_trait]
pub trait ChatBackend: Send + Sync {
    /// A short name for logs and status tables (`openai`, `anthropic`, …).
    fn name(&self) -> &str;

    /// Starts one answer. Dropping the stream cancels the request, and the
    /// upstream connection with it.
    async fn stream(&self, request: ChatRequest) -> Result<ChatStream, LlmError>;

    /// The models this backend offers.
    async fn models(&self) -> Result<Vec<String>, LlmError>;
}
