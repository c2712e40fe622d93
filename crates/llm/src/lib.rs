//! Chat backends behind one [`ChatBackend`] trait.
//!
//! A backend takes a normalized [`ChatRequest`] and answers a stream of typed
//! [`ChatEvent`]s; a non-streaming answer is the same stream collected
//! ([`collect`]). Each backend maps its own wire format (OpenAI chat
//! completions, Anthropic messages, …) onto these types and back. This crate
//! must not know about sessions, tools' execution or policy: it only talks to
//! language models.

mod types;

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
