//! A client's `POST /v1/responses` body (what Codex sends), checked and
//! normalized into a [`ChatRequest`].

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::super::anthropic::OMITTED_IMAGE;
use super::super::openai::InboundError;
use crate::{ChatRequest, Message, Role, ToolCall, ToolDefinition};

/// What replaces an input file for a backend that takes text only.
pub const OMITTED_FILE: &str = "[file omitted: this backend takes text only]";

/// A checked Responses request.
#[derive(Debug, Clone)]
pub struct InboundRequest {
    /// Its messages are the instructions (as a system message) and then
    /// the input; `extra` holds nothing yet (see `openai_extra`).
    pub chat: ChatRequest,
    /// The `model` the client asked for.
    pub model: Option<String>,
    pub stream: bool,
    /// Whether the client wants the response kept for a later
    /// `previous_response_id` (OpenAI's default: yes).
    pub store: bool,
    pub previous_response_id: Option<String>,
    /// Fields that only an OpenAI chat-completions upstream takes
    /// (`tool_choice`, `parallel_tool_calls`, `top_p`).
    pub openai_extra: BTreeMap<String, Value>,
    /// Names of the client's custom (freeform) tools: a call of one is
    /// answered as a `custom_tool_call` with its `input` text.
    pub custom_tools: Vec<String>,
    /// What was left out, as `param: what`, for the debug log.
    pub ignored: Vec<String>,
    /// Where the input starts in `chat.messages` (after the instructions).
    input_start: usize,
}

impl InboundRequest {
    /// Puts a stored conversation (see [`InboundRequest::conversation`])
    /// between the instructions and the new input: `previous_response_id`.
    /// Instructions are not carried over, as OpenAI does.
    pub fn continue_from(&mut self, history: Vec<Message>) {
        self.chat
            .messages
            .splice(self.input_start..self.input_start, history);
    }

    /// The conversation as a later request continues it: every message
    /// but the instructions.
    pub fn conversation(&self) -> &[Message] {
        &self.chat.messages[self.input_start..]
    }
}

/// Top-level fields that are read into the request; the others are left
/// out and named in `ignored`.
const MODELLED: &[&str] = &[
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "max_output_tokens",
    "temperature",
    "top_p",
    "stream",
    "store",
    "previous_response_id",
];

/// Checks and normalizes a request body. Every refusal names the field at
/// fault, in OpenAI's notation (`input[2].call_id`).
pub fn parse_request(body: &Map<String, Value>) -> Result<InboundRequest, InboundError> {
    let model = optional_string(body, "model")?;
    let stream = optional_bool(body, "stream")?.unwrap_or(false);
    let store = optional_bool(body, "store")?.unwrap_or(true);
    let previous_response_id = optional_string(body, "previous_response_id")?;
    let mut ignored = Vec::new();

    let mut messages = Vec::new();
    if let Some(instructions) = optional_string(body, "instructions")?
        && !instructions.is_empty()
    {
        messages.push(Message::text(Role::System, instructions));
    }
    let input_start = messages.len();
    match body.get("input") {
        None | Some(Value::Null) => return Err(InboundError::missing("input")),
        Some(Value::String(text)) => messages.push(Message::text(Role::User, text.clone())),
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                push_item(
                    item,
                    &format!("input[{index}]"),
                    &mut messages,
                    &mut ignored,
                )?;
            }
        }
        Some(other) => {
            return Err(InboundError::invalid_type(
                "input",
                "a string or an array",
                other,
            ));
        }
    }

    let mut custom_tools = Vec::new();
    let tools = tools(body.get("tools"), &mut custom_tools, &mut ignored)?;
    let mut openai_extra = BTreeMap::new();
    if !tools.is_empty() {
        if let Some(choice) = tool_choice(body.get("tool_choice"), &mut ignored)? {
            openai_extra.insert("tool_choice".to_owned(), choice);
        }
        if let Some(parallel) = optional_bool(body, "parallel_tool_calls")? {
            openai_extra.insert("parallel_tool_calls".to_owned(), Value::Bool(parallel));
        }
    }
    let temperature = optional_number(body, "temperature")?;
    if let Some(top_p) = optional_number(body, "top_p")? {
        openai_extra.insert("top_p".to_owned(), json!(top_p));
    }
    let max_tokens = match body.get("max_output_tokens") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_u64() {
            Some(count) if count > 0 => Some(u32::try_from(count).unwrap_or(u32::MAX)),
            _ => {
                return Err(InboundError::invalid_value(
                    "max_output_tokens",
                    "max_output_tokens must be a positive integer",
                ));
            }
        },
    };
    for key in body.keys() {
        if !MODELLED.contains(&key.as_str()) {
            ignored.push(format!("{key}: not used"));
        }
    }

    Ok(InboundRequest {
        chat: ChatRequest {
            model: model.clone(),
            messages,
            tools,
            temperature,
            max_tokens,
            ..ChatRequest::default()
        },
        model,
        stream,
        store,
        previous_response_id,
        openai_extra,
        custom_tools,
        ignored,
        input_start,
    })
}

fn optional_string(body: &Map<String, Value>, name: &str) -> Result<Option<String>, InboundError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(InboundError::invalid_type(name, "a string", other)),
    }
}

fn optional_bool(body: &Map<String, Value>, name: &str) -> Result<Option<bool>, InboundError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(other) => Err(InboundError::invalid_type(name, "a boolean", other)),
    }
}

fn optional_number(body: &Map<String, Value>, name: &str) -> Result<Option<f64>, InboundError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_f64()
            .map(Some)
            .ok_or_else(|| InboundError::invalid_type(name, "a number", value)),
    }
}

fn required_string(
    item: &Map<String, Value>,
    field: &str,
    param: &str,
) -> Result<String, InboundError> {
    match item.get(field) {
        Some(Value::String(text)) => Ok(text.clone()),
        None | Some(Value::Null) => Err(InboundError::missing(format!("{param}.{field}"))),
        Some(other) => Err(InboundError::invalid_type(
            format!("{param}.{field}"),
            "a string",
            other,
        )),
    }
}

/// One input item as messages. Function calls join the assistant message
/// before them (chat completions wants one assistant message carrying the
/// calls, then one tool message per result).
fn push_item(
    item: &Value,
    param: &str,
    out: &mut Vec<Message>,
    ignored: &mut Vec<String>,
) -> Result<(), InboundError> {
    let Some(item) = item.as_object() else {
        return Err(InboundError::invalid_type(param, "an object", item));
    };
    let kind = match item.get("type") {
        // An "easy" input message: `{role, content}` without a type.
        None | Some(Value::Null) => "message",
        Some(Value::String(kind)) => kind.as_str(),
        Some(other) => {
            return Err(InboundError::invalid_type(
                format!("{param}.type"),
                "a string",
                other,
            ));
        }
    };
    match kind {
        "message" => {
            let role = match item.get("role").and_then(Value::as_str) {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                Some("system" | "developer") => Role::System,
                Some(_) => {
                    return Err(InboundError::invalid_value(
                        format!("{param}.role"),
                        "role must be one of 'user', 'assistant', 'system', 'developer'",
                    ));
                }
                None => return Err(InboundError::missing(format!("{param}.role"))),
            };
            let text = content_text(item.get("content"), &format!("{param}.content"), ignored)?;
            out.push(Message::text(role, text));
        }
        "function_call" | "custom_tool_call" => {
            let call_id = required_string(item, "call_id", param)?;
            let name = required_string(item, "name", param)?;
            let arguments = if kind == "function_call" {
                required_string(item, "arguments", param)?
            } else {
                json!({"input": required_string(item, "input", param)?}).to_string()
            };
            let call = ToolCall {
                id: call_id,
                name,
                arguments,
            };
            match out.last_mut() {
                Some(last) if last.role == Role::Assistant => last.tool_calls.push(call),
                _ => out.push(Message {
                    role: Role::Assistant,
                    content: None,
                    tool_calls: vec![call],
                    tool_call_id: None,
                }),
            }
        }
        "function_call_output" | "custom_tool_call_output" => {
            let call_id = required_string(item, "call_id", param)?;
            let output = content_text(item.get("output"), &format!("{param}.output"), ignored)?;
            out.push(Message::tool_result(call_id, output));
        }
        // Reasoning belongs to the model that wrote it (and is encrypted);
        // other item types (web search calls, item references, …) have no
        // chat-completions equivalent.
        other => ignored.push(format!("{param}: a {other:?} item")),
    }
    Ok(())
}

/// A message's or an output's content: a string, or parts whose text is
/// joined by a blank line (images and files as a placeholder).
fn content_text(
    content: Option<&Value>,
    param: &str,
    ignored: &mut Vec<String>,
) -> Result<String, InboundError> {
    let parts = match content {
        None | Some(Value::Null) => return Ok(String::new()),
        Some(Value::String(text)) => return Ok(text.clone()),
        Some(Value::Array(parts)) => parts,
        Some(other) => {
            return Err(InboundError::invalid_type(
                param,
                "a string or an array",
                other,
            ));
        }
    };
    let mut texts = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        let param = format!("{param}[{index}]");
        let Some(part) = part.as_object() else {
            return Err(InboundError::invalid_type(param, "an object", part));
        };
        match part.get("type").and_then(Value::as_str) {
            Some("input_text" | "output_text" | "text") => {
                texts.push(required_string(part, "text", &param)?);
            }
            Some("refusal") => texts.push(required_string(part, "refusal", &param)?),
            Some("input_image") => {
                ignored.push(format!("{param}: an image"));
                texts.push(OMITTED_IMAGE.to_owned());
            }
            Some("input_file") => {
                ignored.push(format!("{param}: a file"));
                texts.push(OMITTED_FILE.to_owned());
            }
            Some(other) => ignored.push(format!("{param}: a {other:?} part")),
            None => return Err(InboundError::missing(format!("{param}.type"))),
        }
    }
    Ok(texts.join("\n\n"))
}

/// Function tools as they are; custom (freeform) tools as a function with
/// one string argument, `input`; every other kind (`web_search`, Codex's
/// `namespace`, file search, …) left out: no chat-completions backend runs
/// them.
fn tools(
    tools: Option<&Value>,
    custom_tools: &mut Vec<String>,
    ignored: &mut Vec<String>,
) -> Result<Vec<ToolDefinition>, InboundError> {
    let list = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(other) => return Err(InboundError::invalid_type("tools", "an array", other)),
    };
    let mut definitions = Vec::new();
    for (index, tool) in list.iter().enumerate() {
        let param = format!("tools[{index}]");
        let Some(tool) = tool.as_object() else {
            return Err(InboundError::invalid_type(param, "an object", tool));
        };
        let description = match tool.get("description") {
            Some(Value::String(text)) => text.clone(),
            _ => String::new(),
        };
        match tool.get("type").and_then(Value::as_str) {
            Some("function") => {
                let name = required_string(tool, "name", &param)?;
                let parameters = match tool.get("parameters") {
                    Some(schema @ Value::Object(_)) => schema.clone(),
                    None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
                    Some(other) => {
                        return Err(InboundError::invalid_type(
                            format!("{param}.parameters"),
                            "an object",
                            other,
                        ));
                    }
                };
                definitions.push(ToolDefinition {
                    name,
                    description,
                    parameters,
                });
            }
            Some("custom") => {
                let name = required_string(tool, "name", &param)?;
                custom_tools.push(name.clone());
                definitions.push(ToolDefinition {
                    name,
                    description: format!(
                        "{description}\n\nPut the tool's whole input, as free text, in `input`."
                    ),
                    parameters: json!({
                        "type": "object",
                        "properties": {"input": {"type": "string"}},
                        "required": ["input"],
                    }),
                });
            }
            Some(kind) => {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or(kind);
                ignored.push(format!("{param}: the {kind:?} tool {name:?}"));
            }
            None => return Err(InboundError::missing(format!("{param}.type"))),
        }
    }
    Ok(definitions)
}

/// `tool_choice` in chat-completions terms; a choice of a tool that was
/// left out is left out too.
fn tool_choice(
    choice: Option<&Value>,
    ignored: &mut Vec<String>,
) -> Result<Option<Value>, InboundError> {
    match choice {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(mode)) if matches!(mode.as_str(), "auto" | "none" | "required") => {
            Ok(Some(json!(mode)))
        }
        Some(Value::String(_)) => Err(InboundError::invalid_value(
            "tool_choice",
            "tool_choice must be 'auto', 'none', 'required' or an object",
        )),
        Some(Value::Object(choice)) => match choice.get("type").and_then(Value::as_str) {
            Some("function" | "custom") => {
                let name = required_string(choice, "name", "tool_choice")?;
                Ok(Some(
                    json!({"type": "function", "function": {"name": name}}),
                ))
            }
            other => {
                ignored.push(format!("tool_choice: {other:?}"));
                Ok(None)
            }
        },
        Some(other) => Err(InboundError::invalid_type(
            "tool_choice",
            "a string or an object",
            other,
        )),
    }
}
