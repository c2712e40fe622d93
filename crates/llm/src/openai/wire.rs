//! The OpenAI chat-completions wire format: the request body we send and the
//! streamed chunks we read.

use std::collections::BTreeMap;

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::http::Delivery;
use crate::{ChatRequest, Message, Role};

/// The JSON body of `POST /chat/completions` for `request`, streamed with
/// usage included, or asked for whole (`delivery`). Fields of `request.extra` are merged in last and
/// unchanged, so a caller can pass anything this crate does not model
/// (`top_p`, `seed`, `response_format`, …) — and deliberately override ours.
pub(crate) fn request_body<'a>(
    request: &'a ChatRequest,
    model: &str,
    delivery: Delivery,
) -> RequestBody<'a> {
    let ChatRequest {
        messages,
        tools,
        temperature,
        max_tokens,
        stop,
        extra,
        ..
    } = request;
    let mut own = Map::new();
    own.insert("model".into(), json!(model));
    // What `extra` replaces is not built only to be thrown away: a client's
    // own `messages` can be most of the request.
    if !extra.contains_key("messages") {
        own.insert(
            "messages".into(),
            Value::Array(messages.iter().map(message).collect()),
        );
    }
    if !extra.contains_key("tools") && !tools.is_empty() {
        let tools = tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    }
                })
            })
            .collect();
        own.insert("tools".into(), Value::Array(tools));
    }
    if let Some(temperature) = temperature {
        own.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = max_tokens {
        own.insert("max_tokens".into(), json!(max_tokens));
    }
    if !stop.is_empty() {
        own.insert("stop".into(), json!(stop));
    }
    own.insert("stream".into(), Value::Bool(delivery.is_streamed()));
    if delivery.is_streamed() {
        own.insert("stream_options".into(), json!({ "include_usage": true }));
    }
    RequestBody { own, extra }
}

/// A request body: our fields, then the request's `extra` (which wins),
/// written straight from the request rather than copied into one tree.
pub(crate) struct RequestBody<'a> {
    own: Map<String, Value>,
    extra: &'a BTreeMap<String, Value>,
}

impl Serialize for RequestBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in &self.own {
            if !self.extra.contains_key(key) {
                map.serialize_entry(key, value)?;
            }
        }
        for (key, value) in self.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

fn message(message: &Message) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut wire = Map::new();
    wire.insert("role".into(), json!(role));
    // An assistant message that only calls tools has a null content on the
    // wire; every other message needs a string.
    let content = match (&message.content, message.tool_calls.is_empty()) {
        (Some(content), _) => json!(content),
        (None, false) => Value::Null,
        (None, true) => json!(""),
    };
    wire.insert("content".into(), content);
    if !message.tool_calls.is_empty() {
        let calls = message
            .tool_calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": { "name": call.name, "arguments": call.arguments },
                })
            })
            .collect();
        wire.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(call_id) = &message.tool_call_id {
        wire.insert("tool_call_id".into(), json!(call_id));
    }
    Value::Object(wire)
}

/// One `data:` payload of the stream. Every field is optional because
/// compatible servers differ in what they leave out.
#[derive(Debug, Deserialize)]
pub(crate) struct Chunk {
    #[serde(default)]
    pub choices: Vec<Choice>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    /// Some servers report a failure inside an already started stream.
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Choice {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub delta: Option<Delta>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Delta {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallDelta {
    /// Absent on servers that only ever stream one call at a time.
    #[serde(default)]
    pub index: Option<usize>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
}

/// A whole `chat.completion`: the answer of a server that ignored
/// `stream: true`, or of a request whose `extra` turned streaming off.
#[derive(Debug, Deserialize)]
pub(crate) struct Completion {
    #[serde(default)]
    pub choices: Vec<CompletionChoice>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CompletionChoice {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub message: Option<CompletionMessage>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CompletionMessage {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<CompletionToolCall>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CompletionToolCall {
    #[serde(default)]
    pub id: Option<String>,
    pub function: CompletionFunction,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CompletionFunction {
    pub name: String,
    /// A JSON text per the spec; some servers send the object itself.
    #[serde(default)]
    pub arguments: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolCall, ToolDefinition};

    fn body(request: &ChatRequest, model: &str, delivery: Delivery) -> Value {
        serde_json::to_value(request_body(request, model, delivery)).unwrap()
    }

    fn conversation() -> ChatRequest {
        ChatRequest {
            model: None,
            messages: vec![
                Message::text(Role::System, "be brief"),
                Message::text(Role::User, "read a.txt"),
                Message {
                    role: Role::Assistant,
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"a.txt"}"#.into(),
                    }],
                    tool_call_id: None,
                },
                Message::tool_result("call_1", "hello"),
            ],
            tools: vec![ToolDefinition {
                name: "read_file".into(),
                description: "Reads a file".into(),
                parameters: json!({"type":"object","properties":{"path":{"type":"string"}}}),
            }],
            temperature: Some(0.5),
            max_tokens: Some(100),
            stop: vec!["END".into()],
            extra: BTreeMap::new(),
            headers: BTreeMap::new(),
        }
    }

    #[test]
    fn maps_messages_tools_and_sampling_fields() {
        let body = body(&conversation(), "gpt-test", Delivery::Streamed);
        assert_eq!(
            body,
            json!({
                "model": "gpt-test",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "read a.txt"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}}
                    ]},
                    {"role": "tool", "content": "hello", "tool_call_id": "call_1"},
                ],
                "tools": [{"type": "function", "function": {
                    "name": "read_file", "description": "Reads a file",
                    "parameters": {"type":"object","properties":{"path":{"type":"string"}}}
                }}],
                "temperature": 0.5,
                "max_tokens": 100,
                "stop": ["END"],
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
    }

    #[test]
    fn optional_fields_are_left_out_and_extra_fields_pass_through_unchanged() {
        let mut request = ChatRequest {
            messages: vec![Message::text(Role::User, "hi")],
            ..ChatRequest::default()
        };
        request.extra.insert("seed".into(), json!(42));
        request
            .extra
            .insert("response_format".into(), json!({"type": "json_object"}));
        let body = body(&request, "m", Delivery::Streamed);
        let object = body.as_object().unwrap();
        for absent in ["tools", "temperature", "max_tokens", "stop"] {
            assert!(!object.contains_key(absent), "{absent} sent: {body}");
        }
        assert_eq!(body["seed"], json!(42));
        assert_eq!(body["response_format"], json!({"type": "json_object"}));
        assert_eq!(body["stream"], json!(true));
    }

    #[test]
    fn a_whole_answer_is_asked_for_unstreamed_without_stream_options() {
        let body = body(&conversation(), "m", Delivery::Whole);
        assert_eq!(body["stream"], json!(false));
        assert!(body.get("stream_options").is_none(), "{body}");
    }

    #[test]
    fn chunks_of_compatible_servers_without_optional_fields_parse() {
        let minimal: Chunk = serde_json::from_str(r#"{"choices":[{"delta":{}}]}"#).unwrap();
        assert_eq!(minimal.choices.len(), 1);
        let usage_only: Chunk = serde_json::from_str(
            r#"{"id":"x","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#,
        )
        .unwrap();
        assert_eq!(usage_only.usage.unwrap().completion_tokens, 4);
    }
}
