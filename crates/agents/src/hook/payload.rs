//! What an agent's hook command reads on stdin, normalized.
//!
//! Two shapes exist (see docs/hooks.md):
//! - **Claude's**: `{session_id, cwd, hook_event_name, tool_name,
//!   tool_input, tool_use_id, mcp_server?, prompt?, …}`, sent by Claude Code
//!   and by the Copilot CLI for hooks configured under Claude's PascalCase
//!   event names;
//! - **the Copilot CLI's own**: `{sessionId, timestamp, cwd, toolName,
//!   toolArgs, prompt?, …}` for its camelCase events, `toolArgs` an object
//!   or a JSON string.
//!
//! The answer goes back in the shape the payload came in.

use std::path::PathBuf;

use serde_json::{Map, Value};

/// The hook events copilot-bridge answers, by our name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    SessionStart,
    SessionEnd,
    UserPromptSubmit,
    PreToolUse,
    /// Codex asking its user to let a call beyond its sandbox run.
    PermissionRequest,
    PostToolUse,
    Error,
}

impl HookEvent {
    /// Our name, or either agent's name for it.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "session-start" | "SessionStart" | "sessionStart" => Self::SessionStart,
            "session-end" | "SessionEnd" | "sessionEnd" => Self::SessionEnd,
            "user-prompt-submit" | "UserPromptSubmit" | "userPromptSubmitted" => {
                Self::UserPromptSubmit
            }
            "pre-tool-use" | "PreToolUse" | "preToolUse" => Self::PreToolUse,
            "permission-request" | "PermissionRequest" => Self::PermissionRequest,
            "post-tool-use" | "PostToolUse" | "postToolUse" | "postToolUseFailure" => {
                Self::PostToolUse
            }
            "error" | "errorOccurred" | "StopFailure" => Self::Error,
            _ => return None,
        })
    }

    /// Our name, for audit entries and messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::SessionStart => "session-start",
            Self::SessionEnd => "session-end",
            Self::UserPromptSubmit => "user-prompt-submit",
            Self::PreToolUse => "pre-tool-use",
            Self::PermissionRequest => "permission-request",
            Self::PostToolUse => "post-tool-use",
            Self::Error => "error",
        }
    }

    /// Claude's name, which its answers carry in `hookEventName`.
    pub fn claude_name(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::SessionEnd => "SessionEnd",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::PreToolUse => "PreToolUse",
            Self::PermissionRequest => "PermissionRequest",
            Self::PostToolUse => "PostToolUse",
            Self::Error => "StopFailure",
        }
    }
}

/// The shape of a payload, which is also the shape of its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Claude Code's (snake_case, `hookSpecificOutput` answers).
    Claude,
    /// The Copilot CLI's camelCase events (flat `permissionDecision`).
    Copilot,
}

/// One tool call an agent is about to make (or has made).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentToolCall {
    /// As the agent names it (`Bash`, `bash`, `mcp__srv__tool`, `srv-tool`).
    pub name: String,
    pub input: Value,
    /// The MCP server whose tool it is, when the agent says so.
    pub mcp_server: Option<String>,
}

/// A hook payload, normalized.
#[derive(Debug, Clone, PartialEq)]
pub struct HookInput {
    pub dialect: Dialect,
    /// The event the payload names, when it names one we know.
    pub event: Option<HookEvent>,
    /// The event the payload names when it is none we know.
    pub unknown_event: Option<String>,
    /// The agent's own session id.
    pub session_id: Option<String>,
    pub cwd: Option<PathBuf>,
    pub tool: Option<AgentToolCall>,
    /// What the tool gave back (post-tool-use: `tool_response`, `toolResult`).
    pub tool_output: Option<Value>,
    /// The user's prompt (user-prompt-submit).
    pub prompt: Option<String>,
    /// What went wrong (error).
    pub error: Option<String>,
}

/// Why a payload cannot be read; the hook denies with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    #[error("the hook input is not JSON: {0}")]
    NotJson(String),
    #[error("the hook input is not a JSON object")]
    NotAnObject,
    #[error("the hook input has no tool name (tool_name or toolName)")]
    NoToolName,
    #[error("the hook input's {field} is not {expected}")]
    WrongType {
        field: &'static str,
        expected: &'static str,
    },
    #[error("the tool's arguments cannot be read (not a JSON object): {0}")]
    UnreadableArguments(String),
}

/// Reads a payload. `dialect` is the shape to assume when the payload's
/// own fields do not tell (`--agent`).
pub fn parse(text: &str, fallback: Dialect) -> Result<HookInput, PayloadError> {
    let value: Value =
        serde_json::from_str(text).map_err(|err| PayloadError::NotJson(err.to_string()))?;
    let Value::Object(object) = value else {
        return Err(PayloadError::NotAnObject);
    };
    let dialect = if object.contains_key("hook_event_name")
        || object.contains_key("session_id")
        || object.contains_key("tool_name")
    {
        Dialect::Claude
    } else if object.contains_key("sessionId") || object.contains_key("toolName") {
        Dialect::Copilot
    } else {
        fallback
    };
    let (event_key, session_key, tool_key, input_key) = match dialect {
        Dialect::Claude => ("hook_event_name", "session_id", "tool_name", "tool_input"),
        Dialect::Copilot => ("hookEventName", "sessionId", "toolName", "toolArgs"),
    };
    let named_event = string(&object, event_key)?.filter(|name| !name.is_empty());
    let event = named_event.and_then(HookEvent::parse);
    let unknown_event = named_event.filter(|_| event.is_none()).map(str::to_owned);
    let session_id = string(&object, session_key)?.map(str::to_owned);
    let cwd = match string(&object, "cwd")? {
        Some(cwd) => Some(cwd),
        None => string(&object, "workingDirectory")?,
    }
    .map(PathBuf::from);
    let tool = match string(&object, tool_key)? {
        None if object.contains_key(input_key) => return Err(PayloadError::NoToolName),
        None => None,
        Some(name) => Some(AgentToolCall {
            name: name.to_owned(),
            input: tool_input(object.get(input_key))?,
            mcp_server: object
                .get("mcp_server")
                .and_then(|server| server.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned),
        }),
    };
    let tool_output = ["tool_response", "toolResult"]
        .iter()
        .find_map(|key| object.get(*key))
        .filter(|output| !output.is_null())
        .cloned();
    let prompt = string(&object, "prompt")?.map(str::to_owned);
    let error = match object.get("error") {
        Some(Value::String(text)) => Some(text.clone()),
        Some(error) => error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned),
        None => None,
    }
    .or_else(|| {
        object
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    Ok(HookInput {
        dialect,
        event,
        unknown_event,
        session_id,
        cwd,
        tool,
        tool_output,
        prompt,
        error,
    })
}

fn string<'a>(
    object: &'a Map<String, Value>,
    field: &'static str,
) -> Result<Option<&'a str>, PayloadError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(PayloadError::WrongType {
            field,
            expected: "a string",
        }),
    }
}

/// The tool's arguments: an object as is; a JSON string (the Copilot CLI
/// may send `toolArgs` encoded) decoded. Anything else cannot be checked,
/// so the call is refused rather than decided on what could be read.
fn tool_input(input: Option<&Value>) -> Result<Value, PayloadError> {
    match input {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(object @ Value::Object(_)) => Ok(object.clone()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(decoded @ Value::Object(_)) => Ok(decoded),
            _ => Err(PayloadError::UnreadableArguments(
                bridge_policy::redact::shorten(text, 80),
            )),
        },
        Some(other) => Err(PayloadError::UnreadableArguments(
            bridge_policy::redact::shorten(&other.to_string(), 80),
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn claude_payloads_are_read_as_claude_sends_them() {
        let text = r#"{"session_id":"2f45","transcript_path":"/t.jsonl","cwd":"/w","prompt_id":"p",
            "permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash",
            "tool_input":{"command":"ls","description":"list"},"tool_use_id":"call_1"}"#;
        let input = parse(text, Dialect::Copilot).unwrap();
        assert_eq!(input.dialect, Dialect::Claude);
        assert_eq!(input.event, Some(HookEvent::PreToolUse));
        assert_eq!(input.session_id.as_deref(), Some("2f45"));
        assert_eq!(input.cwd, Some(PathBuf::from("/w")));
        let tool = input.tool.unwrap();
        assert_eq!(tool.name, "Bash");
        assert_eq!(tool.input, json!({"command": "ls", "description": "list"}));
    }

    #[test]
    fn copilot_payloads_decode_string_arguments() {
        let text = r#"{"sessionId":"9","timestamp":1,"cwd":"/w","toolName":"bash",
            "toolArgs":"{\"command\":\"rm -rf /\"}"}"#;
        let input = parse(text, Dialect::Claude).unwrap();
        assert_eq!(input.dialect, Dialect::Copilot);
        assert_eq!(input.event, None);
        let tool = input.tool.unwrap();
        assert_eq!(tool.input, json!({"command": "rm -rf /"}));
        // Arguments that cannot be read refuse the call.
        let text = r#"{"sessionId":"9","toolName":"bash","toolArgs":"not json"}"#;
        assert!(matches!(
            parse(text, Dialect::Claude),
            Err(PayloadError::UnreadableArguments(_))
        ));
    }

    #[test]
    fn malformed_payloads_are_errors_not_empty_calls() {
        assert!(matches!(
            parse("{", Dialect::Claude),
            Err(PayloadError::NotJson(_))
        ));
        assert_eq!(
            parse("[1]", Dialect::Claude),
            Err(PayloadError::NotAnObject)
        );
        assert_eq!(
            parse(r#"{"tool_input":{"command":"ls"}}"#, Dialect::Claude),
            Err(PayloadError::NoToolName)
        );
        assert_eq!(
            parse(r#"{"tool_name":7}"#, Dialect::Claude),
            Err(PayloadError::WrongType {
                field: "tool_name",
                expected: "a string"
            })
        );
    }

    #[test]
    fn event_names_of_both_agents_are_aliases_of_ours() {
        for (name, event) in [
            ("pre-tool-use", HookEvent::PreToolUse),
            ("PreToolUse", HookEvent::PreToolUse),
            ("preToolUse", HookEvent::PreToolUse),
            ("userPromptSubmitted", HookEvent::UserPromptSubmit),
            ("SessionEnd", HookEvent::SessionEnd),
            ("postToolUseFailure", HookEvent::PostToolUse),
            ("errorOccurred", HookEvent::Error),
        ] {
            assert_eq!(HookEvent::parse(name), Some(event), "{name}");
        }
        assert_eq!(HookEvent::parse("pre_tool_use"), None);
    }
}
