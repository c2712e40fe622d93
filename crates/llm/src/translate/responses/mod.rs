//! The OpenAI Responses API (`POST /v1/responses`) as a server speaks it,
//! for the facade: a client's request (what Codex sends) into a
//! [`ChatRequest`](crate::ChatRequest) ([`parse_request`]), and the answer
//! as the Responses event stream ([`StreamEncoder`]) or one `response`
//! object ([`response_object`]). Errors use the OpenAI error shape
//! ([`InboundError`]).
//!
//! What has no chat-completions equivalent is left out and named in
//! [`InboundRequest::ignored`]: reasoning items, hosted tools (`web_search`,
//! file search), Codex's `namespace` tools. Custom (freeform) tools become a
//! function with one `input` string and their calls `custom_tool_call`s.

mod encode;
mod records;
mod request;

pub use super::openai::InboundError;
pub use encode::{ResponseHead, StreamEncoder, answer_message, response_object};
pub use request::{InboundRequest, OMITTED_FILE, parse_request};

#[cfg(test)]
mod tests;
