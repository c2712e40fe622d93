//! Chat backends behind one [`ChatBackend`] trait.
//!
//! A backend takes a normalized [`ChatRequest`] and answers a stream of typed
//! [`ChatEvent`]s; a non-streaming answer ([`ChatBackend::complete`]) is
//! the same stream collected ([`collect`]), or, where the upstream can give
//! one, its unstreamed answer mapped to the same events. Each backend maps its own wire format (OpenAI chat
//! completions, Anthropic messages, …) onto these types and back. This crate
//! must not know about sessions, tools' execution or policy: it only talks to
//! language models.
//!
//! Backends: [`OpenAiBackend`] for OpenAI and every server speaking its
//! chat-completions format (its `base_url` includes the version path:
//! `https://api.openai.com/v1`), [`AzureBackend`], [`AnthropicBackend`],
//! [`CopilotBackend`] (GitHub token exchanged for a Copilot token) and
//! [`OllamaBackend`]. [`RetryingBackend`] wraps any of them with backoff that
//! honours `Retry-After`. Every backend is built by [`build`] from a
//! [`BackendSpec`] (its [`BackendKind`] and settings); [`select_backend`]
//! picks one from the configuration. Streaming bodies are decoded by
//! [`sse::SseDecoder`].
//! The policy dependency is only for error classification (retry or not).

pub mod anthropic;
pub mod azure;
mod build;
pub mod copilot;
mod http;
pub mod kind;
pub mod ollama;
pub mod openai;
pub mod retry;
pub mod select;
pub mod sse;
mod sse_stream;
pub mod translate;
mod types;

pub use anthropic::{AnthropicBackend, AnthropicConfig};
pub use azure::{AzureBackend, AzureConfig};
pub use build::{BackendSpec, build};
pub use copilot::{
    CopilotAccountType, CopilotBackend, CopilotConfig, github_token_from_command,
    github_token_from_gh,
};
pub use kind::BackendKind;
pub use ollama::{OllamaBackend, OllamaConfig, ollama_is_running};
pub use openai::{OpenAiBackend, OpenAiConfig};
pub use retry::{RetryConfig, RetryingBackend};
pub use select::{BackendSettings, Selected, select_backend};
pub use types::{
    ChatEvent, ChatRequest, ChatResponse, FinishReason, LlmError, Message, ResponseBuilder, Role,
    ToolCall, ToolDefinition, Usage, collect,
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
    ///
    /// The request is borrowed: an agent loop keeps one request whose
    /// conversation grows turn by turn and asks with it each turn, so no
    /// turn copies the conversation (retries reuse it too); the backend
    /// still serializes it whole into its body. The stream must not borrow it: take what it needs
    /// before returning.
    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError>;

    /// One whole answer. By default the stream collected; a backend whose
    /// upstream can answer unstreamed asks for that instead, which costs
    /// less on both sides for a caller that waits for the whole anyway.
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        collect(self.stream(request).await?).await
    }

    /// The models this backend offers.
    async fn models(&self) -> Result<Vec<String>, LlmError>;
}
