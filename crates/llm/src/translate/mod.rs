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

pub use anthropic::estimate_chat_tokens;

use serde_json::{Map, Value};

/// Whether a request body asks for thinking, in any of the three formats:
/// Anthropic's `thinking` (enabled or adaptive), OpenAI's
/// `reasoning_effort` or the Responses API's `reasoning.effort` (medium or
/// more).
pub fn asks_for_thinking(body: &Map<String, Value>) -> bool {
    let effortful = |effort: Option<&Value>| {
        effort
            .and_then(Value::as_str)
            .is_some_and(|e| matches!(e, "medium" | "high" | "xhigh"))
    };
    let thinking = body
        .get("thinking")
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|kind| matches!(kind, "enabled" | "adaptive"));
    thinking
        || effortful(body.get("reasoning_effort"))
        || effortful(body.get("reasoning").and_then(|r| r.get("effort")))
}
