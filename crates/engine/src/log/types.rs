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
