//! Translation between the wire formats clients speak to the facade
//! (OpenAI chat completions, Anthropic Messages, OpenAI Responses) and
//! the normalized [`ChatRequest`](crate::ChatRequest) /
//! [`ChatEvent`](crate::ChatEvent): each format has a module with the same
//! parts under the same names — `parse_request` (a client's body into an
//! `InboundRequest`), `StreamEncoder` (our events as that format's stream),
//! `response_object` (a whole answer as that format's one object).
//!
//! Only JSON in and out: this module must not choose a backend, talk to the
//! network or log message content. The backends' own (outbound) mappings
//! live with each backend.

pub mod anthropic;
pub mod openai;
pub mod responses;
