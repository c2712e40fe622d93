//! The three tools' definitions and their argument checks. A wrong
//! argument is an MCP invalid-params error (the client sent something the
//! schema forbids); a refused or missing file is an error *result* the
//! model can read and act on.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::depth;
use bridge_config::openclaw::{MAX_AGENT_ID_CHARS, valid_agent_id};

pub const SEARCH: &str = "openclaw_memory_search";
pub const READ: &str = "openclaw_memory_read";
pub const USER_PREFS: &str = "openclaw_user_prefs";

pub const DEFAULT_LIMIT: u64 = 5;
pub const MAX_LIMIT: u64 = 50;
/// Longer queries are refused (a query is a few keywords, not a document).
pub const MAX_QUERY_CHARS: usize = 1000;
/// Longer file names are refused.
pub const MAX_FILE_CHARS: usize = 1024;
pub const DEFAULT_FILE: &str = "MEMORY.md";
pub const AGENT_ID: &str = "agentId";

/// What `openclaw_memory_search` does (also the description of the
/// daemon's session tool of the same name).
pub const SEARCH_DESCRIPTION: &str = "Keyword search over OpenClaw's memory notes (MEMORY.md, USER.md, DREAMS.md and the daily notes in memory/) of an agent's workspace. Returns the best matching notes, best first, each with its path relative to the workspace, the 1-based startLine and endLine of the snippet, the snippet and a score in (0, 1).";

/// What `openclaw_memory_read` does.
pub const READ_DESCRIPTION: &str = "Read one of OpenClaw's memory notes whole (default MEMORY.md). Name it as openclaw_memory_search reports its path, relative to the workspace, e.g. memory/2026-01-31.md.";
/// What `openclaw_user_prefs` does.
pub const USER_PREFS_DESCRIPTION: &str =
    "Read the user's preferences as OpenClaw recorded them (USER.md).";

/// `agentId`: every tool takes it.
fn agent_property() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": MAX_AGENT_ID_CHARS, "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]*$", "description": "The OpenClaw agent whose memory to use (default: OpenClaw's default agent, usually `main`)."})
}

fn search_properties() -> Value {
    json!({
        "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "description": "Keywords to look for (case-insensitive)."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT, "description": "How many notes to return."},
        AGENT_ID: agent_property()
    })
}

fn read_properties() -> Value {
    json!({
        "file": {"type": "string", "maxLength": MAX_FILE_CHARS, "default": DEFAULT_FILE, "description": "The note, relative to the workspace (only .md files)."},
        AGENT_ID: agent_property()
    })
}

fn user_prefs_properties() -> Value {
    json!({AGENT_ID: agent_property()})
}

/// The input schemas of the three tools without the MCP servers' `_depth`
/// (for the session tools of the same names, crate::openclaw).
pub fn search_schema() -> Value {
    session_schema(search_properties(), &["query"])
}

pub fn read_schema() -> Value {
    session_schema(read_properties(), &[])
}

pub fn user_prefs_schema() -> Value {
    session_schema(user_prefs_properties(), &[])
}

fn session_schema(properties: Value, required: &[&str]) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false
    });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// The tools, in the order `tools/list` gives them.
pub fn definitions() -> Vec<Tool> {
    vec![
        tool(SEARCH, SEARCH_DESCRIPTION, search_properties(), &["query"]),
        tool(READ, READ_DESCRIPTION, read_properties(), &[]),
        tool(
            USER_PREFS,
            USER_PREFS_DESCRIPTION,
            user_prefs_properties(),
            &[],
        ),
    ]
}

fn tool(
    name: &'static str,
    description: &'static str,
    properties: Value,
    required: &[&str],
) -> Tool {
    let schema = depth::tool_schema(properties, required);
    Tool::new(name, description, Arc::new(schema)).with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
}

/// A tool call, its arguments checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// `agentId`, validated and lowercased (`None`: the default agent).
    pub agent: Option<String>,
    pub request: Request,
}

/// What a call asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Search { query: String, limit: usize },
    Read { file: String },
    UserPrefs,
}

/// What stops a call before it runs.
#[derive(Debug)]
pub enum Rejected {
    /// Answered as an MCP error.
    Error(ErrorData),
    /// Answered as an error result (too deep).
    TooDeep(u64),
}

/// Checks `_depth` first, then the tool's own arguments.
pub fn parse(name: &str, arguments: Option<JsonObject>) -> Result<Call, Rejected> {
    let known = [SEARCH, READ, USER_PREFS];
    if !known.contains(&name) {
        return Err(Rejected::Error(ErrorData::invalid_params(
            format!(
                "unknown tool {name:?}; this server has {}",
                known.join(", ")
            ),
            Some(json!({"tool": name})),
        )));
    }
    let mut args = arguments.unwrap_or_default();
    match depth::take_depth(&mut args) {
        Ok(_) => {}
        Err(depth::DepthError::TooDeep(depth)) => return Err(Rejected::TooDeep(depth)),
        Err(depth::DepthError::Invalid(message)) => {
            return Err(invalid(name, depth::DEPTH_ARG, message));
        }
    }
    let agent = string_arg(name, &mut args, AGENT_ID, MAX_AGENT_ID_CHARS)?
        .map(|id| {
            valid_agent_id(&id)
                .map_err(|why| invalid(name, AGENT_ID, format!("`{AGENT_ID}`: {why}")))
        })
        .transpose()?;
    let request = match name {
        SEARCH => {
            let query = string_arg(name, &mut args, "query", MAX_QUERY_CHARS)?
                .ok_or_else(|| invalid(name, "query", "`query` is required".to_owned()))?;
            if super::search::query_terms(&query).is_empty() {
                return Err(invalid(
                    name,
                    "query",
                    "`query` holds no words to search for".to_owned(),
                ));
            }
            let limit = match args.remove("limit") {
                None | Some(Value::Null) => DEFAULT_LIMIT,
                Some(Value::Number(n)) => match n.as_u64() {
                    Some(limit) if (1..=MAX_LIMIT).contains(&limit) => limit,
                    _ => {
                        return Err(invalid(
                            name,
                            "limit",
                            format!("`limit` must be an integer from 1 to {MAX_LIMIT}, not {n}"),
                        ));
                    }
                },
                Some(other) => {
                    return Err(invalid(
                        name,
                        "limit",
                        format!(
                            "`limit` must be an integer from 1 to {MAX_LIMIT}, not {}",
                            depth::json_kind(&other)
                        ),
                    ));
                }
            };
            Request::Search {
                query,
                limit: usize::try_from(limit).unwrap_or(usize::MAX),
            }
        }
        READ => Request::Read {
            file: string_arg(name, &mut args, "file", MAX_FILE_CHARS)?
                .unwrap_or_else(|| DEFAULT_FILE.to_owned()),
        },
        _ => Request::UserPrefs,
    };
    if let Some(extra) = args.keys().next() {
        return Err(invalid(
            name,
            extra,
            format!("unknown argument `{extra}` for {name}"),
        ));
    }
    Ok(Call { agent, request })
}

fn string_arg(
    tool: &str,
    args: &mut JsonObject,
    key: &str,
    max_chars: usize,
) -> Result<Option<String>, Rejected> {
    match args.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.chars().count() > max_chars => Err(invalid(
            tool,
            key,
            format!(
                "`{key}` is too long ({} characters; at most {max_chars})",
                text.chars().count()
            ),
        )),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(invalid(
            tool,
            key,
            format!("`{key}` must be a string, not {}", depth::json_kind(&other)),
        )),
    }
}

fn invalid(tool: &str, argument: &str, message: String) -> Rejected {
    Rejected::Error(ErrorData::invalid_params(
        message,
        Some(json!({"tool": tool, "argument": argument})),
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(value: Value) -> Option<JsonObject> {
        value.as_object().cloned()
    }

    fn error_message(result: Result<Call, Rejected>) -> String {
        match result {
            Err(Rejected::Error(err)) => err.message.to_string(),
            other => panic!("expected an MCP error, got {other:?}"),
        }
    }

    #[test]
    fn defaults() {
        assert_eq!(
            parse(SEARCH, args(json!({"query": "deploy"}))).unwrap(),
            Call {
                agent: None,
                request: Request::Search {
                    query: "deploy".to_owned(),
                    limit: 5
                }
            }
        );
        assert_eq!(
            parse(READ, None).unwrap().request,
            Request::Read {
                file: "MEMORY.md".to_owned()
            }
        );
        assert_eq!(
            parse(USER_PREFS, args(json!({"_depth": 2})))
                .unwrap()
                .request,
            Request::UserPrefs
        );
        assert_eq!(
            parse(USER_PREFS, args(json!({"agentId": "Work"})))
                .unwrap()
                .agent
                .as_deref(),
            Some("work")
        );
    }

    #[test]
    fn hostile_agent_ids_are_invalid_params() {
        for (id, why) in [
            (json!("../x"), "not an OpenClaw agent id"),
            (json!("a/b"), "not an OpenClaw agent id"),
            (json!(""), "cannot be empty"),
            (json!("x".repeat(65)), "too long"),
            (json!(7), "must be a string"),
        ] {
            let message = error_message(parse(SEARCH, args(json!({"query": "q", "agentId": id}))));
            assert!(message.contains(why), "{message}");
        }
    }

    #[test]
    fn bad_arguments_are_invalid_params() {
        assert!(
            error_message(parse(SEARCH, args(json!({"query": 3}))))
                .contains("must be a string, not a number")
        );
        assert!(error_message(parse(SEARCH, args(json!({})))).contains("`query` is required"));
        assert!(
            error_message(parse(SEARCH, args(json!({"query": "x", "limit": 0}))))
                .contains("from 1 to 50")
        );
        assert!(
            error_message(parse(SEARCH, args(json!({"query": "x", "limit": "5"}))))
                .contains("not a string")
        );
        assert!(
            error_message(parse(SEARCH, args(json!({"query": "a".repeat(1001)}))))
                .contains("too long")
        );
        assert!(error_message(parse(SEARCH, args(json!({"query": "!!"})))).contains("no words"));
        assert!(
            error_message(parse(READ, args(json!({"path": "x"}))))
                .contains("unknown argument `path`")
        );
        assert!(error_message(parse(USER_PREFS, args(json!({"_depth": "1"})))).contains("_depth"));
        assert!(error_message(parse("nope", None)).contains("unknown tool"));
    }

    #[test]
    fn depth_three_is_too_deep() {
        assert!(matches!(
            parse(READ, args(json!({"_depth": 3}))),
            Err(Rejected::TooDeep(3))
        ));
    }
}
