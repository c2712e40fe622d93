//! The OpenAI chat-completions format as a server speaks it: parsing a
//! client's `POST /chat/completions` body into a [`ChatRequest`](crate::ChatRequest)
//! ([`parse_request`]), and answering with `chat.completion.chunk`s
//! ([`StreamEncoder`]) or one `chat.completion` ([`response_object`]).
//!
//! For the facade of the daemon. This module only translates JSON; it must
//! not choose a backend, talk to the network or log message content.

mod encode;
mod request;
mod to_anthropic;

pub use encode::{StreamEncoder, finish_reason_name, response_object};
pub use request::{InboundError, InboundRequest, parse_request};
