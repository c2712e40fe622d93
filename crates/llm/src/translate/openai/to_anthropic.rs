//! An OpenAI request for an Anthropic upstream: the fields with an
//! Anthropic equivalent mapped, the others left out.

use serde_json::{Map, Value, json};

use super::request::{InboundError, InboundRequest};
use crate::ChatRequest;

impl InboundRequest {
    /// The request for an Anthropic upstream: the normalized request, with
    /// the unknown fields that have an Anthropic equivalent mapped
    /// (`top_p`, `top_k`, `tool_choice`, `parallel_tool_calls`, `user`) and
    /// the others left out — Anthropic refuses fields it does not know.
    /// Also answers the names left out, for the log.
    pub fn for_anthropic(&self) -> Result<(ChatRequest, Vec<String>), InboundError> {
        if let Some(error) = self.refuse_beyond_normalized("anthropic") {
            return Err(error);
        }
        for (index, message) in self.request.messages.iter().enumerate() {
            for (call_index, call) in message.tool_calls.iter().enumerate() {
                let parsed = if call.arguments.trim().is_empty() {
                    Ok(Value::Object(Map::new()))
                } else {
                    serde_json::from_str::<Value>(&call.arguments)
                };
                if !matches!(parsed, Ok(Value::Object(_))) {
                    return Err(InboundError::invalid_value(
                        format!("messages[{index}].tool_calls[{call_index}].function.arguments"),
                        "tool call arguments must be a JSON object for this backend",
                    ));
                }
            }
        }
        let mut request = self.request.clone();
        let extra = std::mem::take(&mut request.extra);
        let mut dropped = Vec::new();
        let mut tool_choice: Option<Map<String, Value>> = None;
        let mut disable_parallel = false;
        for (key, value) in extra {
            match (key.as_str(), &value) {
                ("top_p" | "top_k", Value::Number(_)) => {
                    request.extra.insert(key, value);
                }
                ("user", Value::String(user)) => {
                    request
                        .extra
                        .insert("metadata".into(), json!({"user_id": user}));
                }
                ("tool_choice", choice) if !request.tools.is_empty() => {
                    match anthropic_tool_choice(choice) {
                        Some(choice) => tool_choice = Some(choice),
                        None => dropped.push(key),
                    }
                }
                ("parallel_tool_calls", Value::Bool(parallel)) if !request.tools.is_empty() => {
                    disable_parallel = !parallel;
                }
                _ => dropped.push(key),
            }
        }
        if disable_parallel {
            let choice = tool_choice.get_or_insert_with(|| {
                let mut auto = Map::new();
                auto.insert("type".into(), json!("auto"));
                auto
            });
            // Anthropic has no such flag on `none`.
            if choice.get("type").and_then(Value::as_str) != Some("none") {
                choice.insert("disable_parallel_tool_use".into(), json!(true));
            }
        }
        if let Some(choice) = tool_choice {
            request
                .extra
                .insert("tool_choice".into(), Value::Object(choice));
        }
        Ok((request, dropped))
    }
}

/// OpenAI's `tool_choice` in Anthropic's terms, if it has one.
fn anthropic_tool_choice(choice: &Value) -> Option<Map<String, Value>> {
    let mapped = match choice {
        Value::String(mode) => match mode.as_str() {
            "auto" => json!({"type": "auto"}),
            "required" => json!({"type": "any"}),
            "none" => json!({"type": "none"}),
            _ => return None,
        },
        Value::Object(_) => {
            let name = choice.pointer("/function/name").and_then(Value::as_str)?;
            json!({"type": "tool", "name": name})
        }
        _ => return None,
    };
    match mapped {
        Value::Object(map) => Some(map),
        _ => None,
    }
}
