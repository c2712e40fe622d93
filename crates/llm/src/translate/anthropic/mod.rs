//! The Anthropic Messages format as a server speaks it, for the facade: a
//! client's request (what Claude Code and the Anthropic SDKs send) into a
//! [`ChatRequest`] ([`parse_request`]), and the answer as an Anthropic
//! stream ([`StreamEncoder`]) or one `message` object ([`response_object`]).
//!
//! Two targets, because what survives depends on the upstream:
//! - [`UpstreamFormat::Anthropic`]: the upstream speaks this very format, so
//!   the request passes natively. The [`ChatRequest`] is still built (and
//!   validated), but every field of the body except `model` and `stream`
//!   also goes into `extra`, which the Anthropic backend merges last: system
//!   blocks, `cache_control`, images, thinking, metadata, server tools and
//!   fields added to the API later reach the upstream unchanged.
//! - [`UpstreamFormat::OpenAiChat`]: OpenAI chat completions (OpenAI, Azure,
//!   Copilot, Ollama). Text, tool calls and tool results are mapped; `top_p`
//!   and `tool_choice` are translated; `top_k`, `metadata`, `thinking` and
//!   unknown fields are dropped (nothing there takes them); thinking blocks
//!   of earlier turns are dropped; image and document blocks become a short
//!   placeholder text, since our messages carry text only.

mod encode;
mod estimate;
mod reply;
mod tools;

use serde_json::{Map, Value};

use crate::{ChatRequest, Message, Role, ToolCall};

pub use encode::{StreamEncoder, encode_events};
pub use estimate::{estimate_chat_tokens, estimate_input_tokens};
pub use reply::{response_object, stop_reason};
use tools::{tool_choice, tools};

/// The wire format of the backend a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamFormat {
    Anthropic,
    OpenAiChat,
}

/// A parsed Messages request.
#[derive(Debug, Clone, PartialEq)]
pub struct InboundRequest {
    /// `model` is the body's; the caller replaces it with the routed one.
    pub chat: ChatRequest,
    /// The `model` the client asked for, as it asked.
    pub model: Option<String>,
    pub stream: bool,
    /// What the request carried that the upstream cannot take and was left
    /// out (server tools, block types with no equivalent), each as
    /// `param: what`, for the log. Empty for an Anthropic upstream.
    pub ignored: Vec<String>,
}

/// Why a request body is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboundErrorKind {
    /// A required field is absent.
    Missing,
    /// A field has the wrong type or value.
    Invalid,
}

/// A refused request: which field (a JSON path such as `messages.2.content`)
/// and why, worded for the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{param}: {message}")]
pub struct InboundError {
    pub kind: InboundErrorKind,
    pub param: String,
    pub message: String,
}

impl InboundError {
    fn missing(param: impl Into<String>) -> Self {
        Self {
            kind: InboundErrorKind::Missing,
            param: param.into(),
            message: "this field is required".into(),
        }
    }

    fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: InboundErrorKind::Invalid,
            param: param.into(),
            message: message.into(),
        }
    }
}

/// Anthropic's tool call ids start with `toolu_`, and clients may check: an
/// upstream's own id (OpenAI's `call_…`) gets the prefix on the way to the
/// client ([`client_tool_id`]) and loses it on the way back
/// ([`upstream_tool_id`]), so each side sees ids of its own shape.
const TOOL_ID_PREFIX: &str = "toolu_";

/// The id of an upstream's tool call as the client sees it.
pub fn client_tool_id(id: &str) -> std::borrow::Cow<'_, str> {
    if id.starts_with(TOOL_ID_PREFIX) {
        std::borrow::Cow::Borrowed(id)
    } else {
        std::borrow::Cow::Owned(format!("{TOOL_ID_PREFIX}{id}"))
    }
}

/// The id a client's `tool_use` / `tool_result` carries, as a non-Anthropic
/// upstream gave it.
fn upstream_tool_id(id: String, format: UpstreamFormat) -> String {
    match id.strip_prefix(TOOL_ID_PREFIX) {
        Some(own) if format == UpstreamFormat::OpenAiChat && !own.is_empty() => own.to_owned(),
        _ => id,
    }
}

/// What replaces an image or document block for a text-only upstream.
pub const OMITTED_IMAGE: &str = "[image omitted: this backend takes text only]";
pub const OMITTED_DOCUMENT: &str = "[document omitted: this backend takes text only]";

/// Fields mapped onto [`ChatRequest`]'s own fields: never copied to `extra`.
const MODELLED: [&str; 5] = [
    "model",
    "stream",
    "max_tokens",
    "temperature",
    "stop_sequences",
];

/// Parses a `POST /v1/messages` body for an upstream of `format`.
pub fn parse_request(
    body: &Map<String, Value>,
    format: UpstreamFormat,
) -> Result<InboundRequest, InboundError> {
    parse(body, format, true)
}

pub(super) fn parse(
    body: &Map<String, Value>,
    format: UpstreamFormat,
    require_max_tokens: bool,
) -> Result<InboundRequest, InboundError> {
    let model = match body.get("model") {
        None | Some(Value::Null) => None,
        Some(Value::String(model)) => Some(model.clone()),
        Some(_) => return Err(InboundError::invalid("model", "must be a string")),
    };
    let stream = optional_bool(body, "stream")?.unwrap_or(false);
    let max_tokens = match body.get("max_tokens") {
        None | Some(Value::Null) if require_max_tokens => {
            return Err(InboundError::missing("max_tokens"));
        }
        None | Some(Value::Null) => None,
        Some(value) => Some(positive_count(value, "max_tokens")?),
    };
    let temperature = optional_number(body, "temperature")?;
    optional_number(body, "top_p")?;
    if let Some(top_k) = body.get("top_k").filter(|v| !v.is_null())
        && top_k.as_u64().is_none()
    {
        return Err(InboundError::invalid(
            "top_k",
            "must be a non-negative integer",
        ));
    }
    for name in ["metadata", "thinking"] {
        if let Some(value) = body.get(name).filter(|v| !v.is_null())
            && !value.is_object()
        {
            return Err(InboundError::invalid(name, "must be an object"));
        }
    }
    let stop = stop_sequences(body)?;

    let mut messages = Vec::new();
    let mut ignored = Vec::new();
    if let Some(system) = system_text(body.get("system"), "system")? {
        messages.push(Message::text(Role::System, system));
    }
    let wire_messages = match body.get("messages") {
        None | Some(Value::Null) => return Err(InboundError::missing("messages")),
        Some(Value::Array(list)) if list.is_empty() => {
            return Err(InboundError::invalid(
                "messages",
                "at least one message is required",
            ));
        }
        Some(Value::Array(list)) => list,
        Some(_) => return Err(InboundError::invalid("messages", "must be an array")),
    };
    for (index, message) in wire_messages.iter().enumerate() {
        let param = format!("messages.{index}");
        push_message(message, &param, format, &mut messages, &mut ignored)?;
    }
    let tools = tools(body.get("tools"), format, &mut ignored)?;
    let tool_choice = tool_choice(body.get("tool_choice"))?;

    let mut extra = std::collections::BTreeMap::new();
    match format {
        UpstreamFormat::Anthropic => {
            for (key, value) in body {
                if !MODELLED.contains(&key.as_str()) {
                    extra.insert(key.clone(), value.clone());
                }
            }
        }
        UpstreamFormat::OpenAiChat => {
            if let Some(top_p) = body.get("top_p").filter(|v| !v.is_null()) {
                extra.insert("top_p".to_owned(), top_p.clone());
            }
            // OpenAI refuses `tool_choice` and `parallel_tool_calls` in a
            // request without tools.
            if let Some(choice) = tool_choice.filter(|_| !tools.is_empty()) {
                extra.insert("tool_choice".to_owned(), choice.openai);
                if choice.no_parallel {
                    extra.insert("parallel_tool_calls".to_owned(), Value::Bool(false));
                }
            }
        }
    }

    Ok(InboundRequest {
        chat: ChatRequest {
            model: model.clone(),
            messages,
            tools,
            temperature,
            max_tokens,
            stop,
            extra,
            headers: Default::default(),
        },
        model,
        stream,
        ignored,
    })
}

fn optional_bool(body: &Map<String, Value>, name: &str) -> Result<Option<bool>, InboundError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(value)) => Ok(Some(*value)),
        Some(_) => Err(InboundError::invalid(name, "must be true or false")),
    }
}

fn optional_number(body: &Map<String, Value>, name: &str) -> Result<Option<f64>, InboundError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_f64()
            .map(Some)
            .ok_or_else(|| InboundError::invalid(name, "must be a number")),
    }
}

fn positive_count(value: &Value, name: &str) -> Result<u32, InboundError> {
    match value.as_u64() {
        Some(0) | None => Err(InboundError::invalid(name, "must be a positive integer")),
        // Beyond any model's limit anyway; the upstream judges the rest.
        Some(count) => Ok(u32::try_from(count).unwrap_or(u32::MAX)),
    }
}

fn stop_sequences(body: &Map<String, Value>) -> Result<Vec<String>, InboundError> {
    match body.get("stop_sequences") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(index, item)| {
                item.as_str().map(str::to_owned).ok_or_else(|| {
                    InboundError::invalid(format!("stop_sequences.{index}"), "must be a string")
                })
            })
            .collect(),
        Some(_) => Err(InboundError::invalid(
            "stop_sequences",
            "must be an array of strings",
        )),
    }
}

/// `system` (or a system message's `content`) as a string or as text
/// blocks, joined by a blank line.
fn system_text(system: Option<&Value>, param: &str) -> Result<Option<String>, InboundError> {
    match system {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(Value::Array(blocks)) => {
            let mut texts = Vec::new();
            for (index, block) in blocks.iter().enumerate() {
                let param = format!("{param}.{index}");
                let block = block_object(block, &param)?;
                if block_type(block, &param)? != "text" {
                    return Err(InboundError::invalid(
                        format!("{param}.type"),
                        "system blocks must be text blocks",
                    ));
                }
                texts.push(block_text(block, &param)?);
            }
            let joined = texts.join("\n\n");
            Ok((!joined.is_empty()).then_some(joined))
        }
        Some(_) => Err(InboundError::invalid(
            param,
            "must be a string or an array of text blocks",
        )),
    }
}

fn block_object<'a>(block: &'a Value, param: &str) -> Result<&'a Map<String, Value>, InboundError> {
    block
        .as_object()
        .ok_or_else(|| InboundError::invalid(param, "must be a content block object"))
}

fn block_type<'a>(block: &'a Map<String, Value>, param: &str) -> Result<&'a str, InboundError> {
    match block.get("type") {
        Some(Value::String(kind)) => Ok(kind),
        None => Err(InboundError::missing(format!("{param}.type"))),
        Some(_) => Err(InboundError::invalid(
            format!("{param}.type"),
            "must be a string",
        )),
    }
}

fn block_text(block: &Map<String, Value>, param: &str) -> Result<String, InboundError> {
    required_string(block, "text", param)
}

fn required_string(
    object: &Map<String, Value>,
    field: &str,
    param: &str,
) -> Result<String, InboundError> {
    match object.get(field) {
        Some(Value::String(text)) => Ok(text.clone()),
        None | Some(Value::Null) => Err(InboundError::missing(format!("{param}.{field}"))),
        Some(_) => Err(InboundError::invalid(
            format!("{param}.{field}"),
            "must be a string",
        )),
    }
}

/// One wire message as our messages: a user message's tool results become
/// tool messages (first, in order: OpenAI wants a call's answer right after
/// the call), then its text as one user message. A system message in the
/// conversation (Claude Code sends them) stays a system message at its
/// place.
fn push_message(
    message: &Value,
    param: &str,
    format: UpstreamFormat,
    out: &mut Vec<Message>,
    ignored: &mut Vec<String>,
) -> Result<(), InboundError> {
    let message = message
        .as_object()
        .ok_or_else(|| InboundError::invalid(param, "must be an object"))?;
    let role = match message.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("system") => {
            let content_param = format!("{param}.content");
            if message.get("content").is_none_or(Value::is_null) {
                return Err(InboundError::missing(content_param));
            }
            if let Some(text) = system_text(message.get("content"), &content_param)? {
                out.push(Message::text(Role::System, text));
            }
            return Ok(());
        }
        Some(_) => {
            return Err(InboundError::invalid(
                format!("{param}.role"),
                "must be \"user\", \"assistant\" or \"system\"",
            ));
        }
        None if message.get("role").is_none() => {
            return Err(InboundError::missing(format!("{param}.role")));
        }
        None => {
            return Err(InboundError::invalid(
                format!("{param}.role"),
                "must be a string",
            ));
        }
    };
    let content_param = format!("{param}.content");
    let blocks = match message.get("content") {
        Some(Value::String(text)) => {
            out.push(Message::text(role, text.clone()));
            return Ok(());
        }
        Some(Value::Array(blocks)) => blocks,
        None | Some(Value::Null) => return Err(InboundError::missing(content_param)),
        Some(_) => {
            return Err(InboundError::invalid(
                content_param,
                "must be a string or an array of content blocks",
            ));
        }
    };
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let param = format!("{content_param}.{index}");
        let block = block_object(block, &param)?;
        match (block_type(block, &param)?, role) {
            ("text", _) => texts.push(block_text(block, &param)?),
            ("image", _) => texts.push(OMITTED_IMAGE.to_owned()),
            ("document", _) => texts.push(OMITTED_DOCUMENT.to_owned()),
            ("tool_use", Role::Assistant) => calls.push(tool_use(block, &param, format)?),
            ("tool_result", Role::User) => {
                results.push(tool_result(block, &param, format, ignored)?)
            }
            // Reasoning of earlier turns only means something to the model
            // that wrote it (and its signature to Anthropic).
            ("thinking" | "redacted_thinking", Role::Assistant) => {}
            (kind @ ("tool_use" | "tool_result"), _) => {
                return Err(InboundError::invalid(
                    format!("{param}.type"),
                    format!(
                        "a {kind} block belongs in {} message",
                        if kind == "tool_use" {
                            "an assistant"
                        } else {
                            "a user"
                        }
                    ),
                ));
            }
            ("tool_reference", _) => texts.push(tool_reference(block, &param)?),
            // The native upstream knows block types we do not; another
            // cannot take them (server tool results, search results, …).
            (kind, _) => {
                if format != UpstreamFormat::Anthropic {
                    ignored.push(format!("{param}: a {kind:?} block"));
                }
            }
        }
    }
    out.extend(results);
    let text = texts.join("\n\n");
    match role {
        Role::Assistant if !calls.is_empty() => out.push(Message {
            role,
            content: (!text.is_empty()).then_some(text),
            tool_calls: calls,
            tool_call_id: None,
        }),
        // A user turn of tool results only has no text of its own.
        _ if text.is_empty() && !blocks.is_empty() => {}
        _ => out.push(Message::text(role, text)),
    }
    Ok(())
}

fn tool_use(
    block: &Map<String, Value>,
    param: &str,
    format: UpstreamFormat,
) -> Result<ToolCall, InboundError> {
    let id = upstream_tool_id(required_string(block, "id", param)?, format);
    let name = required_string(block, "name", param)?;
    let arguments = match block.get("input") {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(input @ Value::Object(_)) => input.to_string(),
        Some(_) => {
            return Err(InboundError::invalid(
                format!("{param}.input"),
                "must be an object",
            ));
        }
    };
    Ok(ToolCall {
        id,
        name,
        arguments,
    })
}

/// A `tool_reference` block (Claude Code's tool search: the named tool is
/// now loaded) as text the model can act on: the tool itself is among the
/// functions sent, since `defer_loading` has no equivalent elsewhere.
fn tool_reference(block: &Map<String, Value>, param: &str) -> Result<String, InboundError> {
    let name = required_string(block, "tool_name", param)?;
    Ok(format!("[tool {name} is available: call it by that name]"))
}

/// A `tool_result` block as a tool message. OpenAI's tool messages have no
/// error flag, so a failed call's result says so in its text.
fn tool_result(
    block: &Map<String, Value>,
    param: &str,
    format: UpstreamFormat,
    ignored: &mut Vec<String>,
) -> Result<Message, InboundError> {
    let call_id = upstream_tool_id(required_string(block, "tool_use_id", param)?, format);
    let content_param = format!("{param}.content");
    let mut text = match block.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::new();
            for (index, part) in parts.iter().enumerate() {
                let param = format!("{content_param}.{index}");
                let part = block_object(part, &param)?;
                match block_type(part, &param)? {
                    "text" => texts.push(block_text(part, &param)?),
                    "image" => texts.push(OMITTED_IMAGE.to_owned()),
                    "document" => texts.push(OMITTED_DOCUMENT.to_owned()),
                    "tool_reference" => texts.push(tool_reference(part, &param)?),
                    kind => {
                        if format != UpstreamFormat::Anthropic {
                            ignored.push(format!("{param}: a {kind:?} block"));
                        }
                    }
                }
            }
            texts.join("\n\n")
        }
        Some(_) => {
            return Err(InboundError::invalid(
                content_param,
                "must be a string or an array of content blocks",
            ));
        }
    };
    if block.get("is_error").and_then(Value::as_bool) == Some(true) {
        text = format!("[tool error] {text}");
    }
    Ok(Message::tool_result(call_id, text))
}

#[cfg(test)]
mod tests;
