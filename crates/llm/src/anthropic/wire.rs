//! The Anthropic Messages request body we send.

use serde_json::{Map, Value, json};

use crate::http::Delivery;
use crate::{ChatRequest, LlmError, Message, Role};

/// The JSON body of `POST /v1/messages` for `request`, streamed or asked for
/// whole (`delivery`).
/// System messages go to the top-level `system`; tool results become user
/// `tool_result` blocks, merged when consecutive because Anthropic requires
/// user and assistant turns to alternate. `request.extra` is merged last.
pub(crate) fn request_body(
    request: &ChatRequest,
    model: &str,
    default_max_tokens: u32,
    backend: &str,
    delivery: Delivery,
) -> Result<Value, LlmError> {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|message| message.role == Role::System)
        .filter_map(|message| message.content.as_deref())
        .collect();
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(messages(request, backend)?));
    body.insert(
        "max_tokens".into(),
        json!(request.max_tokens.unwrap_or(default_max_tokens)),
    );
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.parameters,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if !request.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(request.stop));
    }
    body.insert("stream".into(), Value::Bool(delivery.is_streamed()));
    for (key, value) in &request.extra {
        body.insert(key.clone(), value.clone());
    }
    Ok(Value::Object(body))
}

fn messages(request: &ChatRequest, backend: &str) -> Result<Vec<Value>, LlmError> {
    let mut wire: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message.role {
            Role::System => continue,
            Role::User => ("user", text_blocks(message)),
            Role::Assistant => ("assistant", assistant_blocks(message, backend)?),
            Role::Tool => ("user", vec![tool_result_block(message, backend)?]),
        };
        // Anthropic refuses empty content; an empty turn says nothing anyway.
        if blocks.is_empty() {
            continue;
        }
        // Same role twice in a row (consecutive tool results, a tool result
        // followed by a user note): one turn, as alternation demands.
        match wire.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => wire.push((role, blocks)),
        }
    }
    Ok(wire
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect())
}

fn text_blocks(message: &Message) -> Vec<Value> {
    match message.content.as_deref() {
        // Anthropic refuses empty text blocks.
        Some(text) if !text.is_empty() => vec![json!({"type": "text", "text": text})],
        _ => Vec::new(),
    }
}

fn assistant_blocks(message: &Message, backend: &str) -> Result<Vec<Value>, LlmError> {
    let mut blocks = text_blocks(message);
    for call in &message.tool_calls {
        let input: Value = if call.arguments.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(&call.arguments).map_err(|err| {
                LlmError::NotConfigured(format!(
                    "{backend}: arguments of tool call {:?} ({}) are not valid JSON, \
                     Anthropic needs an object: {err}",
                    call.id, call.name
                ))
            })?
        };
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    Ok(blocks)
}

fn tool_result_block(message: &Message, backend: &str) -> Result<Value, LlmError> {
    let call_id = message.tool_call_id.as_deref().ok_or_else(|| {
        LlmError::NotConfigured(format!(
            "{backend}: a tool message has no tool_call_id, Anthropic needs it"
        ))
    })?;
    Ok(json!({
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": message.content.clone().unwrap_or_default(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolCall, ToolDefinition};

    fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn maps_system_tools_calls_and_merges_consecutive_tool_results() {
        let mut request = ChatRequest {
            messages: vec![
                Message::text(Role::System, "be brief"),
                Message::text(Role::System, "be kind"),
                Message::text(Role::User, "read a and b"),
                Message {
                    role: Role::Assistant,
                    content: Some("Reading.".into()),
                    tool_calls: vec![call("t1", r#"{"path":"a"}"#), call("t2", "")],
                    tool_call_id: None,
                },
                Message::tool_result("t1", "A"),
                Message::tool_result("t2", "B"),
            ],
            tools: vec![ToolDefinition {
                name: "read_file".into(),
                description: "Reads".into(),
                parameters: json!({"type": "object"}),
            }],
            temperature: Some(0.2),
            stop: vec!["END".into()],
            ..ChatRequest::default()
        };
        request.extra.insert("top_k".into(), json!(5));
        let body = request_body(&request, "claude-x", 4096, "a", Delivery::Streamed).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "claude-x",
                "system": "be brief\n\nbe kind",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "read a and b"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Reading."},
                        {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
                        {"type": "tool_use", "id": "t2", "name": "read_file", "input": {}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                        {"type": "tool_result", "tool_use_id": "t2", "content": "B"},
                    ]},
                ],
                "max_tokens": 4096,
                "tools": [{"name": "read_file", "description": "Reads", "input_schema": {"type": "object"}}],
                "temperature": 0.2,
                "stop_sequences": ["END"],
                "stream": true,
                "top_k": 5,
            })
        );
    }

    #[test]
    fn a_whole_answer_is_asked_for_unstreamed() {
        let request = ChatRequest {
            messages: vec![Message::text(Role::User, "hi")],
            ..ChatRequest::default()
        };
        let body = request_body(&request, "m", 10, "a", Delivery::Whole).unwrap();
        assert_eq!(body["stream"], json!(false));
        let body = request_body(&request, "m", 10, "a", Delivery::Streamed).unwrap();
        assert_eq!(body["stream"], json!(true));
    }

    #[test]
    fn invalid_tool_arguments_and_missing_call_ids_are_clear_errors() {
        let request = ChatRequest {
            messages: vec![Message {
                role: Role::Assistant,
                content: None,
                tool_calls: vec![call("t9", "{\"path\": ")],
                tool_call_id: None,
            }],
            ..ChatRequest::default()
        };
        let err = request_body(&request, "m", 10, "anthropic", Delivery::Streamed).unwrap_err();
        assert!(matches!(err, LlmError::NotConfigured(_)), "{err:?}");
        assert!(err.to_string().contains("\"t9\""), "{err}");
        assert!(err.to_string().contains("not valid JSON"), "{err}");

        let mut orphan = Message::tool_result("x", "r");
        orphan.tool_call_id = None;
        let request = ChatRequest {
            messages: vec![orphan],
            ..ChatRequest::default()
        };
        let err = request_body(&request, "m", 10, "anthropic", Delivery::Streamed).unwrap_err();
        assert!(err.to_string().contains("tool_call_id"), "{err}");
    }

    #[test]
    fn empty_turns_are_left_out_and_a_user_note_after_tool_results_joins_their_turn() {
        let request = ChatRequest {
            messages: vec![
                Message::text(Role::User, "go"),
                Message::text(Role::Assistant, ""),
                Message::tool_result("t1", "A"),
                Message::text(Role::User, "and now?"),
            ],
            ..ChatRequest::default()
        };
        let body = request_body(&request, "m", 10, "a", Delivery::Streamed).unwrap();
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "go"},
                {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                {"type": "text", "text": "and now?"},
            ]}])
        );
    }

    #[test]
    fn request_max_tokens_overrides_the_default() {
        let request = ChatRequest {
            messages: vec![Message::text(Role::User, "hi")],
            max_tokens: Some(77),
            ..ChatRequest::default()
        };
        let body = request_body(&request, "m", 4096, "a", Delivery::Streamed).unwrap();
        assert_eq!(body["max_tokens"], json!(77));
        assert!(body.get("system").is_none());
    }
}
