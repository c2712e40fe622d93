//! Event type names (copilot-cli-analysis.md, "Event Types").

pub const SESSION_START: &str = "session.start";
pub const SESSION_RESUME: &str = "session.resume";
pub const SESSION_ERROR: &str = "session.error";
pub const SESSION_INFO: &str = "session.info";
pub const SESSION_MODEL_CHANGE: &str = "session.model_change";
pub const USER_MESSAGE: &str = "user.message";
pub const ASSISTANT_MESSAGE: &str = "assistant.message";
pub const ASSISTANT_TURN_START: &str = "assistant.turn_start";
pub const ASSISTANT_TURN_END: &str = "assistant.turn_end";
/// Ephemeral: streamed text as it arrives.
pub const ASSISTANT_MESSAGE_DELTA: &str = "assistant.message_delta";
pub const TOOL_EXECUTION_START: &str = "tool.execution_start";
pub const TOOL_EXECUTION_PARTIAL_RESULT: &str = "tool.execution_partial_result";
pub const TOOL_EXECUTION_COMPLETE: &str = "tool.execution_complete";
pub const HOOK_START: &str = "hook.start";
pub const HOOK_END: &str = "hook.end";
pub const SESSION_USAGE: &str = "session.usage";
/// Durable: a run is over and the session waits for the next prompt.
pub const SESSION_IDLE: &str = "session.idle";

// The `data` of the events that replay rebuilds a conversation from. Build
// them with these functions so the writer (a runner) and the reader
// ([`super::Replayed`], `copilot-bridge sessions show`) agree.
//
// | type | data |
// |---|---|
// | `session.start` | the creator's metadata object, plus `sessionId` and `formatVersion` |
// | `session.resume` | `{resumedAfterSeq, skippedLines, tornTail}` |
// | `user.message` | `{content}` |
// | `assistant.message` | `{content, toolRequests: [{toolCallId, name, arguments}]}` |
// | `tool.execution_start` | `{toolCallId, toolName, arguments}` |
// | `tool.execution_complete` | `{toolCallId, toolName, success, result: {content}}` or `{…, success: false, error: {message}}` |
// | `session.error` | `{errorType, message}` |
// | `session.usage` | `{model?, promptTokens, completionTokens}` (one model request) |
// | `assistant.turn_start` / `assistant.turn_end` | `{turn}` |

use serde_json::{Value, json};

use super::ToolRequest;

/// `user.message` data.
pub fn user_message(content: &str) -> Value {
    json!({ "content": content })
}

/// `assistant.message` data: the text and the tool calls of one model reply.
pub fn assistant_message(content: &str, tool_requests: &[ToolRequest]) -> Value {
    json!({ "content": content, "toolRequests": tool_requests })
}

/// `tool.execution_start` data.
pub fn tool_start(tool_call_id: &str, tool_name: &str, arguments: &Value) -> Value {
    json!({ "toolCallId": tool_call_id, "toolName": tool_name, "arguments": arguments })
}

/// `tool.execution_complete` data. `content` is what the model is shown:
/// the result on success, the error message on failure.
pub fn tool_complete(tool_call_id: &str, tool_name: &str, success: bool, content: &str) -> Value {
    if success {
        json!({ "toolCallId": tool_call_id, "toolName": tool_name, "success": true,
                "result": { "content": content } })
    } else {
        json!({ "toolCallId": tool_call_id, "toolName": tool_name, "success": false,
                "error": { "message": content } })
    }
}

/// `session.error` data.
pub fn session_error(error_type: &str, message: &str) -> Value {
    json!({ "errorType": error_type, "message": message })
}

/// `session.usage` data for one model request.
pub fn usage(model: Option<&str>, prompt_tokens: u64, completion_tokens: u64) -> Value {
    json!({ "model": model, "promptTokens": prompt_tokens, "completionTokens": completion_tokens })
}
