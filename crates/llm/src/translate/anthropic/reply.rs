//! A whole answer as an Anthropic `message` object.

use serde_json::{Value, json};

use crate::{ChatResponse, FinishReason};

/// Anthropic's `stop_reason` for how an answer ended. An answer that called
/// tools ends in `tool_use` even when the upstream said only "stop" (some
/// OpenAI-compatible servers do): Anthropic clients run tools on it.
pub fn stop_reason(finish: Option<&FinishReason>, called_tools: bool) -> String {
    match finish {
        None | Some(FinishReason::Stop) if called_tools => "tool_use".to_owned(),
        None | Some(FinishReason::Stop) => "end_turn".to_owned(),
        Some(FinishReason::Length) => "max_tokens".to_owned(),
        Some(FinishReason::ToolCalls) => "tool_use".to_owned(),
        Some(FinishReason::ContentFilter) => "refusal".to_owned(),
        Some(FinishReason::Other(other)) => other.clone(),
    }
}

/// A whole answer as an Anthropic `message` object. A tool call's `input`
/// is its arguments parsed; arguments that are not a JSON object (a model's
/// mistake) are passed as `{"raw_arguments": "<text>"}`, which fails the
/// tool's schema so the client reports the mistake back to the model.
pub fn response_object(id: &str, model: &str, response: &ChatResponse) -> Value {
    let mut content = Vec::new();
    if !response.text.is_empty() {
        content.push(json!({"type": "text", "text": response.text}));
    }
    for call in &response.tool_calls {
        let input = if call.arguments.trim().is_empty() {
            json!({})
        } else {
            match serde_json::from_str::<Value>(&call.arguments) {
                Ok(object @ Value::Object(_)) => object,
                _ => json!({"raw_arguments": call.arguments}),
            }
        };
        content.push(json!({
            "type": "tool_use",
            "id": super::client_tool_id(&call.id),
            "name": call.name,
            "input": input,
        }));
    }
    let usage = response.usage.unwrap_or_default();
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(response.finish.as_ref(), !response.tool_calls.is_empty()),
        "stop_sequence": null,
        "usage": {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens},
    })
}
