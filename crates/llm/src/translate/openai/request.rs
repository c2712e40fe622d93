//! A client's chat-completions request body, checked and normalized.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::{ChatRequest, Message, Role, ToolCall, ToolDefinition};

/// Why a request body is refused: OpenAI's `code` and `param` (the field
/// at fault, in OpenAI's notation: `messages[2].role`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{param}: {message}")]
pub struct InboundError {
    /// `missing_required_parameter`, `invalid_type`, `invalid_value`,
    /// `unsupported_value` or `unsupported_content`.
    pub code: &'static str,
    pub param: String,
    pub message: String,
}

impl InboundError {
    pub(in crate::translate) fn missing(param: impl Into<String>) -> Self {
        let param = param.into();
        Self {
            code: "missing_required_parameter",
            message: format!("missing required parameter: '{param}'"),
            param,
        }
    }

    pub(in crate::translate) fn invalid_type(
        param: impl Into<String>,
        expected: &str,
        got: &Value,
    ) -> Self {
        let param = param.into();
        Self {
            code: "invalid_type",
            message: format!(
                "invalid type for '{param}': expected {expected}, got {}",
                bridge_protocol::json_kind(got)
            ),
            param,
        }
    }

    pub(in crate::translate) fn invalid_value(
        param: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            code: "invalid_value",
            param: param.into(),
            message: message.into(),
        }
    }
}

/// Which name the client gave the output limit: reasoning models refuse
/// `max_tokens`, so the name is kept for upstreams of the same format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LimitField {
    MaxTokens,
    MaxCompletionTokens,
}

/// A checked request: the normalized [`ChatRequest`] (its `model` is the
/// client's model string, `extra` the fields this crate does not model)
/// and how the client wants the answer.
#[derive(Debug, Clone)]
pub struct InboundRequest {
    pub request: ChatRequest,
    pub stream: bool,
    /// `stream_options.include_usage`: a final chunk with the usage.
    pub include_usage: bool,
    raw_messages: Vec<Value>,
    raw_tools: Option<Value>,
    limit_field: LimitField,
    /// The first part of the request `request` cannot carry (an image, a
    /// tool that is not a function): `(param, what)`.
    beyond_normalized: Option<(String, String)>,
}

/// Fields taken out of the body into typed places; every other field is
/// kept in `extra`.
const MODELLED: &[&str] = &[
    "model",
    "messages",
    "tools",
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "stream",
    "stream_options",
    "n",
];

/// Checks and normalizes a request body. Every refusal names the field at
/// fault.
pub fn parse_request(mut body: Map<String, Value>) -> Result<InboundRequest, InboundError> {
    let model = match body.get("model") {
        None | Some(Value::Null) => None,
        Some(Value::String(model)) => Some(model.clone()),
        Some(other) => return Err(InboundError::invalid_type("model", "a string", other)),
    };
    let raw_messages = match body.get_mut("messages").map(Value::take) {
        None | Some(Value::Null) => return Err(InboundError::missing("messages")),
        Some(Value::Array(messages)) => messages,
        Some(other) => return Err(InboundError::invalid_type("messages", "an array", &other)),
    };
    if raw_messages.is_empty() {
        return Err(InboundError::invalid_value(
            "messages",
            "'messages' must contain at least one message",
        ));
    }
    let mut beyond_normalized = None;
    let messages = raw_messages
        .iter()
        .enumerate()
        .map(|(index, message)| parse_message(index, message, &mut beyond_normalized))
        .collect::<Result<Vec<_>, _>>()?;
    let raw_tools = body
        .get_mut("tools")
        .map(Value::take)
        .filter(|tools| !tools.is_null());
    let tools = match &raw_tools {
        None => Vec::new(),
        Some(tools) => parse_tools(tools, &mut beyond_normalized)?,
    };
    let temperature = match body.get("temperature") {
        None | Some(Value::Null) => None,
        Some(Value::Number(number)) => number.as_f64(),
        Some(other) => return Err(InboundError::invalid_type("temperature", "a number", other)),
    };
    let (max_tokens, limit_field) = match (
        token_limit(&body, "max_completion_tokens")?,
        token_limit(&body, "max_tokens")?,
    ) {
        (Some(limit), _) => (Some(limit), LimitField::MaxCompletionTokens),
        (None, limit) => (limit, LimitField::MaxTokens),
    };
    let stop = match body.get("stop") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(stop)) => vec![stop.clone()],
        Some(Value::Array(stops)) => stops
            .iter()
            .enumerate()
            .map(|(index, stop)| match stop {
                Value::String(stop) => Ok(stop.clone()),
                other => Err(InboundError::invalid_type(
                    format!("stop[{index}]"),
                    "a string",
                    other,
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(InboundError::invalid_type(
                "stop",
                "a string or an array of strings",
                other,
            ));
        }
    };
    let stream = match body.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(stream)) => *stream,
        Some(other) => return Err(InboundError::invalid_type("stream", "a boolean", other)),
    };
    let include_usage = match body.get("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(options)) => match options.get("include_usage") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(include)) => *include,
            Some(other) => {
                return Err(InboundError::invalid_type(
                    "stream_options.include_usage",
                    "a boolean",
                    other,
                ));
            }
        },
        Some(other) => {
            return Err(InboundError::invalid_type(
                "stream_options",
                "an object",
                other,
            ));
        }
    };
    match body.get("n") {
        None | Some(Value::Null) => {}
        Some(n) if n.as_u64() == Some(1) => {}
        Some(Value::Number(_)) => {
            // Every backend streams one choice; asking for more would be
            // billed for answers nobody receives.
            return Err(InboundError {
                code: "unsupported_value",
                param: "n".into(),
                message: "only one choice per request is supported ('n' must be 1)".into(),
            });
        }
        Some(other) => return Err(InboundError::invalid_type("n", "an integer", other)),
    }
    let extra: BTreeMap<String, Value> = body
        .into_iter()
        .filter(|(key, _)| !MODELLED.contains(&key.as_str()))
        .collect();
    Ok(InboundRequest {
        request: ChatRequest {
            model,
            messages,
            tools,
            temperature,
            max_tokens,
            stop,
            extra,
            headers: Default::default(),
        },
        stream,
        include_usage,
        raw_messages,
        raw_tools,
        limit_field,
        beyond_normalized,
    })
}

fn token_limit(body: &Map<String, Value>, field: &str) -> Result<Option<u32>, InboundError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => match number.as_u64() {
            Some(limit) => Ok(Some(u32::try_from(limit).unwrap_or(u32::MAX))),
            None => Err(InboundError::invalid_value(
                field,
                format!("'{field}' must be a non-negative integer, not {number}"),
            )),
        },
        Some(other) => Err(InboundError::invalid_type(field, "an integer", other)),
    }
}

fn parse_message(
    index: usize,
    message: &Value,
    beyond_normalized: &mut Option<(String, String)>,
) -> Result<Message, InboundError> {
    let at = format!("messages[{index}]");
    let Value::Object(fields) = message else {
        return Err(InboundError::invalid_type(&at, "an object", message));
    };
    let role = match fields.get("role") {
        None | Some(Value::Null) => return Err(InboundError::missing(format!("{at}.role"))),
        Some(Value::String(role)) => match role.as_str() {
            // `developer` is what OpenAI's reasoning models call the system.
            "system" | "developer" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => {
                return Err(InboundError::invalid_value(
                    format!("{at}.role"),
                    format!(
                        "unsupported role {other:?}: use system, developer, user, assistant or tool"
                    ),
                ));
            }
        },
        Some(other) => {
            return Err(InboundError::invalid_type(
                format!("{at}.role"),
                "a string",
                other,
            ));
        }
    };
    let content_param = format!("{at}.content");
    let content = match fields.get("content") {
        None | Some(Value::Null) if role == Role::Assistant => None,
        None | Some(Value::Null) => return Err(InboundError::missing(content_param)),
        Some(content) => Some(content_text(&content_param, content, beyond_normalized)?),
    };
    let tool_calls = match fields.get("tool_calls") {
        Some(calls) if role == Role::Assistant && !calls.is_null() => {
            parse_tool_calls(&format!("{at}.tool_calls"), calls)?
        }
        _ => Vec::new(),
    };
    let tool_call_id = match (role, fields.get("tool_call_id")) {
        (Role::Tool, Some(Value::String(id))) => Some(id.clone()),
        (Role::Tool, None | Some(Value::Null)) => {
            return Err(InboundError::missing(format!("{at}.tool_call_id")));
        }
        (Role::Tool, Some(other)) => {
            return Err(InboundError::invalid_type(
                format!("{at}.tool_call_id"),
                "a string",
                other,
            ));
        }
        _ => None,
    };
    Ok(Message {
        role,
        content,
        tool_calls,
        tool_call_id,
    })
}

/// A message's text: a string, or the text (and refusal) parts of an
/// array joined by newlines. Other parts (images, audio, files) are noted
/// in `beyond_normalized`; only upstreams of this format receive them.
fn content_text(
    param: &str,
    content: &Value,
    beyond_normalized: &mut Option<(String, String)>,
) -> Result<String, InboundError> {
    let parts = match content {
        Value::String(text) => return Ok(text.clone()),
        Value::Array(parts) => parts,
        other => {
            return Err(InboundError::invalid_type(
                param,
                "a string or an array of content parts",
                other,
            ));
        }
    };
    let mut texts = Vec::with_capacity(parts.len());
    for (index, part) in parts.iter().enumerate() {
        let at = format!("{param}[{index}]");
        let Some(kind) = part.get("type").and_then(Value::as_str) else {
            return Err(InboundError::missing(format!("{at}.type")));
        };
        let text_field = match kind {
            "text" => "text",
            "refusal" => "refusal",
            other => {
                if beyond_normalized.is_none() {
                    *beyond_normalized = Some((at, format!("a content part of type {other:?}")));
                }
                continue;
            }
        };
        match part.get(text_field) {
            Some(Value::String(text)) => texts.push(text.as_str()),
            None | Some(Value::Null) => {
                return Err(InboundError::missing(format!("{at}.{text_field}")));
            }
            Some(other) => {
                return Err(InboundError::invalid_type(
                    format!("{at}.{text_field}"),
                    "a string",
                    other,
                ));
            }
        }
    }
    Ok(texts.join("\n"))
}

fn required_string<'a>(object: &'a Value, at: &str, field: &str) -> Result<&'a str, InboundError> {
    match object.get(field) {
        Some(Value::String(text)) => Ok(text),
        None | Some(Value::Null) => Err(InboundError::missing(format!("{at}.{field}"))),
        Some(other) => Err(InboundError::invalid_type(
            format!("{at}.{field}"),
            "a string",
            other,
        )),
    }
}

fn parse_tool_calls(param: &str, calls: &Value) -> Result<Vec<ToolCall>, InboundError> {
    let Value::Array(calls) = calls else {
        return Err(InboundError::invalid_type(param, "an array", calls));
    };
    calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let at = format!("{param}[{index}]");
            if !call.is_object() {
                return Err(InboundError::invalid_type(&at, "an object", call));
            }
            let id = required_string(call, &at, "id")?;
            let function_at = format!("{at}.function");
            let function = match call.get("function") {
                Some(function @ Value::Object(_)) => function,
                None | Some(Value::Null) => return Err(InboundError::missing(function_at)),
                Some(other) => {
                    return Err(InboundError::invalid_type(function_at, "an object", other));
                }
            };
            let name = required_string(function, &function_at, "name")?;
            // The format says a JSON text; some clients send the object.
            let arguments = match function.get("arguments") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
            };
            Ok(ToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
                arguments,
            })
        })
        .collect()
}

fn parse_tools(
    tools: &Value,
    beyond_normalized: &mut Option<(String, String)>,
) -> Result<Vec<ToolDefinition>, InboundError> {
    let Value::Array(tools) = tools else {
        return Err(InboundError::invalid_type("tools", "an array", tools));
    };
    let mut definitions = Vec::with_capacity(tools.len());
    for (index, tool) in tools.iter().enumerate() {
        let at = format!("tools[{index}]");
        if !tool.is_object() {
            return Err(InboundError::invalid_type(&at, "an object", tool));
        }
        let kind = required_string(tool, &at, "type")?;
        if kind != "function" {
            if beyond_normalized.is_none() {
                *beyond_normalized = Some((at, format!("a tool of type {kind:?}")));
            }
            continue;
        }
        let function_at = format!("{at}.function");
        let function = match tool.get("function") {
            Some(function @ Value::Object(_)) => function,
            None | Some(Value::Null) => return Err(InboundError::missing(function_at)),
            Some(other) => return Err(InboundError::invalid_type(function_at, "an object", other)),
        };
        let name = required_string(function, &function_at, "name")?;
        let description = match function.get("description") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(other) => {
                return Err(InboundError::invalid_type(
                    format!("{function_at}.description"),
                    "a string",
                    other,
                ));
            }
        };
        // A function without parameters takes none.
        let parameters = match function.get("parameters") {
            None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
            Some(schema @ Value::Object(_)) => schema.clone(),
            Some(other) => {
                return Err(InboundError::invalid_type(
                    format!("{function_at}.parameters"),
                    "an object (a JSON Schema)",
                    other,
                ));
            }
        };
        definitions.push(ToolDefinition {
            name: name.to_owned(),
            description,
            parameters,
        });
    }
    Ok(definitions)
}

impl InboundRequest {
    /// The request for an upstream speaking this same format: the client's
    /// `messages` and `tools` exactly as sent (content parts, `name`,
    /// `strict` and all) and every unknown field unchanged, all through
    /// `extra`, which such backends merge into their body last.
    /// It takes the request apart rather than copy the conversation.
    pub fn native(self) -> ChatRequest {
        let mut request = self.request;
        request
            .extra
            .insert("messages".into(), Value::Array(self.raw_messages));
        if let Some(tools) = self.raw_tools {
            request.extra.insert("tools".into(), tools);
        }
        if self.limit_field == LimitField::MaxCompletionTokens
            && let Some(limit) = request.max_tokens.take()
        {
            request
                .extra
                .insert("max_completion_tokens".into(), json!(limit));
        }
        request
    }

    /// The part of the request only an upstream of this same format could
    /// take (an image, a non-function tool), as `(param, what)`.
    pub fn beyond_normalized(&self) -> Option<(&str, &str)> {
        self.beyond_normalized
            .as_ref()
            .map(|(param, what)| (param.as_str(), what.as_str()))
    }

    /// An error for [`Self::beyond_normalized`], naming the backend that
    /// cannot take it.
    pub fn refuse_beyond_normalized(&self, backend: &str) -> Option<InboundError> {
        self.beyond_normalized().map(|(param, what)| InboundError {
            code: "unsupported_content",
            param: param.to_owned(),
            message: format!(
                "{what} cannot be sent to the backend {backend:?}, which does not speak \
                 OpenAI's format"
            ),
        })
    }
}

#[cfg(test)]
mod tests;
