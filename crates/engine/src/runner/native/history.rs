//! A replayed conversation as chat messages.

use bridge_llm::{Message, Role, ToolCall};
use serde_json::Value;

use crate::log::{ConversationItem, Replayed};

/// The messages of a replayed session, ready to continue: user prompts,
/// assistant messages with their tool calls, and one tool result per call
/// (the replay already answered calls a crash cut short). The system prompt
/// is not part of it: a resumed run renders a fresh one, so transforms
/// registered since apply.
pub fn messages_from_replayed(replayed: &Replayed) -> Vec<Message> {
    replayed
        .conversation
        .iter()
        .map(|item| match item {
            ConversationItem::User { content } => Message::text(Role::User, content.clone()),
            ConversationItem::Assistant {
                content,
                tool_requests,
            } => Message {
                role: Role::Assistant,
                content: (!content.is_empty()).then(|| content.clone()),
                tool_calls: tool_requests
                    .iter()
                    .map(|request| ToolCall {
                        id: request.tool_call_id.clone(),
                        name: request.name.clone(),
                        arguments: arguments_text(&request.arguments),
                    })
                    .collect(),
                tool_call_id: None,
            },
            ConversationItem::ToolResult {
                tool_call_id,
                content,
                ..
            } => Message::tool_result(tool_call_id.clone(), content.clone()),
        })
        .collect()
}

/// Arguments as the model wrote them: a string is the raw text the loop
/// logged because it was not JSON; anything else is the parsed object.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        Value::Null => "{}".to_owned(),
        other => other.to_string(),
    }
}
