//! Input token estimates: for `count_tokens` and for `message_start`'s
//! `usage.input_tokens` when the upstream says nothing before the first
//! token (OpenAI-compatible upstreams report usage at the end only).

use serde_json::{Map, Value};

use super::{InboundError, OMITTED_IMAGE, UpstreamFormat, parse};
use crate::ChatRequest;

/// An estimate of the input tokens of a `POST /v1/messages/count_tokens`
/// body (a Messages request without `max_tokens`); see
/// [`estimate_chat_tokens`].
pub fn estimate_input_tokens(body: &Map<String, Value>) -> Result<u64, InboundError> {
    let request = parse(body, UpstreamFormat::OpenAiChat, false)?;
    Ok(estimate_chat_tokens(&request.chat))
}

/// About four characters a token over the text, tool calls and tool
/// schemas, four tokens of framing per message, and a flat 1,600 per image
/// (Anthropic's cap for one image).
pub fn estimate_chat_tokens(chat: &ChatRequest) -> u64 {
    let mut chars = 0usize;
    let mut images = 0u64;
    for message in &chat.messages {
        if let Some(text) = &message.content {
            let omitted = text.matches(OMITTED_IMAGE).count();
            chars += text.len().saturating_sub(omitted * OMITTED_IMAGE.len());
            images += omitted as u64;
        }
        for call in &message.tool_calls {
            chars += call.name.len() + call.arguments.len();
        }
    }
    for tool in &chat.tools {
        chars += tool.name.len() + tool.description.len() + tool.parameters.to_string().len();
    }
    let messages = chat.messages.len() as u64;
    (chars as u64).div_ceil(4) + 4 * messages + 1_600 * images
}
